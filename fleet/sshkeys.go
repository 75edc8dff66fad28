package fleet

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// keyProvider returns p's SSH key capability, nil when it has none.
func keyProvider(p Provider) SSHKeyProvider {
	kp, _ := p.(SSHKeyProvider)
	return kp
}

// neededKeys returns the public keys (base64 part) the owner's fleets
// need, leaving out fleet except ("" for none). m.mu held.
func (m *Manager) neededKeys(except string) map[string]bool {
	needed := map[string]bool{}
	specs := map[string][]string{}
	for name, f := range m.fleets {
		specs[name] = f.Spec.SSHKeys
	}
	if m.rep != nil {
		for name, keys := range m.rep.fleetKeys {
			specs[name] = append(specs[name], keys...)
		}
	}
	for name, keys := range specs {
		if name == except {
			continue
		}
		for _, line := range keys {
			if fs := strings.Fields(line); len(fs) >= 2 {
				needed[fs[1]] = true
			}
		}
	}
	return needed
}

// observeKeys keeps the latest listing of this owner's labelled SSH keys
// and removes those no fleet of the owner needs any more (a fleet's record
// stays until all its members are confirmed gone, so no running member
// loses its key: Hot Aisle servers read the account's keys at login). Keys
// registered by hand, or by another owner, are never touched. m.mu held.
func (m *Manager) observeKeys(provider string, keys []SSHKey, now time.Time) {
	var own []SSHKey
	for _, k := range keys {
		if k.RequestID != "" && k.Owner == m.owner {
			own = append(own, k)
		}
	}
	for _, k := range m.keyObs[provider] {
		if !slices.ContainsFunc(own, func(o SSHKey) bool { return o.ID == k.ID }) {
			delete(m.keyRetry, k.ID) // gone (or no longer ours): nothing to retry
			delete(m.keyFails, k.ID)
		}
	}
	m.keyObs[provider] = own
	m.ownKeys[provider] = len(own)
	if !m.isGC(now) {
		return // the collector replica removes keys
	}
	m.removeKeys(provider, m.neededKeys(""), now)
}

// removeKeys starts the deletes of the owner's listed keys not in needed;
// it returns how many such keys are left. m.mu held.
func (m *Manager) removeKeys(provider string, needed map[string]bool, now time.Time) int {
	kp := keyProvider(m.providers[provider])
	left := 0
	for _, k := range m.keyObs[provider] {
		if needed[k.PublicKey] {
			continue
		}
		left++
		if m.busy("sshkey/"+k.ID) || now.Before(m.keyRetry[k.ID]) {
			continue
		}
		if m.free(taskCall) <= 0 {
			m.keyRetry[k.ID] = now.Add(10 * time.Second) // no call slot now: tried again (retryKeys) without waiting for a listing
			continue
		}
		id, fleet := k.ID, k.Fleet
		m.launch("sshkey/"+id, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
			err := kp.DeleteSSHKey(ctx, id)
			return func(now time.Time) { m.keyRemoved(provider, id, fleet, err, now) }
		})
	}
	return left
}

// keyRemoved applies an SSH key delete's answer. m.mu held.
func (m *Manager) keyRemoved(provider, id, fleet string, err error, now time.Time) {
	if err != nil && !errors.Is(err, ErrNotFound) {
		m.keyFails[id]++
		m.keyRetry[id] = now.Add(backoff(m.keyFails[id], 10*time.Second, 5*time.Minute))
		m.event(Event{Type: EventProviderUnavailable, Fleet: fleet, Provider: provider, InstanceID: id, Err: err.Error(),
			At: m.keyRetry[id], Message: "removing an SSH key failed; retrying"})
		return
	}
	delete(m.keyFails, id)
	delete(m.keyRetry, id)
	keys := m.keyObs[provider][:0:0]
	for _, k := range m.keyObs[provider] {
		if k.ID != id {
			keys = append(keys, k)
		}
	}
	m.keyObs[provider] = keys
	m.event(Event{Type: EventSSHKeyDeleted, Fleet: fleet, Provider: provider, InstanceID: id,
		Message: "no fleet of this owner needs the key any more"})
}

// keysLeft removes the keys of a deleted fleet that no other fleet needs
// and reports whether some are still there. m.mu held.
func (m *Manager) keysLeft(fleet string, now time.Time) bool {
	needed := m.neededKeys(fleet)
	mine := map[string]bool{}
	for _, line := range m.fleets[fleet].Spec.SSHKeys {
		if fs := strings.Fields(line); len(fs) >= 2 && !needed[fs[1]] {
			mine[fs[1]] = true
		}
	}
	if len(mine) == 0 {
		return false
	}
	left := false
	for provider, keys := range m.keyObs {
		for _, k := range keys {
			if mine[k.PublicKey] {
				left = true
			}
		}
		m.removeKeys(provider, needed, now)
	}
	return left
}

// retryKeys retries the removal of keys whose delete failed once their
// backoff has passed, whether or not anything lists the keys again (a
// Manager with no fleet left lists nothing). m.mu held.
func (m *Manager) retryKeys(now time.Time) {
	if len(m.keyRetry) == 0 || !m.isGC(now) {
		return
	}
	needed := m.neededKeys("")
	for provider := range m.keyObs {
		m.removeKeys(provider, needed, now)
	}
}

// nextKeyRetry is the earliest backoff end of a failed removal of a key
// still listed and still unneeded (zero when none, or when this replica
// does not collect). m.mu held.
func (m *Manager) nextKeyRetry(now time.Time) time.Time {
	if len(m.keyRetry) == 0 || !m.isGC(now) {
		return time.Time{}
	}
	needed := m.neededKeys("")
	var next time.Time
	for _, keys := range m.keyObs {
		for _, k := range keys {
			if t, ok := m.keyRetry[k.ID]; ok && !needed[k.PublicKey] && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}
