package fleet

import (
	"context"
	"errors"
	"strings"
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
// its own calls, not by listings; an hourly-billed node that may be
// released before its hour ends is also listed at marginCheck. m.mu held.
func (m *Manager) nextCheck(r *InstanceRecord) time.Time {
	next := m.routineCheck(r)
	if at := m.marginCheck(r, m.seen[r.Instance.RequestID]); !at.IsZero() && (next.IsZero() || at.Before(next)) {
		return at
	}
	return next
}

// routineCheck is nextCheck without marginCheck. m.mu held.
func (m *Manager) routineCheck(r *InstanceRecord) time.Time {
	id := r.Instance.RequestID
	seen := m.seen[id]
	switch {
	case r.Instance.Status == StatusTerminated:
		if t := m.lateCreateCheck(r, seen); !t.IsZero() {
			return t // a create given up: its instance may still land
		}
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

// sweepDue marks the providers due for a sweep listing: a whole one (every
// kind in one pass) waits while the listing of a kind backs off after a
// failure (the other alone would be listed every pass); the first rescan
// after start lists each kind as soon as it may be tried. m.mu held.
func (m *Manager) sweepDue(due map[string]kindSet, now time.Time) {
	for _, name := range m.order {
		if at := m.rescanAt(name); !at.IsZero() && !now.Before(at) {
			_, kinds, whole := m.rescanDue(name)
			if !whole {
				kinds = kinds.and(m.kindsReady(name, now))
			}
			due[name] = due[name].union(kinds)
		}
		if at := m.sweepAt(name, now); !at.IsZero() && !now.Before(at) {
			due[name] = allKinds
		}
	}
}

// sweepAt is when provider's next sweep while it is suspect (see
// suspectFor) may list: DriftCheckInterval after its last listing of every
// kind, not before every kind's backoff has passed. Zero: none (the
// provider is no longer suspect by then, or at now). m.mu held.
func (m *Manager) sweepAt(provider string, now time.Time) time.Time {
	end := m.suspect[provider].Add(suspectFor)
	at := maxTime(m.lastFull[provider].Add(m.pol.DriftCheckInterval), m.kindReadyAt(provider, allKinds, true))
	if !now.Before(end) || !at.Before(end) {
		return time.Time{}
	}
	return at
}

// rescanAt is when sweepDue next starts a rescan (rescanDue) of provider:
// not before the backoff of the kinds it lists has passed (a whole one:
// every kind's; the first: either's). A due time the loop cannot act on is
// not one: NextPass would answer "in a second" all along a backoff (a key
// without bare-metal access: up to 10 minutes at a time, for good). Zero:
// none. m.mu held.
func (m *Manager) rescanAt(provider string) time.Time {
	at, kinds, whole := m.rescanDue(provider)
	if at.IsZero() {
		return at
	}
	return maxTime(at, m.kindReadyAt(provider, kinds, whole))
}

// rescanDue is when provider's next listing after start is due and which
// kinds it reads. First each kind not listed since VisibilityGrace and 30 s
// after start (a minute after a failed try): the kind that lists is done,
// the other (its listing backing off, refused for a key without bare-metal
// access) is listed when it may be tried again. Once every kind has been,
// whole listings (whole) every DriftCheckInterval until suspectFor after
// start; zero after that. A server a crashed process created just before
// may stay out of lists longer than VisibilityGrace, and a Manager without
// its Store has no record that would list it. m.mu held.
func (m *Manager) rescanDue(provider string) (at time.Time, kinds kindSet, whole bool) {
	at, kinds = m.startedAt.Add(m.pol.VisibilityGrace+30*time.Second), allKinds.minus(m.rescanned[provider])
	if kinds.none() {
		at, kinds, whole = m.lastFull[provider].Add(m.pol.DriftCheckInterval), allKinds, true
		if at.After(m.startedAt.Add(suspectFor)) {
			return time.Time{}, kindSet{}, false
		}
	}
	return maxTime(at, m.rescanRetry[provider]), kinds, whole
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

// nextDue is the earliest time some record needs a listing, not before the
// listing of its provider and kind may be tried again after a failure.
// m.mu held.
func (m *Manager) nextDue() time.Time {
	var next time.Time
	for _, r := range m.insts {
		if t := m.nextCheck(r); !t.IsZero() {
			t = maxTime(t, m.listRetry[kindKey(r.Instance.Provider, r.Instance.Offer.BareMetal)])
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
// the first listing of a kind after start (so that a Manager with an empty
// Store finds what its owner left) and of the VPCs and SSH keys. The sweeps
// of the first hour after start and of a suspect provider list its VPCs
// too (a VPC create sent just before a crash may land minutes later). A
// part of a listing that failed (a kind of instances, the VPCs, the keys)
// is not asked again before its backoff (see failWait) has passed,
// whatever is due: an instant refusal (a revoked key) must not turn the
// loop into a stream of calls. Nothing of a provider is asked while every
// kind of its instances backs off, and its VPCs and keys only after a pass
// in which some kind listed. m.mu held.
func (m *Manager) listDue(now time.Time) {
	due := m.dueKinds(now)
	for _, name := range m.order {
		ready := m.kindsReady(name, now)
		if m.busy("list/"+name) || ready.none() {
			continue
		}
		m.listProvider(name, m.kindsWanted(name, due[name], ready), now)
	}
}

// listProvider starts one listing of provider name: the kinds want of its
// instances, and its VPCs and SSH keys when they are wanted. m.mu held.
func (m *Manager) listProvider(name string, want kindSet, now time.Time) {
	p := m.providers[name]
	vp, _ := p.(VPCProvider)
	kp := keyProvider(p)
	var rescan kindSet // the kinds this listing rescans (rescanDue); before lastFull moves
	if at, kinds, whole := m.rescanDue(name); !at.IsZero() && !now.Before(at) && (!whole || want.all()) {
		rescan = kinds.and(want)
	}
	if want.all() {
		m.lastFull[name] = now
	}
	suspect := now.Before(m.suspect[name].Add(suspectFor)) && want.all()
	uncertainVPC := m.vpcUncertain(name) && !now.Before(m.vpcListed[name].Add(uncertainCheck))
	wantVPCs := vp != nil && !now.Before(m.listRetry["vpcs/"+name]) &&
		(m.vpcListed[name].IsZero() || !rescan.none() || suspect || uncertainVPC)
	wantKeys := kp != nil && !now.Before(m.listRetry["keys/"+name]) &&
		(m.keysListed[name].IsZero() || suspect || m.keysDirty[name])
	if want.none() && !wantVPCs && !wantKeys {
		return
	}
	if wantKeys {
		m.keysDirty[name] = false
	}
	perKind := m.listFails[kindKey(name, false)] > 0 || m.listFails[kindKey(name, true)] > 0
	listedFrom := now
	m.launch("list/"+name, taskList, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
		l := listKinds(ctx, p, want, perKind)
		answers := want.none() || !l.listed.none() // the account answers: its VPCs and keys are asked too
		var vpcs []VPC
		var keys []SSHKey
		var verr, kerr error
		if answers && wantVPCs {
			vpcs, verr = vp.ListVPCs(ctx)
		}
		if answers && wantKeys {
			keys, kerr = kp.ListSSHKeys(ctx)
		}
		return func(now time.Time) {
			m.applyKinds(name, l, listedFrom, now)
			m.rescanDone(name, rescan, l.listed, now)
			if !answers {
				if wantKeys {
					m.keysDirty[name] = true // not listed: next time
				}
				return
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

// listOutcome records how a part of a provider's listing ended (key
// "vms/", "metal/" (see kindKey), "vpcs/" or "keys/" and the provider's name): a failure puts off
// the next try of that part by failWait, a success clears it. m.mu held.
func (m *Manager) listOutcome(key string, err error, now time.Time) {
	if err == nil {
		delete(m.listFails, key)
		delete(m.listRetry, key)
		m.noteKindOutcome(key, nil)
		return
	}
	m.listFails[key]++
	m.listRetry[key] = now.Add(m.failWait(m.listFails[key], err))
	if _, provider, ok := strings.Cut(key, "/"); ok {
		m.noteCallFailure(provider, err, now) // any listing of the provider: its health
	}
	m.noteKindOutcome(key, err) // "vms/" and "metal/" keys: that kind is down (others are never looked up)
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

// rescanDone records the outcome of a listing after start that was to
// rescan the kinds rescan (see rescanDue): each kind that listed is done;
// one that did not is tried again in a minute, or once its backoff has
// passed (a server created just before a crash must not stay unseen
// because one listing failed). m.mu held.
func (m *Manager) rescanDone(provider string, rescan, listed kindSet, now time.Time) {
	if rescan.none() {
		return
	}
	m.rescanned[provider] = m.rescanned[provider].union(rescan.and(listed))
	if !rescan.minus(listed).none() {
		m.rescanRetry[provider] = now.Add(time.Minute)
	}
}
