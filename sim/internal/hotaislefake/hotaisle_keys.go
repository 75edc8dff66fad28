package hotaislefake

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"golang.org/x/crypto/ssh"
)

// haSSHKey is the spec's SSHKey.
type haSSHKey struct {
	Type        string `json:"type"`
	PublicKey   string `json:"public_key"`
	Fingerprint string `json:"fingerprint"`
	Comment     string `json:"comment,omitempty"`
}

func (k *haKey) json() haSSHKey {
	return haSSHKey{Type: k.typ, PublicKey: k.b64, Fingerprint: k.fp, Comment: k.comment}
}

// listKeys answers GET /api/user/ssh_keys/: the user's keys, oldest first.
func (h *HotAisle) listKeys(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	out := []haSSHKey{}
	for _, k := range h.st.keys {
		if k.deleted.IsZero() {
			out = append(out, k.json())
		}
	}
	h.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, out)
}

// addKey answers POST /api/user/ssh_keys/ {"authorized_key": "<type>
// <base64> <comment>"}: 200 with the SSHKey; 409 "Conflict - key already
// registered" when the same key (same fingerprint) is there; 422 when the
// key does not parse; 400 when authorized_key is missing; 403 without the
// owner role.
func (h *HotAisle) addKey(w http.ResponseWriter, r *http.Request) {
	if h.readOnly() {
		haWriteError(w, http.StatusForbidden, "")
		return
	}
	var req struct {
		AuthorizedKey string `json:"authorized_key"`
	}
	if !haDecode(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.AuthorizedKey) == "" {
		haWriteError(w, http.StatusBadRequest, "")
		return
	}
	pub, comment, _, rest, err := ssh.ParseAuthorizedKey([]byte(req.AuthorizedKey))
	if err != nil || strings.TrimSpace(string(rest)) != "" {
		haWriteError(w, http.StatusUnprocessableEntity, "Unprocessable Entity: invalid SSH key format")
		return
	}
	k := &haKey{typ: pub.Type(), b64: base64.StdEncoding.EncodeToString(pub.Marshal()),
		fp: ssh.FingerprintSHA256(pub), comment: comment, pub: pub, created: h.clock.Now()}
	h.mu.Lock()
	for _, old := range h.st.keys {
		if old.deleted.IsZero() && old.fp == k.fp {
			h.mu.Unlock()
			haWriteError(w, http.StatusConflict, "Conflict - key already registered")
			return
		}
	}
	h.st.keys = append(h.st.keys, k)
	h.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, k.json())
}

// deleteKey answers DELETE /api/user/ssh_keys/{fingerprint}/, the
// fingerprint without its "SHA256:" prefix (its "/" may arrive as "%2F"):
// 204, or 404 "SSH key not found".
func (h *HotAisle) deleteKey(w http.ResponseWriter, r *http.Request) {
	if h.readOnly() {
		haWriteError(w, http.StatusForbidden, "")
		return
	}
	fp := "SHA256:" + r.PathValue("fingerprint")
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range h.st.keys {
		if k.deleted.IsZero() && k.fp == fp {
			k.deleted = now
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	haWriteError(w, http.StatusNotFound, "SSH key not found")
}

// authorizedKeys returns the user's currently registered keys: servers fetch
// them live at every login (api/hotaisle.md §2.5), so a key added after
// provisioning works and a deleted one stops working.
func (h *HotAisle) authorizedKeys() []ssh.PublicKey {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []ssh.PublicKey
	for _, k := range h.st.keys {
		if k.deleted.IsZero() {
			out = append(out, k.pub)
		}
	}
	return out
}
