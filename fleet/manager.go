package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Clock is the Manager's source of time (the same shape as sim.Clock, so a
// sped-up simulator clock can drive it). Whatever drives the Manager's clock
// should also drive the provider clients' clocks (their rate limiter and
// retry waits), or waits inside the clients run on another time.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock returns the process clock (the default Config.Clock).
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ErrClosed is returned by every method of a Manager after Close.
var ErrClosed = errors.New("gpufleet: manager closed")

// Config configures a Manager.
type Config struct {
	// Providers are the clouds the Manager may rent from (at least one).
	Providers []Provider
	// Owner names this Manager (or the set of replicas sharing one Store) in
	// every label it writes: instances, VPCs and SSH keys. Only resources
	// labelled with this owner are adopted or collected; other owners'
	// resources in the same account are reported once (EventForeignFound)
	// and never touched. 1 to 6 characters of [a-z0-9]. Empty: the owner kept
	// in the Store, or a new random one, generated once and stored. A Store
	// that already holds another owner is refused. See Label for the format.
	Owner string
	// ReplicaID, when set, makes this Manager one of several replicas
	// sharing Config.Store, which must then be a LeaseStore (fleet/pgstore):
	// each fleet is reconciled by one replica at a time under a lease
	// (Policy.LeaseTTL), intents recorded on any replica reach the holder,
	// and a replica that dies is replaced within the TTL. It names this
	// process among them (unique per process, e.g. host and pid; a second
	// live process with the same id takes no fleet and its Run returns a
	// *ReplicaIDInUseError, while a process restarted with its id after a
	// crash waits at most Policy.LeaseTTL and carries on). Replicas
	// must share Config.Owner, and each must be given the fleets' private
	// keys (they are never stored).
	ReplicaID string
	// AdoptLegacyLabels lets this Manager adopt and collect resources labelled
	// in the format written before owners existed ("gpufleet.<fleet>.<request>"),
	// whose records it no longer has. Set it only when no other gpufleet
	// Manager uses the account. Resources whose records the Store still
	// holds are recognised either way.
	AdoptLegacyLabels bool
	// Agent starts and checks the host agent; nil means no agent: an
	// instance is ready as soon as its provider says running.
	Agent Agent
	// Policy holds the timing rules; zero fields take defaults.
	Policy Policy
	// Store keeps records across restarts (default: NewMemoryStore()).
	Store Store
	// Logger receives one line per event (default: discard).
	Logger *slog.Logger
	// OnEvent, if set, is called for every event, in order, from the
	// goroutine running the reconcile loop (Run or Reconcile) or from the
	// public method that caused the event, never from two goroutines at once
	// and never with a Manager lock held; events are delivered at the end of
	// the loop step that produced them (well under a second after the
	// change). It must not block for long; it may call the Manager.
	OnEvent func(Event)
	// Clock is the source of time (default: the process clock). The offer
	// catalog's TTL and every wait of the Manager follow it. Everything that
	// waits in cloud time must share it: the provider clients
	// (vultr.WithClock, hotaisle.WithClock: rate-limiter waits, Retry-After,
	// retry backoff) and the simulator (sim.WithClock); otherwise the
	// clients wait in wall time while the clouds run faster, and releases
	// land late. The shim's SSH backoff runs on the wall clock.
	Clock Clock
	// Interval is the longest pause between two loop steps of Run, and the
	// pause between listings of a provider that has work in flight
	// (default 10 s). A call the loop repeats after it failed (a listing,
	// a create refused for its rate) waits Interval, doubled per failure in
	// a row up to a minute, or ten minutes for a refused key or permission
	// (HTTP 401, 403).
	Interval time.Duration
	// CatalogTTL is how long offers are cached (default DefaultCatalogTTL).
	CatalogTTL time.Duration
}

// Manager provisions fleets, watches their instances, starts their agent,
// releases them by policy and retries every release until the provider
// confirms the machine gone. It never forgets an instance that may still
// bill. All methods are safe for concurrent use.
//
// The intent model: Apply, Delete, Release, MarkBusy, MarkIdle and Close
// only record what the caller wants; one reconcile loop (Run, or each
// Reconcile call) is the only writer of fleet, instance and VPC records. A
// caller that drives it with Reconcile calls it again by NextPass, when
// the next release deadline, retry or timeout falls due.
// Every provider call runs as a task owned by the Manager, bounded by
// Policy.CallTimeout (creates by Policy.CreateTimeout), and its result is
// applied by the loop against the intent as it is at that moment: a create
// that lands after its fleet was deleted or shrunk is released at once.
type Manager struct {
	cfg       Config
	pol       Policy
	clock     Clock
	store     Store
	log       *slog.Logger
	owner     string
	providers map[string]Provider
	order     []string // provider names in Config order
	catalog   *Catalog

	// pass is a one-slot semaphore held by the loop while it steps. A
	// channel, not a mutex, so that a goroutine waiting for it is durably
	// blocked inside a testing/synctest bubble.
	pass   chan struct{}
	closed atomic.Bool
	done   chan struct{} // closed by Close

	intents intentQueue
	rep     *replica // nil unless Config.Store is a LeaseStore

	mu      sync.Mutex // guards the records and everything below; written only by the loop
	loaded  bool
	fleets  map[string]*FleetRecord
	insts   map[string]*InstanceRecord            // by request id
	byFleet map[string]map[string]*InstanceRecord // fleet → request id → record
	counts  map[string]int                        // fleet → members, cached; dropped on any change
	dirtyF  map[string]bool
	dirtyI  map[string]bool
	goneF   map[string]bool // fleets to delete from the store
	goneI   map[string]bool // instances to delete from the store

	tasks       taskSet
	obs         map[string]*observation // latest listing per provider
	seen        map[string]time.Time    // request id → when a listing last covered it
	shown       map[string]time.Time    // request id → when a listing last showed its rental (a listing may leave a server out)
	lastFull    map[string]time.Time    // provider → its last listing of every kind
	suspect     map[string]time.Time    // provider → when something there may have been missed (see suspectFor)
	rescanned   map[string]kindSet      // the kinds listed again VisibilityGrace after start (see rescanDue)
	rescanRetry map[string]time.Time    // a failed listing after start is tried again then
	vpcListed   map[string]time.Time    // provider → its last successful VPC listing
	startedAt   time.Time
	keysDirty   map[string]bool    // a create registered SSH keys since the last key listing
	kindsListed map[string]kindSet // provider → the kinds of its instances listed once since start
	offersErr   error
	offersAt    time.Time

	reported       map[string]bool // provider/id of unlabelled or foreign resources reported once
	orphanVPCs     map[string]*VPCRecord
	deletedVPCs    map[string]time.Time // deleted by a fleet; ignored while lists still show them
	fleetRetry     map[string]time.Time // no create attempt for the fleet before
	fleetFails     map[string]int
	avoid          map[string]avoidance                   // fleet|offer key → skip the offer until, and why
	refused        map[string]map[string]bool             // stock key (offer key, limitKey) → fleets refused it, while short (see noteRefused)
	yields         map[string]map[*InstanceRecord]yieldTo // refused fleet → nodes released to give way to it (see yieldHolds)
	yielded        map[*InstanceRecord]yieldTo            // nodes that give way now → to whom and why (set by held)
	offersGen      int                                    // counts invalidations of the catalog by the Manager (see yieldGone)
	agentNext      map[string]time.Time
	agentPathDown  map[string]time.Time          // request id → when its last agent start failed with ErrAgentPathDown
	agentCancel    map[string]context.CancelFunc // agent starts under way, by request id
	keyedAgents    map[string]Agent
	abandoned      map[string]bool // provider/id/request id of rentals untracked by ReleaseCompat: never adopted again
	keyMissing     map[string]bool // fleets whose private key was lost with a restart
	keyMissingSaid map[string]bool
	deadlineMisses map[string]int       // consecutive deadline misses per fleet
	readAt         map[string]time.Time // request id → when this process read the record from the store (see checkDeadlines)
	attachRefused  map[string]bool      // request id → its last VPC attach was refused outright (see attachMember)
	storeFailing   bool
	writeFailed    map[string]bool // fleetKey/instKey → the record's last write failed: written after the others (flush)
	orphanGone     map[string]bool // replica mode: request ids of the collector's orphan records to delete from the store without a lease
	vpcCreates     []string        // fleets whose VPC create is planned this step
	ownKeys        map[string]int  // this owner's SSH keys seen in the latest listing (or maybe registered since), per provider
	keyObs         map[string][]SSHKey
	keyRetry       map[string]time.Time
	keyFails       map[string]int
	agentChecked   map[string]time.Time // request id → last agent check
	agentVerdict   map[string]bool      // request id → the latest agent check's verdict when its record's count does not tell (agentHealthy)
	relabel        map[string]bool      // request id → its listed label differs from the record
	labelNext      map[string]time.Time
	providerHold   map[string]time.Time // provider → no creates before (account-level refusal)
	unsettled      map[string]time.Time // provider → when a list or delete call last failed (margin.go)
	settleStored   map[string]time.Time // provider → its failure as last written to or read from the Store (settle.go)
	settleSince    time.Time            // the wide hourly margin holds until unsettledFor after it (hourlyMargin)
	settleDirty    bool                 // MetaUnsettled is to be written although no failure moved
	settleNext     time.Time            // no MetaUnsettled write before (after a failed one)
	down           map[string]bool      // kindKey → the latest list or delete call of that kind failed in a way that passes (margin.go)
	holdFails      map[string]int
	kindHold       map[string]time.Time // kindKey → no creates of that kind before (the account's instance limit)
	listRefused    map[string]kindSet   // provider → the kinds whose listing its account refused, until they list again (a refusal spell)
	offerOK        map[string]bool      // offer key → a create of it succeeded
	lastRefusal    map[string]string    // fleet → the last create refusal
	acquired       map[string]bool      // request ids handed out by Acquire whose busy intent the loop has not taken yet
	picking        map[string]int       // replica mode: request ids picked by an Acquire whose busy intent is not queued yet
	answered       map[string]time.Time // request id → when its create answered
	createMissed   map[string]time.Time // request id → start of the last listing that showed nothing that could be its instance (see noteMisses)
	listedFrom     map[string]time.Time // request id of a create without an instance → start of the last listing that covered its kind (see lateCreateOpen)
	rebuy          map[string]*rebuyLog // fleet → recent demand, which sizes the re-buy hold (rebuy.go)

	keysListed       map[string]time.Time // provider → its last successful SSH key listing
	listFails        map[string]int       // "vms/", "metal/" (kindKey), "vpcs/" or "keys/" + provider → failures in a row of that part of its listing
	listRetry        map[string]time.Time // the same → not tried again before (see failWait)
	vpcDelRefused    map[string]bool      // VPC id → its last delete was refused outright (it is still there)
	vpcDelAnswered   map[string]time.Time // VPC id → when its last delete call answered
	deadlineDeferred map[string]bool      // "provisioning/" or "agent/" + request id → that deadline passed inside its prepaid minimum (said once)

	evMu      sync.Mutex // guards pending
	deliverMu sync.Mutex // one delivering goroutine at a time
	pending   []Event

	bgCtx    context.Context
	bgCancel context.CancelFunc
	bg       sync.WaitGroup
}

// NewManager checks cfg, reads the Store (so a restarted Manager knows its
// fleets and instances at once), settles the owner and returns a Manager.
// It makes no provider calls: the first loop step lists the providers.
// A Config that cannot work answers ErrInvalidConfig (errors.Is), saying
// which field; a Store that cannot be read answers its error.
func NewManager(cfg Config) (*Manager, error) {
	if len(cfg.Providers) == 0 {
		return nil, invalidConfig(errors.New("gpufleet: Config.Providers is empty"))
	}
	if isNil(cfg.Agent) {
		cfg.Agent = nil // a nil *shim.Starter means no agent, like a nil interface
	}
	if cfg.Store != nil && isNil(cfg.Store) {
		return nil, invalidConfig(fmt.Errorf("gpufleet: Config.Store is a nil %T (leave it nil for a MemoryStore)", cfg.Store))
	}
	if cfg.Clock != nil && isNil(cfg.Clock) {
		return nil, invalidConfig(fmt.Errorf("gpufleet: Config.Clock is a nil %T (leave it nil for the process clock)", cfg.Clock))
	}
	if err := cfg.Policy.validate(); err != nil {
		return nil, invalidConfig(err)
	}
	if cfg.Interval < 0 || cfg.CatalogTTL < 0 {
		return nil, invalidConfig(errors.New("gpufleet: Config.Interval and CatalogTTL must not be negative"))
	}
	if cfg.Owner != "" {
		if err := ValidateOwner(cfg.Owner); err != nil {
			return nil, invalidConfig(err)
		}
	}
	m := &Manager{cfg: cfg, pol: cfg.Policy.withDefaults(), clock: cfg.Clock, store: cfg.Store, log: cfg.Logger,
		providers: map[string]Provider{}, pass: make(chan struct{}, 1), done: make(chan struct{})}
	m.initMaps()
	for _, p := range cfg.Providers {
		if isNil(p) {
			return nil, invalidConfig(errors.New("gpufleet: Config.Providers has a nil provider"))
		}
		if _, dup := m.providers[p.Name()]; dup {
			return nil, invalidConfig(fmt.Errorf("gpufleet: provider %q given twice", p.Name()))
		}
		m.providers[p.Name()] = p
		m.order = append(m.order, p.Name())
	}
	if m.clock == nil {
		m.clock = realClock{}
	}
	if m.store == nil {
		m.store = NewMemoryStore()
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.cfg.Interval <= 0 {
		m.cfg.Interval = 10 * time.Second
	}
	m.catalog = newCatalog(cfg.Providers, cfg.CatalogTTL, m.clock.Now)
	m.bgCtx, m.bgCancel = context.WithCancel(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), m.pol.CallTimeout)
	defer cancel()
	owner, err := settleOwner(ctx, m.store, cfg.Owner)
	if err != nil {
		return nil, err
	}
	m.owner = owner
	if cfg.ReplicaID != "" {
		ls, ok := m.store.(LeaseStore)
		if !ok || cfg.Owner == "" {
			return nil, invalidConfig(errors.New("gpufleet: Config.ReplicaID needs a LeaseStore as Config.Store and Config.Owner"))
		}
		m.rep = &replica{ls: ls, holder: cfg.ReplicaID, selfID: selfHolder(cfg.ReplicaID), ttl: m.pol.LeaseTTL, held: map[string]Lease{}, heldAt: map[string]time.Time{},
			applied: map[string]int64{}, written: map[string]int64{}, acked: map[string]int64{}, keys: map[string]PrivateKey{}, unread: map[string]bool{},
			voided: map[string]time.Time{}, voids: map[string]Intent{}, readFrom: map[string]time.Time{}, gates: map[string]markGate{}}
		m.loaded = true // records are read fleet by fleet as their leases are taken
	}
	if err := m.load(ctx); err != nil {
		return nil, fmt.Errorf("gpufleet: reading the store: %w", err)
	}
	m.startedAt = m.clock.Now()
	m.loadSettle(ctx)
	return m, nil
}

func (m *Manager) initMaps() {
	m.fleets, m.insts, m.byFleet = map[string]*FleetRecord{}, map[string]*InstanceRecord{}, map[string]map[string]*InstanceRecord{}
	m.counts = map[string]int{}
	m.unsettled, m.down, m.settleStored = map[string]time.Time{}, map[string]bool{}, map[string]time.Time{}
	m.dirtyF, m.dirtyI, m.goneF, m.goneI = map[string]bool{}, map[string]bool{}, map[string]bool{}, map[string]bool{}
	m.writeFailed, m.orphanGone = map[string]bool{}, map[string]bool{}
	m.tasks = newTaskSet()
	m.obs, m.seen, m.kindsListed, m.keysDirty = map[string]*observation{}, map[string]time.Time{}, map[string]kindSet{}, map[string]bool{}
	m.shown = map[string]time.Time{}
	m.lastFull, m.suspect, m.rescanned = map[string]time.Time{}, map[string]time.Time{}, map[string]kindSet{}
	m.rescanRetry = map[string]time.Time{}
	m.keysListed, m.listFails, m.listRetry = map[string]time.Time{}, map[string]int{}, map[string]time.Time{}
	m.vpcDelRefused, m.deadlineDeferred = map[string]bool{}, map[string]bool{}
	m.vpcDelAnswered = map[string]time.Time{}
	m.vpcListed = map[string]time.Time{}
	m.reported, m.orphanVPCs, m.deletedVPCs = map[string]bool{}, map[string]*VPCRecord{}, map[string]time.Time{}
	m.fleetRetry, m.fleetFails, m.avoid = map[string]time.Time{}, map[string]int{}, map[string]avoidance{}
	m.agentCancel, m.ownKeys, m.keyObs = map[string]context.CancelFunc{}, map[string]int{}, map[string][]SSHKey{}
	m.keyRetry, m.keyFails = map[string]time.Time{}, map[string]int{}
	m.agentChecked, m.relabel, m.labelNext = map[string]time.Time{}, map[string]bool{}, map[string]time.Time{}
	m.providerHold, m.holdFails, m.offerOK = map[string]time.Time{}, map[string]int{}, map[string]bool{}
	m.kindHold = map[string]time.Time{}
	m.listRefused = map[string]kindSet{}
	m.lastRefusal, m.acquired, m.answered = map[string]string{}, map[string]bool{}, map[string]time.Time{}
	m.createMissed = map[string]time.Time{}
	m.listedFrom = map[string]time.Time{}
	m.picking = map[string]int{}
	m.agentNext, m.keyedAgents, m.abandoned = map[string]time.Time{}, map[string]Agent{}, map[string]bool{}
	m.agentPathDown = map[string]time.Time{}
	m.agentVerdict = map[string]bool{}
	m.keyMissing, m.keyMissingSaid, m.deadlineMisses = map[string]bool{}, map[string]bool{}, map[string]int{}
	m.readAt, m.attachRefused = map[string]time.Time{}, map[string]bool{}
}

// Owner returns the owner id this Manager writes into its labels.
func (m *Manager) Owner() string { return m.owner }

// isNil reports whether v is nil or an interface holding a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// ErrNotStored is answered (errors.Is) by CloseContext when records could
// not be written to the Store before it gave up; the store's error is
// wrapped too.
var ErrNotStored = errors.New("gpufleet: records not stored at Close")

// CloseRetryCalls is how long Close keeps writing the records a Store
// refuses, in units of Policy.CallTimeout (3: 4.5 minutes by default): it
// starts no try after that much process time, nor once the pauses between
// its tries (on the Manager's clock) add up to it; a try under way then
// ends within Policy.CallTimeout. CloseContext takes its bound from its
// ctx instead.
const CloseRetryCalls = 3

// Close is CloseContext bounded by CloseRetryCalls × Policy.CallTimeout (4.5
// minutes by default, see CloseRetryCalls); what it could not store by then
// is said with EventStoreWriteFailed (see CloseContext). A process
// with a shorter deadline to stop (a SIGTERM's grace period) calls
// CloseContext with it.
func (m *Manager) Close() {
	bound := CloseRetryCalls * m.pol.CallTimeout
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_ = m.closeWith(ctx, bound)
}

// CloseContext stops the loop and every task under way (agent starts,
// provider calls) and waits for them to end; the results that came back
// are applied and written to the Store. What a call recorded before Close
// and the loop had not carried out yet (an Apply, a Delete, a Release, a
// MarkBusy or MarkIdle, the busy mark of a node Acquire handed out) is
// carried out into the records and written to the Store too, so that a
// new Manager with the same Store makes the provider calls it decided (a
// create, a release) and finds a node handed out by Acquire busy. The
// instances stay as they are: a new Manager with the same Store resumes
// them.
//
// A Store that refuses writes (down, failing over) is written again with
// backoff (1 s doubled up to 30 s, each try bounded by Policy.CallTimeout)
// until every changed record is stored or ctx ends (a ctx that never ends
// keeps it trying while the Store stays down): a call that returned nil is
// never lost while the Store comes back by then. When ctx ends
// first, CloseContext returns an error answering ErrNotStored and wrapping
// the store's, and says so with EventStoreWriteFailed; what the records
// not stored held since their last write is then lost to a new Manager:
// busy marks (a node Acquire handed out can be handed out again), idle
// marks (the node stays busy, and bills, until MarkIdle is called again),
// Deletes and Applies (call them again), releases decided (one not called
// yet is not made; one the provider accepted is found gone by the new
// Manager's first listing, and Acquire hands out no node read from the
// Store before a listing of the new Manager has shown it). With replicas
// the calls' intents are in the shared store before they answer nil and
// are carried out by the replica taking the fleet over: CloseContext writes
// once and gives its leases up at once rather than after the TTL, and
// still reports records it could not write.
//
// Every method returns ErrClosed after Close; a call that Close overtakes
// returns ErrClosed rather than record anything. Close and CloseContext
// are idempotent: a later call returns nil at once.
func (m *Manager) CloseContext(ctx context.Context) error {
	return m.closeWith(ctx, 0)
}

// closeWith is CloseContext, its record writes also bounded by bound on
// the Manager's clock (0: by ctx alone).
func (m *Manager) closeWith(ctx context.Context, bound time.Duration) error {
	if !m.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(m.done)
	m.bgCancel()
	m.pass <- struct{}{} // wait for a step under way
	m.bg.Wait()
	m.catalog.Close()
	m.mu.Lock()
	now := m.clock.Now()
	m.applyIntents(now) // the calls that take m.mu from here on see closed
	m.drainResults(now)
	m.mu.Unlock()
	err := m.flushAtClose(ctx, now, bound)
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.pol.CallTimeout)
	defer cancel()
	if m.rep != nil { // the voids of failed Acquires not stored yet: a last try
		m.mu.Lock()
		voids := slices.Collect(maps.Values(m.rep.voids))
		m.mu.Unlock()
		_, _ = storeVoids(cctx, m.rep.ls, voids)
	}
	if m.rep != nil { // hand everything over at once rather than after the TTL
		for _, l := range append(slices.Collect(maps.Values(m.rep.held)), m.rep.gc, m.rep.self) {
			if l.Token != 0 {
				_ = m.rep.ls.ReleaseLease(cctx, l)
			}
		}
	}
	<-m.pass
	return err
}

// flushAtClose writes the records at Close: again with backoff while the
// store refuses them (one Manager alone), until ctx ends or the waits
// between tries add up to bound (> 0; counted, not read off the clock, so
// that a clock that does not move, such as a stepped test clock, cannot
// keep Close for ever). What is still not stored then is said with
// EventStoreWriteFailed and returned as ErrNotStored.
func (m *Manager) flushAtClose(ctx context.Context, start time.Time, bound time.Duration) error {
	wait, waited := time.Second, time.Duration(0)
	for {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.pol.CallTimeout)
		err := m.flush(fctx)
		cancel()
		if err == nil {
			return nil
		}
		if m.rep == nil && ctx.Err() == nil && (bound <= 0 || waited+wait <= bound) {
			if m.clock.Sleep(ctx, wait) == nil {
				waited += wait
				wait = min(2*wait, 30*time.Second)
				continue
			}
		}
		now := m.clock.Now()
		m.mu.Lock()
		n := len(m.dirtyF) + len(m.dirtyI) + len(m.goneF) + len(m.goneI)
		lost := "a new Manager on this Store does not know what they changed since their last write " +
			"(busy and idle marks, Deletes, Applies, releases)"
		if m.rep != nil {
			lost = "the replica taking their fleets over carries out the stored intents again"
		}
		m.event(Event{Type: EventStoreWriteFailed, Err: err.Error(), Message: fmt.Sprintf(
			"Close gave up after %s: %d record changes not stored; %s", now.Sub(start).Round(time.Second), n, lost)})
		m.mu.Unlock()
		m.deliver()
		return fmt.Errorf("%w (%d record changes): %w", ErrNotStored, n, err)
	}
}

// Offers returns the offers of every provider that match r, cheapest first;
// failures of single providers come back beside the others' offers.
func (m *Manager) Offers(ctx context.Context, r Requirements) ([]Offer, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	return m.catalog.Offers(ctx, r)
}

// Fleets returns the specs of the fleets the Manager keeps (deleting ones
// included, and those applied but not yet taken up by the loop), by name.
// Private keys are not returned. With replicas they are read from the
// shared store; when that read fails, the fleets this replica knows are
// returned, which may be fewer than the store has: ListFleets says when.
func (m *Manager) Fleets() []Spec {
	specs, _ := m.ListFleets(context.Background())
	return specs
}

// ListFleets is Fleets with its error: with replicas, when the shared
// store cannot be read (its error, or ctx or Policy.CallTimeout cut the
// read), it returns the fleets this replica knows and an error answering
// ErrStoreUnreadable and wrapping the store's: a fleet missing from the
// list is then not known to be gone. Without replicas it fails only after
// Close (ErrClosed, and no fleet).
func (m *Manager) ListFleets(ctx context.Context) ([]Spec, error) {
	if m.closed.Load() {
		return nil, ErrClosed
	}
	if m.rep == nil {
		return m.localSpecs(), nil
	}
	return m.storedSpecs(ctx)
}

// localSpecs is the specs this Manager knows: its fleets and the Applies
// queued for its loop.
func (m *Manager) localSpecs() []Spec {
	m.mu.Lock()
	byName := map[string]Spec{}
	for name, f := range m.fleets {
		byName[name] = f.Spec
	}
	// Read under m.mu: the loop takes an intent from the queue and applies it
	// under m.mu, so a fleet is always in one of the two here.
	for _, s := range m.intents.pendingSpecs() {
		byName[s.Name] = s
	}
	m.mu.Unlock()
	out := make([]Spec, 0, len(byName))
	for _, s := range byName {
		s = cloneSpec(s)
		s.PrivateKey = PrivateKey{}
		out = append(out, s)
	}
	sortSpecs(out)
	return out
}

// Instances returns the instances of a fleet ("" for instances no fleet
// claims), terminated ones included (until Policy.HistoryRetention), oldest
// first.
func (m *Manager) Instances(fleet string) []Instance {
	m.mu.Lock()
	defer m.mu.Unlock()
	var recs []*InstanceRecord
	if fleet != "" {
		for _, r := range m.byFleet[fleet] {
			recs = append(recs, r)
		}
	} else {
		for _, r := range m.insts {
			if r.Instance.Fleet == "" || r.Orphan {
				recs = append(recs, r)
			}
		}
	}
	sortRecords(recs)
	out := make([]Instance, 0, len(recs))
	for _, r := range recs {
		out = append(out, cloneInst(r.Instance))
	}
	return out
}

// Records returns every instance record (for inspection and reports).
func (m *Manager) Records() []InstanceRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []InstanceRecord
	for _, r := range m.sortedRecords() {
		out = append(out, cloneInstance(*r))
	}
	return out
}

// storedSpecs returns every fleet of the shared store and of its pending
// apply intents (replica mode: other replicas' fleets included).
func (m *Manager) storedSpecs(ctx context.Context) ([]Spec, error) {
	ctx, cancel := context.WithTimeout(ctx, m.pol.CallTimeout)
	defer cancel()
	byName := map[string]Spec{}
	fleets, ferr := m.rep.ls.Fleets(ctx)
	for _, f := range fleets {
		byName[f.Spec.Name] = f.Spec
	}
	ins, ierr := m.rep.ls.Intents(ctx, "")
	for _, in := range ins {
		if in.Kind == IntentApply {
			byName[in.Fleet] = in.Spec
		}
	}
	var err error
	if ferr != nil || ierr != nil {
		for _, s := range m.localSpecs() { // what this replica knows, rather than nothing
			if _, ok := byName[s.Name]; !ok {
				byName[s.Name] = s
			}
		}
		err = fmt.Errorf("%w: listing fleets: %w", ErrStoreUnreadable, errors.Join(ferr, ierr))
	}
	out := make([]Spec, 0, len(byName))
	for _, s := range byName {
		s = cloneSpec(s)
		s.PrivateKey = PrivateKey{}
		out = append(out, s)
	}
	sortSpecs(out)
	return out, err
}
