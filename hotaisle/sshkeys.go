package hotaisle

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"strings"

	"golang.org/x/crypto/ssh"
)

// SSHKey is a public key of the user (swagger SSHKey). Servers fetch the keys
// of the team's members live at login (user "hotaisle"), so a key added after
// provisioning works without re-provisioning.
type SSHKey struct {
	// Type is the key type, e.g. "ssh-ed25519".
	Type string `json:"type"`
	// PublicKey is the base64 part of the authorized key only.
	PublicKey string `json:"public_key"`
	// Fingerprint is "SHA256:<base64, no padding>", the id used by DeleteSSHKey.
	Fingerprint string `json:"fingerprint"`
	// Comment is the authorized key's comment, e.g. "ci@build".
	Comment string `json:"comment,omitempty"`
}

// AddSSHKey registers a public key given in authorized_keys format ("<type>
// <base64> <comment>"): POST /user/ssh_keys/ (200). A 409 ("Conflict - key
// already registered") means the key is already there: it is returned as
// success with existed true and the key as parsed locally (type, base64,
// comment, SHA256 fingerprint). Never retried. A key that does not parse is
// refused before any call (fleet.ErrInvalidRequest). Other errors:
// fleet.ErrForbidden (403, needs user role owner), fleet.ErrInvalidRequest
// (422 invalid format).
func (c *Client) AddSSHKey(ctx context.Context, authorizedKey string) (key *SSHKey, existed bool, err error) {
	local, err := parseAuthorizedKey(authorizedKey)
	if err != nil {
		return nil, false, err
	}
	body := struct {
		AuthorizedKey string `json:"authorized_key"`
	}{strings.TrimSpace(authorizedKey)}
	var out SSHKey
	err = c.object(ctx, http.MethodPost, "/user/ssh_keys/", nil, body, &out, "fingerprint",
		func() bool { return out.Fingerprint != "" })
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusConflict {
		return local, true, nil
	}
	if err != nil {
		return nil, false, err
	}
	return &out, false, nil
}

// ListSSHKeys returns the user's keys: GET /user/ssh_keys/.
func (c *Client) ListSSHKeys(ctx context.Context) ([]SSHKey, error) {
	return list(ctx, c, "/user/ssh_keys/", "fingerprint", func(k *SSHKey) string { return k.Fingerprint })
}

// DeleteSSHKey removes a key by fingerprint: DELETE
// /user/ssh_keys/{fingerprint}/ (204). A leading "SHA256:" is dropped (the
// path takes the bare base64) and the rest is escaped ("/" becomes "%2F").
// fleet.ErrNotFound when no such key. Retried on 429 and 5xx gateway errors.
func (c *Client) DeleteSSHKey(ctx context.Context, fingerprint string) error {
	seg, err := nameSeg("fingerprint", strings.TrimPrefix(strings.TrimSpace(fingerprint), "SHA256:"))
	if err != nil {
		return err
	}
	return c.do(ctx, http.MethodDelete, "/user/ssh_keys/"+seg+"/", nil, nil, nil)
}

// parseAuthorizedKey checks an authorized_keys line and describes it as the
// API would.
func parseAuthorizedKey(line string) (*SSHKey, error) {
	pk, comment, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		return nil, invalid("SSH key: not an authorized_keys line")
	}
	return &SSHKey{
		Type:        pk.Type(),
		PublicKey:   base64.StdEncoding.EncodeToString(pk.Marshal()),
		Fingerprint: ssh.FingerprintSHA256(pk),
		Comment:     comment,
	}, nil
}
