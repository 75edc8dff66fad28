package vultr

import (
	"context"
	"iter"
)

// SSHKey is an account SSH key of /v2/ssh-keys. Keys are applied only when a
// server is deployed (InstanceCreate.SSHKeyIDs).
type SSHKey struct {
	ID          string `json:"id"`
	DateCreated Time   `json:"date_created"`
	Name        string `json:"name"`
	SSHKey      string `json:"ssh_key"` // public key, authorized_keys format
}

type sshKeysPage struct {
	SSHKeys *[]SSHKey `json:"ssh_keys"`
	Meta    *Meta     `json:"meta"`
}

func (p *sshKeysPage) items() ([]SSHKey, error) {
	return pageItems(p.SSHKeys, "ssh_keys", func(v *SSHKey) string { return v.ID })
}

func (p *sshKeysPage) meta() *Meta { return p.Meta }

// CreateSSHKey stores a public key (POST /v2/ssh-keys → 201), never retried.
func (c *Client) CreateSSHKey(ctx context.Context, name, publicKey string) (*SSHKey, error) {
	if name == "" || publicKey == "" {
		return nil, invalid("SSH key needs a name and a public key")
	}
	body := map[string]string{"name": name, "ssh_key": publicKey}
	return one[SSHKey](ctx, c, "POST", "/v2/ssh-keys", body, "ssh_key", true)
}

// GetSSHKey reads one key; an unknown id is fleet.ErrNotFound.
func (c *Client) GetSSHKey(ctx context.Context, id string) (*SSHKey, error) {
	if err := requireID("SSH key", id); err != nil {
		return nil, err
	}
	return one[SSHKey](ctx, c, "GET", "/v2/ssh-keys/"+pathEscape(id), nil, "ssh_key", true)
}

// ListSSHKeys iterates over GET /v2/ssh-keys, all pages.
func (c *Client) ListSSHKeys(ctx context.Context) iter.Seq2[SSHKey, error] {
	return list[SSHKey, *sshKeysPage](ctx, c, "/v2/ssh-keys", nil)
}

// UpdateSSHKey renames a key and/or replaces it (PATCH → 204); empty
// arguments are not sent. Never retried.
func (c *Client) UpdateSSHKey(ctx context.Context, id, name, publicKey string) error {
	if err := requireID("SSH key", id); err != nil {
		return err
	}
	body := map[string]string{}
	setIfMap(body, "name", name)
	setIfMap(body, "ssh_key", publicKey)
	return c.do(ctx, "PATCH", "/v2/ssh-keys/"+pathEscape(id), nil, body, nil)
}

// DeleteSSHKey deletes a key (DELETE → 204), retried on 429 and transient
// failures; fleet.ErrNotFound means already gone.
func (c *Client) DeleteSSHKey(ctx context.Context, id string) error {
	if err := requireID("SSH key", id); err != nil {
		return err
	}
	return c.do(ctx, "DELETE", "/v2/ssh-keys/"+pathEscape(id), nil, nil, nil)
}

func setIfMap(m map[string]string, k, v string) {
	if v != "" {
		m[k] = v
	}
}
