package fleet

import (
	"context"
	"time"
)

// kindSet says which kinds of instances (VMs, bare metal) a listing
// covered, is due for, or is refused.
type kindSet struct{ vms, metal bool }

// allKinds is every kind: what List reads.
var allKinds = kindSet{vms: true, metal: true}

// kindOf is the kind of instances of offers with bareMetal.
func kindOf(bareMetal bool) kindSet { return kindSet{vms: !bareMetal, metal: bareMetal} }

func (k kindSet) covers(o Offer) bool { return k.has(o.BareMetal) }

// has reports whether k holds bare metal (bareMetal) or VMs (!bareMetal).
func (k kindSet) has(bareMetal bool) bool { return (bareMetal && k.metal) || (!bareMetal && k.vms) }

func (k kindSet) all() bool               { return k.vms && k.metal }
func (k kindSet) none() bool              { return !k.vms && !k.metal }
func (k kindSet) union(o kindSet) kindSet { return kindSet{k.vms || o.vms, k.metal || o.metal} }
func (k kindSet) and(o kindSet) kindSet   { return kindSet{k.vms && o.vms, k.metal && o.metal} }
func (k kindSet) minus(o kindSet) kindSet { return kindSet{k.vms && !o.vms, k.metal && !o.metal} }
func (k kindSet) String() string {
	switch {
	case k.all():
		return "VMs and bare metal"
	case k.metal:
		return "bare metal"
	case k.vms:
		return "VMs"
	}
	return "nothing"
}

// kindKey is the listFails and listRetry key of the listing of one kind of
// provider's instances: each kind backs off alone, so that a refused
// bare-metal listing (Vultr /v2/bare-metals answering 403 while
// /v2/instances works) neither stops the VMs' nor is asked every pass.
func kindKey(provider string, bareMetal bool) string {
	if bareMetal {
		return "metal/" + provider
	}
	return "vms/" + provider
}

// kindsReady is which kinds of provider's instances may be listed now: those
// whose last listing did not fail, or whose backoff (failWait) has passed.
// A provider that lists only whole (no KindLister) has both or neither.
// m.mu held.
func (m *Manager) kindsReady(provider string, now time.Time) kindSet {
	return kindSet{vms: !now.Before(m.listRetry[kindKey(provider, false)]), metal: !now.Before(m.listRetry[kindKey(provider, true)])}
}

// kindReadyAt is when the listing of kinds of provider's instances may be
// tried again after a failure (see kindsReady): once every kind's backoff
// has passed (every) or either's. Zero or past: now. m.mu held.
func (m *Manager) kindReadyAt(provider string, kinds kindSet, every bool) time.Time {
	vms, metal := m.listRetry[kindKey(provider, false)], m.listRetry[kindKey(provider, true)]
	switch {
	case kinds.all() && every:
		return maxTime(vms, metal)
	case kinds.all():
		return minTime(vms, metal)
	case kinds.metal:
		return metal
	}
	return vms
}

// kindsWanted is which kinds of provider's instances a listing now reads:
// those due (a record's check, a sweep), those not listed since start and
// those whose listing the account refuses (only their listing ends the
// spell that holds their creates), less those whose listing backs off
// (ready); every kind for a provider that lists only whole. m.mu held.
func (m *Manager) kindsWanted(provider string, due, ready kindSet) kindSet {
	want := due.union(allKinds.minus(m.kindsListed[provider])).union(m.listRefused[provider])
	if _, ok := m.providers[provider].(KindLister); !ok && !want.none() {
		return allKinds
	}
	return want.and(ready)
}

// kindListing is what one pass's listing of a provider's instances found:
// the instances of the kinds that listed, and each kind's failure.
type kindListing struct {
	list     []Instance
	listed   kindSet
	vmErr    error
	metalErr error
}

func (l *kindListing) failed() kindSet { return kindSet{vms: l.vmErr != nil, metal: l.metalErr != nil} }

func (l *kindListing) set(kinds kindSet, list []Instance, err error) {
	if err == nil {
		l.list, l.listed = append(l.list, list...), l.listed.union(kinds)
		return
	}
	if kinds.vms {
		l.vmErr = err
	}
	if kinds.metal {
		l.metalErr = err
	}
}

// listKinds lists the kinds want of p's instances. Both kinds are read with
// one List unless one of them failed last time (perKind); a List that
// fails is followed, for a KindLister, by one ListKind per kind, so that
// the kind that still lists is not lost with the one that does not (the
// providers' List fails whole when either listing fails).
func listKinds(ctx context.Context, p Provider, want kindSet, perKind bool) kindListing {
	var l kindListing
	kl, ok := p.(KindLister)
	switch {
	case want.none():
		return l
	case !ok || (want.all() && !perKind):
		list, err := p.List(ctx)
		if err == nil || !ok {
			l.set(allKinds, list, err)
			return l
		}
	}
	for _, metal := range []bool{false, true} {
		if want.has(metal) {
			list, err := kl.ListKind(ctx, metal)
			l.set(kindOf(metal), list, err)
		}
	}
	return l
}

// applyKinds applies one pass's listing of provider's instances: what
// listed (applyList; the listing started at from), each kind's backoff,
// and the failures. m.mu held.
func (m *Manager) applyKinds(provider string, l kindListing, from, now time.Time) {
	if !l.listed.none() {
		m.applyList(provider, l.list, l.listed, from, now)
		m.kindsListed[provider] = m.kindsListed[provider].union(l.listed)
	}
	for _, metal := range []bool{false, true} {
		err := l.vmErr
		if metal {
			err = l.metalErr
		}
		if l.listed.has(metal) || err != nil {
			m.listOutcome(kindKey(provider, metal), err, now)
		}
	}
	failed := l.failed()
	if failed.all() && accountRefusal(l.vmErr) == accountRefusal(l.metalErr) {
		m.listFailed(provider, allKinds, l.vmErr, now) // one account, one failure
		return
	}
	if failed.vms {
		m.listFailed(provider, kindOf(false), l.vmErr, now)
	}
	if failed.metal {
		m.listFailed(provider, kindOf(true), l.metalErr, now)
	}
}

// listFailed handles a failed listing of provider's instances of the kinds
// failed. Nothing is concluded from it. A refusal of the account (a wrong
// or revoked key, a missing permission) starts a refusal spell, with one
// EventCreatesRefused alert: every kind refused holds all the provider's
// creates (holdProvider); only some kinds refused (a key without
// bare-metal access) hold the creates of those kinds, until they list
// again, since only their listing proves a create of them landed. m.mu held.
func (m *Manager) listFailed(provider string, failed kindSet, err error, now time.Time) {
	m.event(Event{Type: EventProviderUnavailable, Provider: provider, Err: err.Error(),
		Message: "listing " + failed.String() + " failed; nothing is concluded from it"})
	if !accountRefusal(err) {
		return
	}
	refused := m.listRefused[provider].union(failed)
	switch {
	case refused.all():
		if now.After(m.providerHold[provider]) {
			m.holdProvider(provider, err, now) // a wrong or revoked key: one alert, as for a refused create
		}
	case !m.refusing(provider):
		m.event(Event{Type: EventCreatesRefused, Provider: provider, Err: err.Error(), At: m.listRetry[kindKey(provider, refused.metal)],
			Message: "the account refused the listing of " + refused.String() + " (key or permission); no creates of " + refused.String() +
				" on this provider until it lists again (retried with backoff up to " + failWaitMaxRefused.String() + "); the other kind is listed and created as usual"})
	}
	m.listRefused[provider] = refused
}

// refusing reports whether provider is in a refusal spell: its account
// refused a create or a listing of some kind, and the alert was given.
// m.mu held.
func (m *Manager) refusing(provider string) bool {
	return m.holdFails[provider] > 0 || !m.listRefused[provider].none()
}

// endRefusal takes the kinds that listed out of provider's refusal spell.
// Once a refused kind lists, the hold of all the provider's creates is
// lifted (the kinds still refused stay held by withoutAvoided); once every
// refused kind lists again the spell is over, and the next refusal alerts
// again. m.mu held.
func (m *Manager) endRefusal(provider string, listed kindSet) {
	refused := m.listRefused[provider]
	left := refused.minus(listed)
	if left == refused {
		return
	}
	delete(m.providerHold, provider)
	if left.none() {
		delete(m.listRefused, provider)
		delete(m.holdFails, provider)
		return
	}
	m.listRefused[provider] = left
}
