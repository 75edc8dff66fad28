package hotaisle

import (
	"context"
	"strings"

	"github.com/gpufleet/gpufleet/fleet"
)

// labelledKey replaces the comment of an authorized_keys line with the
// request's label, so that the Manager can find the keys its owner
// registered and remove them once no fleet needs them.
func labelledKey(line string, l fleet.Label) string {
	f := strings.Fields(line)
	if len(f) < 2 || l.Fleet == "" {
		return line
	}
	return f[0] + " " + f[1] + " " + l.String()
}

// ListSSHKeys lists the user's keys (GET /user/ssh_keys/), with the label
// read from each key's comment. Errors: those of Client.ListSSHKeys.
func (p *Provider) ListSSHKeys(ctx context.Context) ([]fleet.SSHKey, error) {
	keys, err := p.c.ListSSHKeys(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]fleet.SSHKey, 0, len(keys))
	for _, k := range keys {
		sk := fleet.SSHKey{ID: k.Fingerprint, Provider: fleet.ProviderHotAisle, PublicKey: k.PublicKey}
		if l, ok := fleet.ParseLabel(k.Comment); ok {
			sk.Fleet, sk.Owner, sk.RequestID = l.Fleet, l.Owner, l.RequestID
		}
		out = append(out, sk)
	}
	return out, nil
}

// DeleteSSHKey removes a key by fingerprint (DELETE
// /user/ssh_keys/{fingerprint}/); fleet.ErrNotFound when already gone.
func (p *Provider) DeleteSSHKey(ctx context.Context, id string) error {
	return p.c.DeleteSSHKey(ctx, id)
}
