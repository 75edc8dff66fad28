package fleet

import (
	"context"
	"errors"
	"time"
)

// uncertainCheck is how often an uncertain create is looked up by label.
const uncertainCheck = 30 * time.Second

// An instance that vanished without a release from this Manager is looked
// for every vanishCheck for vanishWatch: lists lag, and one that shows again
// is tracked again (and released if nothing wants it).
const (
	vanishCheck = 2 * time.Minute
	vanishWatch = time.Hour
)

// nextCheck is when record r next needs a listing of its provider and
// kind (zero: none). It follows what is expected of the instance: a new
// instance is first looked at near its offer's typical boot time and then
// more often; a running one every Policy.DriftCheckInterval, and so one
// whose release waits for its window; a release under way is followed by
// its own calls, not by listings. m.mu held.
func (m *Manager) nextCheck(r *InstanceRecord) time.Time {
	id := r.Instance.RequestID
	seen := m.seen[id]
	switch {
	case r.Instance.Status == StatusTerminated:
		if r.Termination == nil && r.Instance.ID != "" && len(r.Instance.History) > 0 &&
			seen.Sub(r.Instance.History[len(r.Instance.History)-1].Time) < vanishWatch {
			return seen.Add(vanishCheck) // vanished without a release: it may show again
		}
		return time.Time{}
	case r.Instance.ID == "":
		if !r.CreateUncertain || m.busy("create/"+id) {
			return time.Time{}
		}
		return seen.Add(uncertainCheck)
	case r.Termination != nil:
		switch t := r.Termination; {
		case t.Accepted.IsZero() && r.RunningSince.IsZero() && r.Instance.Offer.DeleteNeedsRunning:
			return m.bootCheck(r, seen) // the delete waits for running
		case t.Accepted.IsZero() && t.Attempts == 0:
			return seen.Add(m.pol.DriftCheckInterval) // waiting for its window: still watched (it may be taken back)
		}
		return time.Time{}
	case r.Instance.Status == StatusPending || r.Instance.Status == StatusProvisioning:
		return m.bootCheck(r, seen)
	}
	return seen.Add(m.pol.DriftCheckInterval)
}

// bootCheck: first near the typical boot time, then every twentieth of it
// (between Config.Interval and a minute). m.mu held.
func (m *Manager) bootCheck(r *InstanceRecord, seen time.Time) time.Time {
	boot := r.Instance.Offer.TypicalBoot
	first := r.Instance.Created.Add(boot * 9 / 10)
	if seen.Before(first) {
		return first
	}
	step := min(max(boot/20, m.cfg.Interval), time.Minute)
	return seen.Add(step)
}

// suspectFor is how long a provider is swept — listed whole every
// Policy.DriftCheckInterval although nothing of it is due — after
// something there may have been missed: a create whose answer was lost or
// ambiguous, a server that vanished. A server that lists did not show yet
// is then found (and collected or reported). Besides, every provider's
// servers are listed whole VisibilityGrace after the Manager starts and
// then every DriftCheckInterval for suspectFor (a server a crashed process
// created just before may be invisible to the first listings). Otherwise a
// Manager with nothing to watch makes no calls.
const suspectFor = time.Hour

// sweepDue marks the providers due for a sweep listing. m.mu held.
func (m *Manager) sweepDue(due map[string]kindSet, now time.Time) {
	for _, name := range m.order {
		at := m.rescanDue(name)
		rescan := !at.IsZero() && !now.Before(at)
		suspect := now.Before(m.suspect[name].Add(suspectFor)) && !now.Before(m.lastFull[name].Add(m.pol.DriftCheckInterval))
		if rescan || suspect {
			due[name] = kindSet{vms: true, metal: true}
		}
	}
}

// rescanDue is when provider's next listing of every kind after start is
// due: VisibilityGrace and 30 s after start (a minute after a failed one),
// then every DriftCheckInterval until suspectFor after start; zero after
// that. A server a crashed process created just before may stay out of
// lists longer than VisibilityGrace, and a Manager without its Store has
// no record that would list it. m.mu held.
func (m *Manager) rescanDue(provider string) time.Time {
	at := m.startedAt.Add(m.pol.VisibilityGrace + 30*time.Second)
	if m.rescanned[provider] {
		at = m.lastFull[provider].Add(m.pol.DriftCheckInterval)
		if at.After(m.startedAt.Add(suspectFor)) {
			return time.Time{}
		}
	}
	if r := m.rescanRetry[provider]; r.After(at) {
		at = r
	}
	return at
}

// suspectProvider starts a sweep of provider. m.mu held.
func (m *Manager) suspectProvider(provider string, now time.Time) { m.suspect[provider] = now }

// dueKinds reports, per provider, which kinds of instances are due for a
// listing now (one pass over the records). m.mu held.
func (m *Manager) dueKinds(now time.Time) map[string]kindSet {
	due := map[string]kindSet{}
	m.sweepDue(due, now)
	for _, r := range m.insts {
		k := due[r.Instance.Provider]
		if (r.Instance.Offer.BareMetal && k.metal) || (!r.Instance.Offer.BareMetal && k.vms) {
			continue
		}
		if t := m.nextCheck(r); !t.IsZero() && !t.After(now) {
			if r.Instance.Offer.BareMetal {
				k.metal = true
			} else {
				k.vms = true
			}
			due[r.Instance.Provider] = k
		}
	}
	return due
}

// nextDue is the earliest time some record needs a listing, not before its
// provider's listing may be tried again after a failure. m.mu held.
func (m *Manager) nextDue() time.Time {
	var next time.Time
	for _, r := range m.insts {
		if t := m.nextCheck(r); !t.IsZero() {
			t = maxTime(t, m.listRetry["list/"+r.Instance.Provider])
			if next.IsZero() || t.Before(next) {
				next = t
			}
		}
	}
	return next
}

// listDue starts a listing of every provider that has something due: a
// record's check (by kind, one list serving all), an uncertain VPC create
// (every uncertainCheck), SSH keys registered since the last listing, or
// the first listing after start, which reads every kind (so that a Manager
// with an empty Store finds what its owner left) and the VPCs and SSH keys.
// The sweeps of the first hour after start and of a suspect provider list
// its VPCs too (a VPC create sent just before a crash may land minutes
// later). A part of a listing that failed (the instances, the VPCs, the
// keys) is not asked again before its backoff (see failWait) has passed,
// whatever is due: an instant refusal (a revoked key) must not turn the
// loop into a stream of calls. m.mu held.
func (m *Manager) listDue(now time.Time) {
	due := m.dueKinds(now)
	for _, name := range m.order {
		if m.busy("list/"+name) || now.Before(m.listRetry["list/"+name]) {
			continue
		}
		p := m.providers[name]
		vp, _ := p.(VPCProvider)
		kp := keyProvider(p)
		first := !m.scanned[name]
		vms, metal := due[name].vms, due[name].metal
		rescan := false
		if vms && metal {
			at := m.rescanDue(name) // before lastFull moves: a sweep after start is a rescan
			rescan = !at.IsZero() && !now.Before(at)
			m.lastFull[name] = now
		}
		suspect := now.Before(m.suspect[name].Add(suspectFor)) && vms && metal
		uncertainVPC := m.vpcUncertain(name) && !now.Before(m.vpcListed[name].Add(uncertainCheck))
		wantVPCs := vp != nil && !now.Before(m.listRetry["vpcs/"+name]) &&
			(m.vpcListed[name].IsZero() || rescan || suspect || uncertainVPC)
		wantKeys := kp != nil && !now.Before(m.listRetry["keys/"+name]) &&
			(m.keysListed[name].IsZero() || suspect || m.keysDirty[name])
		if first {
			vms, metal = true, true
		}
		if !vms && !metal && !wantVPCs && !wantKeys {
			continue
		}
		if wantKeys {
			m.keysDirty[name] = false
		}
		listedFrom := now
		m.launch("list/"+name, taskList, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
			var list []Instance
			var err, verr, kerr error
			switch kl, ok := p.(KindLister); {
			case vms && metal, (vms || metal) && !ok:
				list, err = p.List(ctx)
				vms, metal = true, true
			case vms || metal:
				list, err = kl.ListKind(ctx, metal)
			}
			var vpcs []VPC
			var keys []SSHKey
			if err == nil && wantVPCs {
				vpcs, verr = vp.ListVPCs(ctx)
			}
			if err == nil && wantKeys {
				keys, kerr = kp.ListSSHKeys(ctx)
			}
			return func(now time.Time) {
				if vms || metal || err != nil {
					m.applyList(name, list, err, kindSet{vms, metal}, listedFrom, now)
				}
				m.rescanDone(name, rescan, err, now)
				m.listOutcome("list/"+name, err, now)
				if err != nil {
					if wantKeys {
						m.keysDirty[name] = true // not listed: next time
					}
					return
				}
				if vms && metal {
					m.scanned[name] = true
				}
				if wantVPCs {
					m.applyVPCList(name, vpcs, verr, now)
					if verr == nil {
						m.settleDeletingVPCs(name, vpcs, listedFrom, now)
					}
					m.listOutcome("vpcs/"+name, verr, now)
				}
				if wantKeys {
					m.listOutcome("keys/"+name, kerr, now)
					if kerr == nil {
						m.keysListed[name] = now
						m.observeKeys(name, keys, now)
					} else {
						m.keysDirty[name] = true
					}
				}
			}
		})
	}
}

// listOutcome records how a part of a provider's listing ended (key
// "list/", "vpcs/" or "keys/" and the provider's name): a failure puts off
// the next try of that part by failWait, a success clears it. m.mu held.
func (m *Manager) listOutcome(key string, err error, now time.Time) {
	if err == nil {
		delete(m.listFails, key)
		delete(m.listRetry, key)
		return
	}
	m.listFails[key]++
	m.listRetry[key] = now.Add(m.failWait(m.listFails[key], err))
}

// failWaitMax and failWaitMaxRefused cap failWait: a minute for failures
// that pass by themselves (an outage, HTTP 5xx, 429), ten minutes for
// refusals of the account that last until someone acts (a wrong or revoked
// key, a missing permission).
const (
	failWaitMax        = time.Minute
	failWaitMaxRefused = 10 * time.Minute
)

// failWait is the pause before the loop repeats a call that has failed n
// times in a row, the last time with err: Config.Interval, doubled with
// each further failure up to failWaitMax (failWaitMaxRefused for
// ErrUnauthorized and ErrForbidden), never shorter than the Retry-After the
// provider sent.
func (m *Manager) failWait(n int, err error) time.Duration {
	limit := failWaitMax
	if errors.Is(err, ErrUnauthorized) || errors.Is(err, ErrForbidden) {
		limit = failWaitMaxRefused
	}
	d := m.cfg.Interval
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	d = min(d, max(limit, m.cfg.Interval))
	return max(d, retryAfter(err))
}

// kindSet says which kinds a listing covered.
type kindSet struct{ vms, metal bool }

func (k kindSet) covers(o Offer) bool { return (o.BareMetal && k.metal) || (!o.BareMetal && k.vms) }

// vpcUncertain reports whether a VPC create on provider name waits for a
// label lookup. m.mu held.
func (m *Manager) vpcUncertain(name string) bool {
	for _, f := range m.fleets {
		if f.VPC != nil && f.VPC.Pending && f.VPC.VPC.Provider == name && !m.busy("vpc/"+f.Spec.Name) {
			return true
		}
		if m.deletingBlocksGrowth(f) && f.VPC.VPC.Provider == name {
			return true
		}
	}
	return false
}

// rescanDone records the outcome of the listing after start: done when it
// succeeded, tried again in a minute when it failed (a server created just
// before a crash must not stay unseen because one listing failed). m.mu held.
func (m *Manager) rescanDone(provider string, rescan bool, err error, now time.Time) {
	switch {
	case !rescan:
	case err == nil:
		m.rescanned[provider] = true
	default:
		m.rescanRetry[provider] = now.Add(time.Minute)
	}
}
