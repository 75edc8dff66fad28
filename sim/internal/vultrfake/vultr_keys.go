package vultrfake

import (
	"net/http"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"golang.org/x/crypto/ssh"
)

// vultrMsgNoKey is the not-found message of SSH keys (TF matches "Invalid
// ssh key").
const vultrMsgNoKey = "Invalid ssh key."

// vultrKeyReq is the body of POST and PATCH /v2/ssh-keys.
type vultrKeyReq struct {
	Name   *string `json:"name"`
	SSHKey *string `json:"ssh_key"`
}

// vultrParseKey parses one authorized_keys line.
func vultrParseKey(line string) (ssh.PublicKey, error) {
	pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(strings.TrimSpace(line)))
	return pk, err
}

// createKey serves POST /v2/ssh-keys {"name","ssh_key"}: 201 {"ssh_key":…};
// 400 when a field is missing or the key does not parse.
func (v *Vultr) createKey(w http.ResponseWriter, r *http.Request) {
	var req vultrKeyReq
	if st, msg := core.DecodeJSON(r, &req); st != 0 {
		writeVultrError(w, st, msg)
		return
	}
	if req.Name == nil || *req.Name == "" || req.SSHKey == nil {
		writeVultrError(w, http.StatusBadRequest, "Bad request: name and ssh_key are required.")
		return
	}
	if _, err := vultrParseKey(*req.SSHKey); err != nil {
		writeVultrError(w, http.StatusBadRequest, "Invalid SSH key.")
		return
	}
	v.mu.Lock()
	defer v.unlock()
	k := &vultrKey{seq: v.st.next(), id: v.newUUID(), name: *req.Name,
		key: strings.TrimSpace(*req.SSHKey), created: v.clock.Now()}
	v.st.keys[k.id] = k
	v.st.keyList = append(v.st.keyList, k)
	core.WriteJSON(w, http.StatusCreated, map[string]any{"ssh_key": vultrKeyView(k)})
}

// lookupKey finds the live key {id} or answers 404. Callers hold v.mu.
func (v *Vultr) lookupKey(w http.ResponseWriter, r *http.Request) *vultrKey {
	k := v.st.keys[r.PathValue("id")]
	if k == nil || !k.deleted.IsZero() {
		writeVultrError(w, http.StatusNotFound, vultrMsgNoKey)
		return nil
	}
	return k
}

// listKeys serves GET /v2/ssh-keys, oldest first, paginated.
func (v *Vultr) listKeys(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	list := v.st.keyList
	page, ok := vultrPage(w, r, "ssh_keys", len(list), func(i int) uint64 { return list[i].seq },
		func(i int) vultrKeyJSON { return vultrKeyView(list[i]) })
	v.unlock()
	if ok {
		core.WriteJSON(w, http.StatusOK, page)
	}
}

// getKey serves GET /v2/ssh-keys/{id}.
func (v *Vultr) getKey(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	defer v.unlock()
	if k := v.lookupKey(w, r); k != nil {
		core.WriteJSON(w, http.StatusOK, map[string]any{"ssh_key": vultrKeyView(k)})
	}
}

// updateKey serves PATCH /v2/ssh-keys/{id} (name and ssh_key optional):
// 204. Servers already deployed keep the keys they got.
func (v *Vultr) updateKey(w http.ResponseWriter, r *http.Request) {
	var req vultrKeyReq
	if st, msg := core.DecodeJSON(r, &req); st != 0 {
		writeVultrError(w, st, msg)
		return
	}
	if req.SSHKey != nil {
		if _, err := vultrParseKey(*req.SSHKey); err != nil {
			writeVultrError(w, http.StatusBadRequest, "Invalid SSH key.")
			return
		}
	}
	v.mu.Lock()
	defer v.unlock()
	k := v.lookupKey(w, r)
	if k == nil {
		return
	}
	if req.Name != nil && *req.Name != "" {
		k.name = *req.Name
	}
	if req.SSHKey != nil {
		k.key = strings.TrimSpace(*req.SSHKey)
	}
	w.WriteHeader(http.StatusNoContent)
}

// deleteKey serves DELETE /v2/ssh-keys/{id}: 204.
func (v *Vultr) deleteKey(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	defer v.unlock()
	if k := v.lookupKey(w, r); k != nil {
		k.deleted = v.clock.Now()
		v.st.keyList = slices.DeleteFunc(v.st.keyList, func(x *vultrKey) bool { return x == k })
		w.WriteHeader(http.StatusNoContent)
	}
}
