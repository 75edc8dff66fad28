package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"
)

// Clock is the Manager's source of time (the same shape as sim.Clock, so a
// sped-up simulator clock can drive it).
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

// Config configures a Manager.
type Config struct {
	// Providers are the clouds the Manager may rent from (at least one).
	Providers []Provider
	// Agent starts and checks the host agent; nil means no agent: an
	// instance is ready as soon as its provider says running.
	Agent Agent
	// Policy holds the timing rules; zero fields take defaults.
	Policy Policy
	// Store keeps records across restarts (default: NewMemoryStore()).
	Store Store
	// Logger receives one line per event (default: discard).
	Logger *slog.Logger
	// OnEvent, if set, is called for every event, in order, outside the
	// Manager's locks; it must not block for long.
	OnEvent func(Event)
	// Clock is the source of time (default: the process clock).
	Clock Clock
	// Interval is the pause between reconcile passes in Run (default 10 s).
	Interval time.Duration
	// CatalogTTL is how long offers are cached (default DefaultCatalogTTL).
	CatalogTTL time.Duration
}

// Manager provisions fleets, watches their instances, starts their agent,
// releases them by policy and retries every release until the provider
// confirms the machine gone. It never forgets an instance that may still
// bill. All methods are safe for concurrent use.
type Manager struct {
	cfg       Config
	pol       Policy
	clock     Clock
	store     Store
	log       *slog.Logger
	providers map[string]Provider
	order     []string // provider names in Config order
	catalog   *Catalog

	// pass is a one-slot semaphore: one reconcile pass at a time. A channel,
	// not a mutex, so that a goroutine waiting for it is durably blocked
	// inside a testing/synctest bubble and the bubble's clock can advance.
	pass   chan struct{}
	mu     sync.Mutex // guards everything below
	loaded bool
	fleets map[string]*FleetRecord
	insts  map[string]*InstanceRecord // by request id
	dirtyF map[string]bool
	dirtyI map[string]bool
	goneF  map[string]bool // fleets to delete from the store
	goneI  map[string]bool // instances to delete from the store

	unlabelled     map[string]bool // provider/id reported once
	orphanVPCs     map[string]*VPCRecord
	deletedVPCs    map[string]bool      // deleted by a fleet; ignored while lists still show them
	fleetRetry     map[string]time.Time // no create attempt for the fleet before
	fleetFails     map[string]int
	avoid          map[string]time.Time          // fleet|offer key → skip the offer until
	agents         map[string]context.CancelFunc // running agent starts by request id
	agentNext      map[string]time.Time
	keyedAgents    map[string]Agent
	abandoned      map[string]bool // provider/id untracked by ReleaseCompat: never adopted again
	keyMissing     map[string]bool // fleets whose private key was lost with a restart
	keyMissingSaid map[string]bool
	deadlineMisses map[string]int // consecutive deadline misses per fleet

	evMu      sync.Mutex // guards pending
	deliverMu sync.Mutex // one delivering goroutine at a time
	pending   []Event

	bgCtx    context.Context
	bgCancel context.CancelFunc
	bg       sync.WaitGroup
}

// NewManager checks cfg, reads the Store (so a restarted Manager knows its
// fleets and instances at once) and returns a Manager. It makes no provider
// calls: the first Reconcile lists the providers.
func NewManager(cfg Config) (*Manager, error) {
	if len(cfg.Providers) == 0 {
		return nil, errors.New("gpufleet: Config.Providers is empty")
	}
	if isNil(cfg.Agent) {
		cfg.Agent = nil // a nil *shim.Starter means no agent, like a nil interface
	}
	if err := cfg.Policy.validate(); err != nil {
		return nil, err
	}
	if cfg.Interval < 0 || cfg.CatalogTTL < 0 {
		return nil, errors.New("gpufleet: Config.Interval and CatalogTTL must not be negative")
	}
	m := &Manager{cfg: cfg, pol: cfg.Policy.withDefaults(), clock: cfg.Clock, store: cfg.Store, log: cfg.Logger,
		providers: map[string]Provider{}, fleets: map[string]*FleetRecord{}, insts: map[string]*InstanceRecord{},
		dirtyF: map[string]bool{}, dirtyI: map[string]bool{}, goneF: map[string]bool{}, goneI: map[string]bool{},
		unlabelled: map[string]bool{}, orphanVPCs: map[string]*VPCRecord{}, deletedVPCs: map[string]bool{}, fleetRetry: map[string]time.Time{},
		fleetFails: map[string]int{}, avoid: map[string]time.Time{}, agents: map[string]context.CancelFunc{}, agentNext: map[string]time.Time{},
		keyedAgents: map[string]Agent{}, abandoned: map[string]bool{}, keyMissing: map[string]bool{}, keyMissingSaid: map[string]bool{},
		deadlineMisses: map[string]int{}, pass: make(chan struct{}, 1)}
	for _, p := range cfg.Providers {
		if isNil(p) {
			return nil, errors.New("gpufleet: Config.Providers has a nil provider")
		}
		if _, dup := m.providers[p.Name()]; dup {
			return nil, fmt.Errorf("gpufleet: provider %q given twice", p.Name())
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
	m.catalog = NewCatalog(cfg.Providers, cfg.CatalogTTL)
	if err := m.load(context.Background()); err != nil {
		return nil, fmt.Errorf("gpufleet: reading the store: %w", err)
	}
	m.bgCtx, m.bgCancel = context.WithCancel(context.Background())
	return m, nil
}

// isNil reports whether v is nil or an interface holding a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// Close stops the agent starts in flight and waits for them. The instances
// stay as they are; a new Manager with the same Store resumes them.
func (m *Manager) Close() {
	m.bgCancel()
	m.bg.Wait()
	m.catalog.Close()
	m.deliver()
}

// Run reconciles every Config.Interval until ctx ends, then returns ctx.Err().
// A failed pass is logged and retried on the next tick.
func (m *Manager) Run(ctx context.Context) error {
	for {
		if err := m.Reconcile(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("reconcile failed", "err", err)
		}
		if err := m.clock.Sleep(ctx, m.cfg.Interval); err != nil {
			return err
		}
	}
}

// Offers returns the offers of every provider that match r, cheapest first;
// failures of single providers come back beside the others' offers.
func (m *Manager) Offers(ctx context.Context, r Requirements) ([]Offer, error) {
	return m.catalog.Offers(ctx, r)
}

// Apply creates or updates a fleet's desired state. The next Reconcile acts
// on it. Changed requirements or placement apply to instances created from
// then on; existing members stay (release them to replace them). Applying
// again also resumes a stalled fleet and gives back a fleet's private key
// after a restart. Returns an error for an invalid spec (see Spec), a
// provider name that is not configured, or a fleet being deleted.
func (m *Manager) Apply(ctx context.Context, spec Spec) error {
	if err := spec.validate(); err != nil {
		return err
	}
	for _, name := range spec.Requirements.Providers {
		if !containsFold(m.order, name) {
			return fmt.Errorf("gpufleet: fleet %s: provider %q is not configured (have %v)", spec.Name, name, m.order)
		}
	}
	if spec.Placement == "" {
		spec.Placement = PlacementAny
	}
	if err := m.load(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	f, ok := m.fleets[spec.Name]
	if ok && f.Deleting {
		m.mu.Unlock()
		return fmt.Errorf("gpufleet: fleet %s is being deleted", spec.Name)
	}
	if !ok {
		f = &FleetRecord{Created: m.clock.Now()}
		m.fleets[spec.Name] = f
	}
	f.Spec = cloneSpec(spec)
	f.KeyRequired = !spec.PrivateKey.IsZero()
	delete(m.keyMissing, spec.Name)
	delete(m.keyMissingSaid, spec.Name)
	f.Stalled = false
	delete(m.deadlineMisses, spec.Name)
	delete(m.keyedAgents, spec.Name)
	delete(m.fleetRetry, spec.Name)
	m.dirtyF[spec.Name] = true
	m.event(Event{Type: EventFleetApplied, Fleet: spec.Name, Message: fmt.Sprintf("nodes=%d placement=%s", spec.Nodes, spec.Placement)})
	m.mu.Unlock()
	return m.flush(ctx)
}

// Delete marks a fleet for deletion: every instance is released (by the
// release policy) and, once all are confirmed gone, its VPC. The fleet
// disappears after that (EventFleetDeleted). It returns at once.
func (m *Manager) Delete(ctx context.Context, name string) error {
	if err := m.load(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	f, ok := m.fleets[name]
	if !ok {
		m.mu.Unlock()
		return fmt.Errorf("gpufleet: fleet %s: %w", name, ErrNotFound)
	}
	f.Deleting = true
	m.dirtyF[name] = true
	now := m.clock.Now()
	for _, r := range m.insts {
		if r.Instance.Fleet == name && r.Termination == nil && r.Instance.Status != StatusTerminated {
			m.requestRelease(r, "fleet deleted", m.policyFor(f), now, true)
		}
	}
	m.mu.Unlock()
	return m.flush(ctx)
}

// Fleets returns the specs of the fleets the Manager keeps (deleting ones
// included), by name. Private keys are not returned.
func (m *Manager) Fleets() []Spec {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Spec, 0, len(m.fleets))
	for _, f := range m.fleets {
		s := cloneSpec(f.Spec)
		s.PrivateKey = PrivateKey{}
		out = append(out, s)
	}
	sortSpecs(out)
	return out
}

// Instances returns the instances of a fleet ("" for instances no fleet
// claims), terminated ones included, oldest first.
func (m *Manager) Instances(fleet string) []Instance {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Instance
	for _, r := range m.sortedRecords() {
		if r.Instance.Fleet == fleet || (fleet == "" && r.Orphan) {
			out = append(out, cloneInst(r.Instance))
		}
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
