package fleet

import (
	"context"
	"time"
)

// PowerChecker is the optional capability of a provider whose listings
// cannot show that an instance was powered off out of band (Hot Aisle: its
// VM and bare-metal lists carry no power state; Vultr's list carries
// power_status, so Vultr needs none). The Manager asks it about each idle
// or busy instance that no Agent checks, once per
// Policy.DriftCheckInterval (with an Agent, a failed agent check asks Get
// instead), and acts on a powered-off one by Policy.OnStopped.
type PowerChecker interface {
	// PoweredOff reports whether instance id is powered off, with one call
	// for an instance the provider has listed. ErrNotFound when gone; any
	// other error is taken as "not known now" and asked again later.
	PoweredOff(ctx context.Context, id string) (bool, error)
}

// checkPower launches a power check of each idle or busy instance of a
// PowerChecker provider that no agent checks, once per
// Policy.DriftCheckInterval after it became ready, at most one in flight
// per instance; the answer is applied by powerChecked. The time of the last
// check is kept with the agent checks' (an instance has one or the
// other). m.mu held.
func (m *Manager) checkPower(now time.Time) {
	for _, r := range m.insts {
		id := r.Instance.RequestID
		pc, ok := m.providers[r.Instance.Provider].(PowerChecker)
		if !ok || (r.Instance.Status != StatusIdle && r.Instance.Status != StatusBusy) || r.Termination != nil ||
			r.Instance.ID == "" || m.busy("power/"+id) || m.busy("start/"+id) ||
			now.Before(maxTime(r.Instance.Ready, m.agentChecked[id]).Add(m.pol.DriftCheckInterval)) {
			continue
		}
		if (m.agentFor(r.Instance.Fleet) != nil && !m.keyMissing[r.Instance.Fleet]) || m.free(taskCall) <= 0 {
			continue
		}
		m.agentChecked[id] = now
		iid := r.Instance.ID
		m.launch("power/"+id, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
			off, err := pc.PoweredOff(ctx, iid)
			return func(now time.Time) { m.powerChecked(id, iid, off && err == nil, now) }
		})
	}
}

// powerChecked applies one power check: a powered-off instance is acted on
// as a listing that says stopped would be. Errors (gone included) are left
// to the listings. m.mu held.
func (m *Manager) powerChecked(id, iid string, off bool, now time.Time) {
	r := m.insts[id]
	if !off || r == nil || r.Instance.ID != iid || r.Termination != nil || !r.Instance.Running() {
		return
	}
	r.Instance.Stopped = true
	m.dirtyI[id] = true
	m.stoppedOutOfBand(r, now)
}
