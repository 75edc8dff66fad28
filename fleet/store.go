package fleet

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"
)

// FleetRecord is what the Manager keeps about a fleet. The spec is stored
// without its PrivateKey.
type FleetRecord struct {
	Spec     Spec
	Deleting bool
	// KeyRequired records that the spec came with a PrivateKey (which is
	// never stored): after a restart the fleet's agents wait until the spec
	// is applied again with its key.
	KeyRequired bool
	// Stalled is set after Policy.MaxDeadlineMisses consecutive deadline
	// misses: no more creates until the spec is applied again.
	Stalled bool
	Created time.Time
	VPC     *VPCRecord // the fleet's VPC (cluster placement), nil when none
	// Jobs are the fleet's last ended jobs, up to 64, in the order they
	// ended, and
	// RebuyKinds what the re-buy hold knows of them per minimum reservation
	// (Policy.RebuyHoldOff): the hold is chosen from them, by a Manager that
	// restarts or a replica that takes the fleet over too. Only nodes billed
	// per minute with a minimum reservation (Hot Aisle) record jobs.
	Jobs       []BusyPeriod `json:",omitempty"`
	RebuyKinds []RebuyKind  `json:",omitempty"`
	// Voided holds, for an hour, the Intent.Acquire tokens of IntentVoids
	// carried out before the busy mark they void (replicas; by when): the
	// mark is skipped when it comes, whichever replica holds the fleet.
	Voided map[string]time.Time `json:",omitempty"`
	// GrowApplied is when an Apply last raised the fleet's Nodes, and
	// GrowMet when that growth was met (as many members ready as Nodes
	// asked for) or given up (then GrowApplied: the fleet lowered again to
	// GrowFrom or below, deleted or stalled, or the growth still short
	// after the time a create may take, Policy.ProvisionTimeout or
	// BareMetalProvisionTimeout plus AgentTimeout); GrowMet is zero while
	// the growth waits. GrowFrom is the fleet's Nodes before the growth (a
	// raise while it waits keeps it): a lowering to more than GrowFrom
	// leaves the growth waiting, met at the new Nodes. A node idle at that
	// Apply is not released as idle while its growth waits, and counts as
	// idle from GrowMet once it is settled (see Spec.IdleTimeout). Stored,
	// so a restarted Manager or a replica that takes the fleet over keeps
	// them.
	GrowApplied time.Time `json:",omitzero"`
	GrowMet     time.Time `json:",omitzero"`
	GrowFrom    int       `json:",omitzero"`
	Version     int64     // writes since the record was created: set by the Store on read, checked on write (0: new)
}

// BusyPeriod is one job of a fleet: a node (Node, its request id) busy
// from Start (its busy mark) for Used (until its MarkIdle), of an offer
// whose minimum reservation is Minimum. A node busy less than a minute (a
// job cancelled once placed) did no work and has none.
type BusyPeriod struct {
	Start   time.Time
	Used    time.Duration
	Minimum time.Duration
	Node    string `json:",omitempty"`
}

// RebuyKind is what the re-buy hold knows of a fleet's jobs on offers with
// one minimum reservation (a fleet whose spec changed may have several):
// when the first of them started (its busy mark; a node given back less
// than a minute after it, which did no work, is no job, and its busy mark
// is taken back), and whether a node has
// been released as idle after more than a minute idle past its minimum (a
// hold or an idle timer ran out with no job). Until then holding idle nodes
// has cost nothing, and the hold is the break-even (Policy.RebuyHoldOff).
type RebuyKind struct {
	Minimum          time.Duration
	FirstJob         time.Time
	IdledPastMinimum bool `json:",omitempty"`
}

// VPCRecord tracks a fleet's VPC until the provider confirms it deleted.
type VPCRecord struct {
	VPC VPC
	// Pending is set from before the create call until its answer or a
	// label lookup gives the VPC's id; VPC.RequestID names the create.
	Pending     bool
	Since       time.Time // when the create was decided
	Deleting    bool
	Attempts    int
	NextAttempt time.Time
	LastError   string
}

// Termination is the state of an instance's release.
type Termination struct {
	Requested time.Time // when release was decided
	Reason    string    // "idle", "released", "scale down", "fleet deleted", "orphan", "provisioning deadline", "agent deadline", "agent unhealthy", "stopped out of band", "duplicate", "not wanted"
	Force     bool      // release before the minimum reservation (Hot Aisle force)
	// NotBefore: no attempt before this (reservation window). An idle or
	// scale-down release of an hourly-billed instance (Vultr; under
	// ReleaseAtReservationEnd, its fleet not being deleted) that did not
	// land before the billed hour it was meant for ended — refused, or due
	// only after it — waits again: Attempts is set back to 0 and NotBefore
	// to the last safe moment of the hour now paid (EventReleaseDeferred),
	// and a fleet that grows meanwhile takes the instance back.
	NotBefore time.Time
	// Attempts counts the delete calls made since the release was last
	// decided or put off to a paid hour (see NotBefore).
	Attempts     int
	FirstFailure time.Time // the first refusal of the release: kept when it is put off
	NextAttempt  time.Time
	Accepted     time.Time // the provider accepted the release; waiting to see it gone
	LastError    string
	// Alerted: the EventTerminationStuck alert was raised, after
	// Policy.TerminationAlertAfter of refusals or when refusals carried the
	// release past a billed hour's end (another hour bought).
	Alerted bool
	Compat  bool // ReleaseCompat: untracked after CompatGiveUp of refusals
	// MinRefused counts the attempts the provider refused because the
	// minimum reservation is not over, for an instance whose start is
	// unknown: it is kept meanwhile (paid anyway), and while every attempt
	// was such a refusal a fleet that grows takes it back — also while a
	// retry is under way: the growth creates nothing until its answer
	// (another refusal: taken back; accepted: replaced), and a retry falling
	// due in the pass that carries the growth out is not started.
	MinRefused int
	// Busy: a job ran on the instance when its release was decided (its
	// fleet deleted, or its caller's Release): marked busy, or handed out
	// by Acquire and not given back yet (HandOut; JobStopped, its job
	// ended by a stop). The job may run on until the release is attempted,
	// so while Busy the release never gives way early to a fleet refused
	// its stock (see Policy.RebuyHoldOff). The job's end clears it: its
	// GiveBack (of the hand-out in HandOut) or a MarkIdle, accepted while
	// the release waits (not under way at the cloud); from then on the
	// release gives way like any that waits for its minimum's end.
	Busy bool `json:",omitempty"`
	// HandOut is the hand-out (InstanceRecord.HandOut, Instance.HandOut)
	// the node was under when its release was decided, kept until the
	// job's GiveBack or a MarkIdle ends it: GiveBack of that hand-out is
	// accepted, a give-back of another one is refused with
	// ErrHandedOutAgain while Busy. "" when Acquire did not hand the node
	// out (idle, or marked busy with MarkBusy).
	HandOut string `json:",omitempty"`
}

// InstanceRecord is what the Manager keeps about an instance.
type InstanceRecord struct {
	Instance    Instance
	Termination *Termination // nil until release is decided

	// CreateUncertain is set when the create call failed ambiguously: the
	// resource may exist under its label. Since is when that was noticed.
	CreateUncertain      bool
	CreateUncertainSince time.Time
	// CreateAnswered is set when the uncertain create's call answered (then
	// CreateUncertainSince is the answer's time); a record whose answer a
	// crash lost is looked up until its call's deadline plus the grace.
	CreateAnswered bool
	// CreatedUnknown is set for an instance adopted from a list that gives
	// no creation time (Hot Aisle): Instance.Created is when it was first
	// seen, the latest its reservation can have started. Its release is
	// never forced before that bound's minimum is nearly over: it is tried
	// without force, and while the provider refuses it for the minimum it
	// is tried again (see Policy.MinuteReleaseMargin).
	CreatedUnknown bool
	// CreatedLatest is set for an instance found by a listing after its
	// create's answer was lost or ambiguous (CreateUncertain, or a create
	// given up and found within an hour) when the provider gives no
	// creation time (Hot Aisle): it is that listing's time, the latest its
	// reservation can have started. Instance.Created is then the earliest:
	// the later of the create's plan and the start of the last listing that
	// showed nothing that could be it, less Policy.VisibilityGrace. Its
	// release windows count from Instance.Created; a release refused for
	// the minimum reservation is tried again without force, and forced only
	// at CreatedLatest's minimum end less Policy.MinuteReleaseMargin. Zero
	// otherwise (Vultr gives date_created).
	CreatedLatest time.Time
	// UnlabelledBefore lists the provider's unlabelled instances of the same
	// type seen before the create call (offers with LabelAfterCreate): an
	// instance not in it that appears unlabelled is this create's.
	UnlabelledBefore []string
	// Inferred is set for an instance taken for this create only because it
	// appeared unlabelled (offers with LabelAfterCreate): when another
	// owner's label shows up on it, that owner's create answered with it,
	// and it is left to them.
	Inferred bool

	Busy bool
	// AcquiredBy is the Intent.Acquire token of the busy mark that made the
	// node busy (replicas), "" when it is idle or was made busy otherwise:
	// an IntentVoid with that token puts it back to idle.
	AcquiredBy string `json:",omitempty"`
	// HandOut is the Instance.HandOut token of the Acquire whose hand-out
	// the node is under, "" when it is not handed out by an Acquire (idle,
	// or marked busy with MarkBusy while idle): set when Acquire's busy
	// mark is carried out (replacing any other), ended when another mark of
	// the node is (MarkIdle, a GiveBack of this hand-out, an Acquire's void,
	// a MarkBusy of the node idle), kept by a MarkBusy of the node while a
	// job holds it (the job's own mark). Kept
	// across a stop out of band (JobStopped), so that the holder can give
	// the node back. GiveBack marks the node idle only for this token.
	HandOut      string    `json:",omitempty"`
	RunningSince time.Time // the provider first said running
	// PendingSeen is the last listing before RunningSince that showed the
	// instance not running yet, or its create time when no listing of this
	// Manager's did (found running after a restart, or adopted) and that is
	// longer ago than the offer's delete lock: its running began between the
	// two, and the provider's delete lock (Offer.DeleteLock) may have started
	// then. Zero when unknown (the lock is counted from RunningSince).
	PendingSeen time.Time
	IdleSince   time.Time // first ready, or last MarkIdle (or a stop out of band that ended a job)
	// BusySince is when the node's current or last job started (its last
	// busy mark; zero if never busy). With IdleSince it tells a Manager
	// that restarts, or a replica that takes the fleet over, the fleet's
	// recent jobs, which the re-buy hold is chosen from.
	BusySince time.Time
	// JobStopped: the node was busy (claimed by an Acquire or MarkBusy) when
	// it was powered off out of band, and was started again
	// (Policy.OnStoppedRestart). Its job ended with the stop, so it is idle
	// (its idle clock and release rules run from the restart), but Acquire
	// does not hand it out until its holder gives it back with MarkIdle
	// (taken while it boots again too) or, once it is ready, marks it busy
	// again: otherwise the holder's MarkIdle, sent on seeing
	// its job fail, would free it under the next job (two jobs on one node).
	JobStopped bool `json:",omitempty"`
	AgentTries int
	// AgentCheckFails counts failed agent checks in a row after ready.
	AgentCheckFails int
	VPCTries        int       // failed attaches, any error (bounded by VPCAttachAttempts)
	VPCAttempts     int       // every unconfirmed attach attempt, for the backoff (and bounded too)
	VPCNext         time.Time // no attach attempt before this
	VPCDone         bool      // attached and confirmed, or given up with a warning
	Orphan          bool      // labelled, but no fleet claims it
	OrphanSince     time.Time
	Version         int64 // writes since the record was created: set by the Store on read, checked on write (0: new)
}

// Store keeps the Manager's records so that a restarted Manager resumes
// where it stopped. Implementations must be safe for concurrent use and must
// copy what they are given and what they return.
//
// Writes are conditional: PutFleet and PutInstance store the record only
// when its Version equals the stored one's (0 when none is stored), and the
// stored record then has Version+1; otherwise they return an error that
// answers errors.Is for ErrStaleWrite and store nothing. Reads return each
// record with its stored Version. Deletes are unconditional, and deleting
// an absent record is not an error.
//
// Each call should be bounded (fleet/pgstore bounds a call whose context has
// no deadline by its WithTimeout): the loop makes its writes in turn, and a
// write that fails (other than ErrStaleWrite or ErrFenced) ends them for
// that step, the rest kept and written at the next; a step waits at most
// one call's bound for a Store that cannot be reached.
type Store interface {
	PutFleet(ctx context.Context, f FleetRecord) error
	DeleteFleet(ctx context.Context, name string) error
	Fleets(ctx context.Context) ([]FleetRecord, error)
	PutInstance(ctx context.Context, r InstanceRecord) error
	DeleteInstance(ctx context.Context, requestID string) error
	Instances(ctx context.Context) ([]InstanceRecord, error)
	// Meta reads a small named value (ok false when absent); MetaOwner
	// holds the Manager's owner id, MetaUnsettled the providers' recent
	// call failures.
	Meta(ctx context.Context, key string) (value string, ok bool, err error)
	// PutMeta stores a small named value.
	PutMeta(ctx context.Context, key, value string) error
}

// MemoryStore is the default Store: records in memory, lost with the process.
type MemoryStore struct {
	mu        sync.Mutex
	fleets    map[string]FleetRecord
	instances map[string]InstanceRecord
	meta      map[string]string
	// byProvider holds the request ids of the records of each provider id
	// (Instance.ID), for Instance.
	byProvider map[string]map[string]bool
}

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{fleets: map[string]FleetRecord{}, instances: map[string]InstanceRecord{}, meta: map[string]string{},
		byProvider: map[string]map[string]bool{}}
}

// Meta reads a named value.
func (s *MemoryStore) Meta(_ context.Context, key string) (string, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.meta[key]
	return v, ok, nil
}

// PutMeta stores a named value.
func (s *MemoryStore) PutMeta(_ context.Context, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.meta[key] = value
	return nil
}

// PutFleet stores f, replacing the record of the same name, when f.Version
// is the stored one's; otherwise it returns a *StaleWriteError.
func (s *MemoryStore) PutFleet(_ context.Context, f FleetRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := checkVersion("fleet", f.Spec.Name, f.Version, s.fleets[f.Spec.Name].Version); err != nil {
		return err
	}
	f = cloneFleet(f)
	f.Version++
	s.fleets[f.Spec.Name] = f
	return nil
}

// DeleteFleet forgets a fleet.
func (s *MemoryStore) DeleteFleet(_ context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.fleets, name)
	return nil
}

// Fleets returns every fleet record, by name.
func (s *MemoryStore) Fleets(context.Context) ([]FleetRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]FleetRecord, 0, len(s.fleets))
	for _, f := range s.fleets {
		out = append(out, cloneFleet(f))
	}
	slices.SortFunc(out, func(a, b FleetRecord) int { return compareStrings(a.Spec.Name, b.Spec.Name) })
	return out, nil
}

// PutInstance stores r under its request id when r.Version is the stored
// one's; otherwise it returns a *StaleWriteError.
func (s *MemoryStore) PutInstance(_ context.Context, r InstanceRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := r.Instance.RequestID
	if err := checkVersion("instance", id, r.Version, s.instances[id].Version); err != nil {
		return err
	}
	r = cloneInstance(r)
	r.Version++
	s.unindex(id)
	s.instances[id] = r
	if s.byProvider[r.Instance.ID] == nil {
		s.byProvider[r.Instance.ID] = map[string]bool{}
	}
	s.byProvider[r.Instance.ID][id] = true
	return nil
}

// DeleteInstance forgets an instance record.
func (s *MemoryStore) DeleteInstance(_ context.Context, requestID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unindex(requestID)
	delete(s.instances, requestID)
	return nil
}

// unindex drops the stored record of requestID from byProvider. s.mu held.
func (s *MemoryStore) unindex(requestID string) {
	old, ok := s.instances[requestID]
	if !ok {
		return
	}
	delete(s.byProvider[old.Instance.ID], requestID)
	if len(s.byProvider[old.Instance.ID]) == 0 {
		delete(s.byProvider, old.Instance.ID)
	}
}

// Instances returns every instance record, oldest first.
func (s *MemoryStore) Instances(context.Context) ([]InstanceRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]InstanceRecord, 0, len(s.instances))
	for _, r := range s.instances {
		out = append(out, cloneInstance(r))
	}
	slices.SortFunc(out, func(a, b InstanceRecord) int {
		if c := a.Instance.Created.Compare(b.Instance.Created); c != 0 {
			return c
		}
		return compareStrings(a.Instance.RequestID, b.Instance.RequestID)
	})
	return out, nil
}

func cloneFleet(f FleetRecord) FleetRecord {
	f.Spec = cloneSpec(f.Spec)
	f.Spec.PrivateKey = PrivateKey{}
	f.Voided = maps.Clone(f.Voided)
	f.Jobs, f.RebuyKinds = slices.Clone(f.Jobs), slices.Clone(f.RebuyKinds)
	if f.VPC != nil {
		v := *f.VPC
		v.VPC.Attachment = slices.Clone(v.VPC.Attachment)
		f.VPC = &v
	}
	return f
}

func cloneSpec(s Spec) Spec {
	s.SSHKeys = slices.Clone(s.SSHKeys)
	s.Requirements.Providers = slices.Clone(s.Requirements.Providers)
	s.Requirements.Regions = slices.Clone(s.Requirements.Regions)
	s.Requirements.InstanceTypes = slices.Clone(s.Requirements.InstanceTypes)
	return s
}

func cloneInstance(r InstanceRecord) InstanceRecord {
	r.Instance = cloneInst(r.Instance)
	r.UnlabelledBefore = slices.Clone(r.UnlabelledBefore)
	if r.Termination != nil {
		t := *r.Termination
		r.Termination = &t
	}
	return r
}

func cloneInst(i Instance) Instance {
	i.History = slices.Clone(i.History)
	i.Offer.LocalDisks = slices.Clone(i.Offer.LocalDisks)
	if i.SSH.Jump != nil {
		j := *i.SSH.Jump
		i.SSH.Jump = &j
	}
	return i
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// CreateMeta stores value under key when key holds none and returns the
// value key holds afterwards (see MetaCreator).
func (s *MemoryStore) CreateMeta(_ context.Context, key, value string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.meta[key]; ok {
		return v, nil
	}
	s.meta[key] = value
	return value, nil
}
