package fleet

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"time"
)

// replicaLeasePrefix names the lease each replica renews to say it is alive.
const replicaLeasePrefix = "replica/"

// gcLease guards the work no fleet owns: orphans, VPC and SSH key collection.
const gcLease = "gc"

// replica is the state of a Manager that shares a LeaseStore with other
// replicas (Config.Store implements LeaseStore). Written by the loop.
type replica struct {
	ls     LeaseStore
	holder string // the replica id: holder of the fleet and collector leases
	selfID string // holder of the replica lease: the id and a per-process suffix
	ttl    time.Duration

	self, gc  Lease
	selfAt    time.Time // local time before the call that got self
	gcAt      time.Time
	held      map[string]Lease     // fleet → its lease
	heldAt    map[string]time.Time // local time before the call that got or renewed it
	fleetKeys map[string][]string  // every stored fleet's SSH keys (for key collection)
	applied   map[string]int64     // fleet → the last intent Seq carried out
	written   map[string]int64     // fleet → the last intent Seq whose effects a flush stored (acked up to it)
	acked     map[string]int64
	keys      map[string]PrivateKey // fleets' private keys given to this replica (never stored)
	unread    map[string]bool       // fleets whose intents this replica recorded as holder, not read back yet
	voided    map[string]time.Time  // Intent.Acquire tokens of busy marks known void (Acquire answered an error) → when
	voids     map[string]Intent     // IntentVoids not stored yet, by token: the loop writes them (voidNext)
	voidNext  time.Time             // no write of voids before this (Manager clock)
	nextSync  time.Time
	readFrom  map[string]time.Time // fleet → when the last read of its intents carried out began (Manager clock)
	gates     map[string]markGate  // fleet → its releases waiting for a read of its marks (marksRead)
	pass      int64                // loop steps so far (syncLeases counts them)

	conflict  *LeaseHeldError // the replica lease as first seen held by another process (nil: it is ours)
	fatal     error           // *ReplicaIDInUseError once that process renewed it
	fatalSaid bool
}

// valid reports whether a lease taken at t is still safely held by the
// process clock (leases run in real time, like the store's clock, whatever
// Config.Clock says): its TTL less a third as margin.
func (r *replica) valid(at time.Time) bool {
	return !at.IsZero() && time.Now().Before(at.Add(r.ttl-r.ttl/3))
}

// holds reports whether this replica may act on fleet now. m.mu held.
func (m *Manager) holds(fleet string, _ time.Time) bool {
	if m.rep == nil {
		return true
	}
	_, ok := m.rep.held[fleet]
	return ok && m.rep.valid(m.rep.heldAt[fleet])
}

// isGC reports whether this replica does the work no fleet owns. m.mu held.
func (m *Manager) isGC(_ time.Time) bool {
	return m.rep == nil || (m.rep.gc.Token != 0 && m.rep.valid(m.rep.gcAt))
}

// rendezvous picks, among the live holders, the one with the highest hash
// of (key, holder): every replica computes the same pick. The 64-bit FNV-1a
// hash is finished with a mixer: alone it barely spreads its last bytes, so
// holders named alike ("r1", "r2", "r3") got shares of 1/2, 1/4 and 1/4.
func rendezvous(key string, holders []string) string {
	best, bestH := "", uint64(0)
	for _, h := range holders {
		f := fnv.New64a()
		f.Write([]byte(key + "\x00" + h))
		if v := mix64(f.Sum64()); best == "" || v > bestH {
			best, bestH = h, v
		}
	}
	return best
}

// mix64 is MurmurHash3's 64-bit finalizer: every input bit flips each
// output bit with probability one half.
func mix64(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

// syncResult is what one lease sync learned.
type syncResult struct {
	self, gc     Lease
	selfAt, gcAt time.Time
	got          map[string]Lease // fleets acquired or renewed
	gotAt        time.Time
	lost         []string // held fleets no longer ours
	gone         []string // held fleets deleted from the store (their leases released)
	handover     []string // held fleets that fall to another live replica
	fleets       map[string]FleetRecord
	insts        []InstanceRecord     // of newly acquired fleets
	settle       map[string]time.Time // with them: the providers' failures the store records (MetaUnsettled)
	settleUnread bool                 // that record could not be read
	orphans      []InstanceRecord     // stored orphan records, read when the collector lease was newly taken
	intents      map[string][]Intent
	acked        map[string]int64 // fleets whose intents were acknowledged, through
	readAt       time.Time        // when the read of every intent began (Manager clock; zero: not made)
	readErr      error            // the read of the records or of the intents failed: nothing taken or found gone
	conflict     *LeaseHeldError  // the replica lease is held by another process
	err          error
}

// syncLeases starts, every third of the lease TTL, the task that renews
// this replica's leases, takes the fleets that fall to it, hands over the
// others, loads newly acquired fleets and reads their stored intents. m.mu held.
func (m *Manager) syncLeases(now time.Time) {
	r := m.rep
	if r == nil {
		return
	}
	r.pass++
	if m.busy("leases") {
		return
	}
	if time.Now().Before(r.nextSync) {
		m.readIntents()
		return
	}
	r.nextSync = time.Now().Add(r.ttl / 3)
	clear(r.unread) // the sync reads every intent
	held := make(map[string]Lease, len(r.held))
	for f, l := range r.held {
		held[f] = l
	}
	self, gc, acks := r.self, r.gc, map[string]int64{}
	for f, seq := range r.written {
		if _, ok := r.held[f]; ok && seq > r.acked[f] {
			acks[f] = seq
		}
	}
	m.launch("leases", taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
		res := m.leaseSync(ctx, self, gc, held, acks)
		return func(now time.Time) { m.applySync(res, now) }
	})
}

// fleetDirty reports whether fleet has records not yet written. m.mu held.
func (m *Manager) fleetDirty(fleet string) bool {
	if m.dirtyF[fleet] {
		return true
	}
	for id := range m.dirtyI {
		if r := m.insts[id]; r != nil && r.Instance.Fleet == fleet {
			return true
		}
	}
	return false
}

// readBound is the deadline of each read of the shared store made in the
// lease task (records, intents, leases): a read that hangs (a slow query, a
// stalled connection) is cut well inside the lease's TTL, so that the task
// ends and the next sync renews the leases in time (LeaseTTL/10: the three
// reads of a sync and a read of intents between syncs take at most 12 s of
// the 20 s a renewal is counted on at the default 30 s TTL). Reads cut by it
// fail: the holder works from its records in memory meanwhile.
func (r *replica) readBound() time.Duration { return r.ttl / 10 }

// read calls f with a context bounded by readBound.
func read[T any](ctx context.Context, r *replica, f func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, r.readBound())
	defer cancel()
	return f(ctx)
}

// leaseSync makes the lease calls of one sync (task side). The fleet
// leases this replica holds and should still hold (rendezvous over the
// live replicas) are renewed before the records and intents are read, and
// whatever those reads answer: a read that fails or hangs must not cost
// the holder its fleets, nor hand them to a replica that cannot read them
// either (tester AT: the lease ran out 2m50s before a 30-minute minimum's
// end, 207 min billed while the intent reads failed). Without those reads
// (res.readErr) no fleet is taken and none found gone: new fleets and
// intents wait for a read that works.
func (m *Manager) leaseSync(ctx context.Context, self, gc Lease, held map[string]Lease, acks map[string]int64) syncResult {
	r := m.rep
	res := syncResult{got: map[string]Lease{}, fleets: map[string]FleetRecord{}, intents: map[string][]Intent{}, acked: map[string]int64{}}
	take := func(l Lease, name, holder string) (Lease, time.Time, error) {
		at := time.Now()
		if l.Token != 0 {
			if nl, err := r.ls.RenewLease(ctx, l); err == nil {
				return nl, at, nil
			}
		}
		nl, err := r.ls.AcquireLease(ctx, name, holder, r.ttl)
		return nl, at, err
	}
	var err error
	if res.self, res.selfAt, err = take(self, replicaLeasePrefix+r.holder, r.selfID); err != nil {
		res.err = err
		errors.As(err, &res.conflict)
		return res
	}
	leases, err := read(ctx, r, r.ls.Leases)
	if err != nil {
		res.err = err
		return res
	}
	var live []string
	for _, l := range leases {
		if h, ok := strings.CutPrefix(l.Name, replicaLeasePrefix); ok {
			live = append(live, h)
		}
	}
	slices.Sort(live)
	res.gotAt = time.Now()
	for name, l := range held {
		switch {
		case rendezvous(name, live) != r.holder:
			res.handover = append(res.handover, name)
			res.got[name] = l
		default:
			if nl, err := r.ls.RenewLease(ctx, l); err == nil {
				res.got[name] = nl
			} else {
				res.lost = append(res.lost, name)
			}
		}
	}
	fleets, ferr := read(ctx, r, r.ls.Fleets)
	for _, f := range fleets {
		res.fleets[f.Spec.Name] = f
	}
	res.readAt = m.clock.Now() // a failed read counts as made (marksRead)
	intents, ierr := read(ctx, r, func(ctx context.Context) ([]Intent, error) { return r.ls.Intents(ctx, "") })
	for _, in := range intents {
		res.intents[in.Fleet] = append(res.intents[in.Fleet], in)
	}
	if ferr != nil || ierr != nil {
		res.readErr = errors.Join(ferr, ierr)
		clear(res.fleets) // only the intents read, if any, are carried out
		if rendezvous(gcLease, live) == r.holder && gc.Token != 0 {
			if nl, err := r.ls.RenewLease(ctx, gc); err == nil { // not taken anew: its orphans cannot be read
				res.gc, res.gcAt = nl, res.gotAt
			}
		} else if gc.Token != 0 {
			_ = r.ls.ReleaseLease(ctx, gc)
		}
		m.ackIntents(ctx, acks, &res)
		return res
	}
	names := map[string]bool{}
	for name := range res.fleets {
		names[name] = true
	}
	for name := range res.intents {
		names[name] = true
	}
	newGC := false // the collector lease taken anew: its orphans are read from the store
	if rendezvous(gcLease, live) == r.holder {
		if gc.Token == 0 {
			r.inherited(ctx, gcLease, leases)
		}
		res.gc, res.gcAt, _ = take(gc, gcLease, r.holder)
		newGC = res.gc.Token != 0 && res.gc.Token != gc.Token
	} else if gc.Token != 0 {
		_ = r.ls.ReleaseLease(ctx, gc)
	}
	var acquired []string
	for name := range names {
		if _, had := held[name]; had || rendezvous(name, live) != r.holder {
			continue
		}
		r.inherited(ctx, FleetLease(name), leases)
		if nl, err := r.ls.AcquireLease(ctx, FleetLease(name), r.holder, r.ttl); err == nil {
			res.got[name] = nl
			acquired = append(acquired, name)
		}
	}
	for name := range held {
		if !names[name] {
			_ = r.ls.ReleaseLease(ctx, held[name]) // the fleet is gone from the store
			res.gone = append(res.gone, name)
			delete(res.got, name)
			res.handover = slices.DeleteFunc(res.handover, func(h string) bool { return h == name })
		}
	}
	m.ackIntents(ctx, acks, &res)
	if len(acquired) > 0 || newGC {
		insts, err := read(ctx, r, r.ls.Instances)
		if err == nil {
			for _, in := range insts {
				switch {
				case slices.Contains(acquired, in.Instance.Fleet):
					res.insts = append(res.insts, in)
				case newGC && collectorsOrphan(in, names):
					res.orphans = append(res.orphans, in)
				}
			}
		} else {
			for _, name := range acquired { // cannot load: give them back
				_ = r.ls.ReleaseLease(ctx, res.got[name])
				delete(res.got, name)
			}
			if newGC { // nor the orphans: taken at a later sync
				_ = r.ls.ReleaseLease(ctx, res.gc)
				res.gc = Lease{}
			}
		}
	}
	if len(res.insts) > 0 {
		// What failed at the providers while another replica held the
		// fleets: their releases choose the same margin (hourlyMargin).
		// Unread, the wide margin holds for unsettledFor (not known).
		v, err := read(ctx, r, func(ctx context.Context) (string, error) {
			v, ok, err := r.ls.Meta(ctx, MetaUnsettled)
			if err == nil && !ok {
				v = "{}"
			}
			return v, err
		})
		if s, ok := parseSettle(v); err == nil && ok {
			res.settle = s.Failed
		} else {
			res.settleUnread = true
		}
	}
	return res
}

// ackIntents acknowledges the intents of the fleets held (res.got) whose
// effects a flush stored, through acks (task side).
func (m *Manager) ackIntents(ctx context.Context, acks map[string]int64, res *syncResult) {
	lctx := ctx
	for _, l := range res.got {
		lctx = WithLease(lctx, l)
	}
	for f, seq := range acks {
		if _, ok := res.got[f]; ok {
			if m.rep.ls.AckIntents(lctx, f, seq) == nil { // else acknowledged again at the next sync
				res.acked[f] = seq
			}
		}
	}
}

// applySync applies a lease sync in the loop. m.mu held.
func (m *Manager) applySync(res syncResult, now time.Time) {
	r := m.rep
	if res.conflict != nil {
		m.standDown(res.conflict)
		return
	}
	r.conflict, r.fatal, r.fatalSaid = nil, nil, false
	if !res.readAt.IsZero() {
		for name := range r.held { // read (or tried: see marksRead) with every intent
			m.noteMarksRead(name, res.readAt)
		}
		for name := range res.got {
			m.noteMarksRead(name, res.readAt)
		}
	}
	if res.err != nil {
		m.event(Event{Type: EventStoreWriteFailed, Err: res.err.Error(), Message: "the lease sync failed; fleets are given up when their leases run out"})
		return
	}
	if res.readErr != nil {
		m.event(Event{Type: EventStoreWriteFailed, Err: res.readErr.Error(), Message: "the lease sync could not read the shared store: the fleets held are renewed and worked from memory; new fleets and intents wait for a read"})
	}
	becameGC := res.gc.Token != 0 && res.gc.Token != r.gc.Token // renewals keep the token
	lostGC := r.gc.Token != 0 && res.gc.Token != r.gc.Token
	r.self, r.selfAt, r.gc, r.gcAt = res.self, res.selfAt, res.gc, res.gcAt
	if lostGC {
		m.dropOrphans()
	}
	if becameGC {
		m.takeOrphans(res.orphans, now)
	}
	for f, seq := range res.acked { // only those the store took: a failed one is made again
		r.acked[f] = max(r.acked[f], seq)
	}
	if res.readErr == nil { // else not known: the keys stay as last read
		before := r.fleetKeys
		r.fleetKeys = map[string][]string{}
		for name, f := range res.fleets {
			r.fleetKeys[name] = f.Spec.SSHKeys
		}
		for name, ins := range res.intents {
			for _, in := range ins {
				r.fleetKeys[name] = append(r.fleetKeys[name], in.Spec.SSHKeys...)
			}
		}
		m.relistKeys(before, becameGC, now)
	}
	for _, name := range res.gone {
		if m.fleets[name] == nil { // deleted: FleetDeleted said so already
			delete(r.held, name)
			delete(r.heldAt, name)
		}
	}
	for _, name := range res.lost {
		m.dropFleet(name, "its lease was lost")
	}
	for name, l := range res.got {
		if _, had := r.held[name]; !had {
			m.takeFleet(name, res.fleets, now)
		}
		r.held[name], r.heldAt[name] = l, res.gotAt
	}
	for _, in := range res.insts {
		if _, ok := m.insts[in.Instance.RequestID]; !ok {
			in := in
			m.addRecord(&in)
			m.readAt[in.Instance.RequestID] = now
		}
	}
	m.mergeSettle(res.settle)
	if res.settleUnread && now.After(m.settleSince) {
		m.settleSince = now
	}
	m.applyStoredIntents(res.intents, now)
	for _, name := range res.handover {
		if !m.fleetDirty(name) {
			l := r.held[name]
			m.dropFleet(name, "handed over to another replica")
			m.launch("release/"+name, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
				_ = r.ls.ReleaseLease(ctx, l)
				return nil
			})
		}
	}
}

// relistKeys has the collector replica list SSH keys again when it has
// just become the collector, or when a fleet left the store (its keys may
// be free now): deleted fleets' holders cannot tell whether a key is still
// needed by fleets other replicas hold, and no create of the collector's
// own may come to ask for a listing. m.mu held.
func (m *Manager) relistKeys(before map[string][]string, becameGC bool, now time.Time) {
	if !m.isGC(now) {
		return
	}
	gone := becameGC
	for name := range before {
		if _, ok := m.rep.fleetKeys[name]; !ok && len(before[name]) > 0 {
			gone = true
		}
	}
	if !gone {
		return
	}
	for name, p := range m.providers {
		if keyProvider(p) != nil {
			m.keysDirty[name] = true
		}
	}
}

// takeFleet starts holding a fleet: its stored record, if any. m.mu held.
func (m *Manager) takeFleet(name string, stored map[string]FleetRecord, now time.Time) {
	m.rep.applied[name] = m.rep.acked[name]
	m.rep.written[name] = m.rep.acked[name]
	if f, ok := stored[name]; ok {
		f := f
		if k, ok := m.rep.keys[name]; ok {
			f.Spec.PrivateKey = k
		} else if f.KeyRequired {
			m.keyMissing[name] = true
		}
		m.fleets[name] = &f
	}
	delete(m.rebuy, name) // rebuilt from the stored record's jobs
	m.event(Event{Type: EventFleetTaken, Fleet: name, Message: "this replica now reconciles the fleet (lease " + FleetLease(name) + ")"})
}

// dropFleet forgets a fleet this replica no longer holds; answers of calls
// still under way for it are ignored, and the holder resolves them. m.mu held.
func (m *Manager) dropFleet(name, why string) {
	delete(m.rep.held, name)
	delete(m.rep.heldAt, name)
	delete(m.fleets, name)
	delete(m.dirtyF, name)
	delete(m.rebuy, name)
	for id := range m.byFleet[name] {
		m.cancelAgent(id)
		delete(m.dirtyI, id)
		delete(m.acquired, id)
		m.removeRecord(id)
	}
	m.event(Event{Type: EventFleetReleased, Fleet: name, Message: "this replica stops reconciling the fleet: " + why})
}

// expireLeases drops the fleets whose lease this replica can no longer
// count on by its own clock (a renewal failed or is late). m.mu held.
func (m *Manager) expireLeases(now time.Time) {
	if m.rep == nil {
		return
	}
	for name, at := range m.rep.heldAt {
		if !m.rep.valid(at) {
			m.dropFleet(name, "its lease ran out before it was renewed")
		}
	}
}

// applyStored carries out an intent read from the store, once. m.mu held.
func (m *Manager) applyStored(in Intent, now time.Time) {
	if in.Seq <= m.rep.applied[in.Fleet] {
		return
	}
	m.rep.applied[in.Fleet] = in.Seq
	switch in.Kind {
	case IntentApply:
		s := in.Spec
		if k, ok := m.rep.keys[in.Fleet]; ok {
			s.PrivateKey = k
		}
		m.applySpec(s, now)
		if in.KeyGiven && s.PrivateKey.IsZero() {
			m.fleets[in.Fleet].KeyRequired = true
			m.keyMissing[in.Fleet] = true
		}
	case IntentDelete:
		m.deleteFleet(in.Fleet, in.Policy, now)
	case IntentRelease:
		m.releaseInstance(in.InstanceID, in.Policy, now)
	case IntentBusy, IntentIdle:
		r := m.insts[in.InstanceID]
		if in.Kind == IntentIdle && r != nil && r.Termination != nil {
			delete(m.acquired, in.InstanceID)
			m.givenBackInRelease(r, in.Acquire, markAt(r, in.At, now)) // the job on a node in release ended
			return
		}
		if in.Kind == IntentIdle && in.Acquire != "" && (r == nil || r.HandOut != in.Acquire) {
			return // a GiveBack of a hand-out that ended (the node handed out again, or marked since): changes nothing
		}
		delete(m.acquired, in.InstanceID)
		if in.Kind == IntentBusy && m.isVoided(in.Fleet, in.Acquire, now) {
			return // its Acquire answered an error: nobody uses the node
		}
		if in.Kind == IntentBusy && r != nil && r.Termination != nil && r.Instance.Status == StatusTerminating && !m.takeBackForMark(r, now) {
			return
		}
		was := r != nil && (r.Busy || r.Instance.Status == StatusBusy)
		by, handOut := "", ""
		if r != nil {
			by, handOut = r.AcquiredBy, r.HandOut
		}
		m.markBusy(in.InstanceID, in.Kind == IntentBusy, in.Acquire, markAt(r, in.At, now))
		switch {
		case r == nil || in.Kind != IntentBusy || in.Acquire == "" || !r.Busy:
		case !was:
			r.AcquiredBy = in.Acquire // this mark made it busy: its void makes it idle
			r.HandOut = in.Acquire    // and its Acquire's GiveBack
		case by != "":
			// Another Acquire's mark made it busy and this one is a no-op
			// (its Acquire gives the node up): the first mark's void still
			// makes it idle, and its GiveBack gives it back.
			r.AcquiredBy, r.HandOut = by, handOut
		}
	case IntentVoid:
		if r := m.insts[in.InstanceID]; r != nil && in.Acquire != "" && r.AcquiredBy == in.Acquire {
			m.markBusy(in.InstanceID, false, "", markAt(r, in.At, now)) // its Acquire answered an error: nobody uses the node
			return
		}
		m.noteVoided(in.Fleet, in.Acquire, now) // its mark may come yet: skipped then
	}
}

// takeBackForMark takes back the release of r, found terminating by a busy
// mark recorded through another replica (MarkBusy answered nil: the
// release was not stored when it looked), when the release is an idle or
// scale-down one that still waits with the node surely kept (releaseWaits;
// no delete call under way): the node runs the job. It says
// EventMarkDropped when it cannot: the job's node is going. What
// remains after marksRead: a mark stored while the holder's read before the
// release was under way. m.mu held.
func (m *Manager) takeBackForMark(r *InstanceRecord, now time.Time) bool {
	t, id, fleet := r.Termination, r.Instance.RequestID, r.Instance.Fleet
	if (t.Reason == "idle" || t.Reason == "scale down") && releaseWaits(t, now) && !m.busy("delete/"+id) && !r.Instance.Ready.IsZero() {
		r.Termination = nil
		m.dirtyI[id] = true
		delete(m.counts, fleet)
		m.seen[id] = time.Time{} // listed again at once: it may have gone while it waited
		if f := m.fleets[fleet]; f != nil && t.Reason == "idle" {
			f.Spec.Nodes++ // as before its idle release
			m.dirtyF[fleet] = true
		}
		m.setStatus(r, StatusIdle, "release cancelled: marked busy", now)
		m.event(Event{Type: EventReleaseCancelled, Fleet: fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
			Message: "a busy mark recorded through another replica came before the " + t.Reason + " release started: the release is taken back"})
		return true
	}
	m.event(Event{Type: EventMarkDropped, Fleet: fleet, Provider: r.Instance.Provider, InstanceID: r.Instance.ID,
		Message: "a busy mark recorded through another replica found the node already being released (" + t.Reason + "): its job has no node"})
	return false
}

// markAt is when a mark of r recorded at recorded (Intent.At, through any
// replica) takes effect: as of then, for everything timed from it (BusySince,
// IdleSince, the re-buy log's BusyPeriod, the idle release), not as of when
// the holder carries it out — read at its next lease sync, or by the replica
// taking the fleet over after the holder's death, a MarkIdle of a job that
// ended inside a minimum would otherwise be taken to have ended after it
// (tester AP: 40 and 41 min billed for a 30-minute minimum). Bounded: never
// before r's last mark or status change (BusySince, IdleSince, its last
// Instance.History entry: the replicas' clocks may differ), never after now.
// m.mu held.
func markAt(r *InstanceRecord, recorded, now time.Time) time.Time {
	if r == nil || recorded.IsZero() || !recorded.Before(now) {
		return now
	}
	low := maxTime(r.BusySince, r.IdleSince)
	if h := r.Instance.History; len(h) > 0 {
		low = maxTime(low, h[len(h)-1].Time)
	}
	return minTime(now, maxTime(recorded, low))
}

// voidTTL is how long a void is remembered for a busy mark not seen yet.
const voidTTL = time.Hour

// isVoided reports whether the busy mark of an Acquire with token is
// void: known here (the Acquire answered an error on this replica, or its
// IntentVoid was read) or stored on the fleet's record. m.mu held.
func (m *Manager) isVoided(fleet, token string, now time.Time) bool {
	if token == "" {
		return false
	}
	if _, ok := m.rep.voided[token]; ok {
		return true
	}
	f := m.fleets[fleet]
	at, ok := time.Time{}, false
	if f != nil {
		at, ok = f.Voided[token]
	}
	return ok && now.Sub(at) < voidTTL
}

// noteVoided remembers that the busy mark of the Acquire with token is
// void, here and on the fleet's record (for the next holder), for
// voidTTL; older ones are forgotten. m.mu held.
func (m *Manager) noteVoided(fleet, token string, now time.Time) {
	if token == "" {
		return
	}
	m.rep.voided[token] = now
	for t, at := range m.rep.voided {
		if now.Sub(at) > voidTTL {
			delete(m.rep.voided, t)
		}
	}
	f := m.fleets[fleet]
	if f == nil {
		return
	}
	if f.Voided == nil {
		f.Voided = map[string]time.Time{}
	}
	f.Voided[token] = now
	for t, at := range f.Voided {
		if now.Sub(at) > voidTTL {
			delete(f.Voided, t)
		}
	}
	m.dirtyF[fleet] = true
}

// putIntent records an intent in the store (replica mode); an error
// answers ErrNotRecorded or ErrMaybeRecorded (see storeIntent). When this
// replica holds the fleet it queues the intent locally too, with its Seq
// (Acquire counts it), and has the loop read the fleet's stored intents at
// once: they are carried out from the store only, in Seq order, so that
// one recorded earlier through another replica is never overtaken and then
// skipped.
func (m *Manager) putIntent(ctx context.Context, in Intent, local intent) error {
	_, err := m.recordIntent(ctx, in, local)
	return err
}

// recordIntent is putIntent, returning the intent's Seq.
func (m *Manager) recordIntent(ctx context.Context, in Intent, local intent) (int64, error) {
	in.At = m.clock.Now()
	key := in.Spec.PrivateKey
	in.Spec.PrivateKey = PrivateKey{}
	if in.Kind == IntentApply {
		in.KeyGiven = !key.IsZero()
	}
	seq, maybe, err := m.storeIntent(ctx, in)
	if err != nil {
		class := ErrNotRecorded
		if maybe {
			class = ErrMaybeRecorded
		}
		return 0, fmt.Errorf("gpufleet: fleet %s: %s %w: %w", in.Fleet, in.Kind, unprefixed(class), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !key.IsZero() {
		m.rep.keys[in.Fleet] = key
	}
	m.noteRecorded(in.Fleet, seq, local)
	return seq, nil
}

// storeIntent writes in (with a Call token drawn for it) and returns its
// Seq. When the write answers an error, the fleet's pending intents are
// read (with a CallTimeout of their own: ctx may be what ended the write):
// one with the call's token means the store committed the write and only
// its answer was lost, and its Seq is returned. Otherwise err is the
// store's error (joined with the read's), and maybe says that the read
// failed: whether the write committed is not known.
func (m *Manager) storeIntent(ctx context.Context, in Intent) (seq int64, maybe bool, err error) {
	if in.Call == "" {
		in.Call = NewRequestID()
	}
	m.mu.Lock()
	after := m.rep.applied[in.Fleet] // Seqs grow: a write made now is after it
	m.mu.Unlock()
	seq, err = m.rep.ls.PutIntent(ctx, in)
	if err == nil {
		return seq, false, nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.pol.CallTimeout)
	defer cancel()
	ins, rerr := m.intentsAfter(rctx, in.Fleet, after)
	if rerr != nil {
		return 0, true, fmt.Errorf("%w (reading it back: %w)", err, rerr)
	}
	for _, got := range ins {
		if got.Call == in.Call {
			return got.Seq, false, nil
		}
	}
	return 0, false, err
}

// noteRecorded queues an intent recorded with Seq seq when this replica
// holds its fleet, and has the loop read the fleet's intents back. m.mu
// held.
func (m *Manager) noteRecorded(fleet string, seq int64, local intent) {
	if _, ok := m.rep.held[fleet]; ok {
		local.seq, local.fleet = seq, fleet
		m.intents.push(local)
		m.rep.unread[fleet] = true
	}
	m.wake()
}

// lostWrite reports whether a store error means the lease is gone.
func lostWrite(err error) bool { return errors.Is(err, ErrFenced) || errors.Is(err, ErrStaleWrite) }
