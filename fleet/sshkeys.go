package fleet

import (
	"context"
	"errors"
	"strings"
	"time"
)

// keyProvider returns p's SSH key capability, nil when it has none.
func keyProvider(p Provider) SSHKeyProvider {
	kp, _ := p.(SSHKeyProvider)
	return kp
}

// wantKeys reports whether provider name's SSH keys must be listed: once
// after start, then while this owner's keys are there or a fleet has keys. m.mu held.
func (m *Manager) wantKeys(name string) bool {
	if !m.scanned[name] || m.ownKeys[name] > 0 {
		return true
	}
	for _, f := range m.fleets {
		if len(f.Spec.SSHKeys) > 0 {
			return true
		}
	}
	return false
}

// observeKeys removes this owner's labelled SSH keys that no fleet of the
// owner needs any more (a fleet's record stays until all its members are
// confirmed gone, so no running member loses its key). Keys registered by
// hand, or by another owner, are never touched. m.mu held.
func (m *Manager) observeKeys(provider string, keys []SSHKey, now time.Time) {
	needed := map[string]bool{}
	for _, f := range m.fleets {
		for _, line := range f.Spec.SSHKeys {
			if fs := strings.Fields(line); len(fs) >= 2 {
				needed[fs[1]] = true
			}
		}
	}
	own := 0
	kp := keyProvider(m.providers[provider])
	for _, k := range keys {
		if k.RequestID == "" || k.Owner != m.owner {
			continue
		}
		own++
		if needed[k.PublicKey] || m.busy("sshkey/"+k.ID) || m.free(taskCall) <= 0 {
			continue
		}
		id, fleet := k.ID, k.Fleet
		m.launch("sshkey/"+id, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
			err := kp.DeleteSSHKey(ctx, id)
			return func(time.Time) {
				if err == nil || errors.Is(err, ErrNotFound) {
					m.event(Event{Type: EventSSHKeyDeleted, Fleet: fleet, Provider: provider, InstanceID: id,
						Message: "no fleet of this owner needs the key any more"})
					return
				}
				m.event(Event{Type: EventProviderUnavailable, Fleet: fleet, Provider: provider, InstanceID: id, Err: err.Error(),
					Message: "removing an SSH key failed; retried at the next listing"})
			}
		})
	}
	m.ownKeys[provider] = own
}
