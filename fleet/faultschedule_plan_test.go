package fleet_test

import (
	"crypto/ed25519"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"golang.org/x/crypto/ssh"
)

// schedule is one seed's plan: everything is drawn from the seed up front,
// so the plan prints whole and replays (instances are picked at run time
// by index among those the Manager has).
type schedule struct {
	seed           uint64
	crashes        bool
	runLoop        bool          // Run in a goroutine (even seeds) or Reconcile every 10 s
	interval       time.Duration // Config.Interval: how often providers are listed
	opsEnd         time.Duration // the teardown starts then
	teardownPolicy fleet.ReleasePolicy
	actions        []action // by time
}

type actKind int

const (
	actFleet   actKind = iota // a new fleet is applied
	actApply                  // a fleet's size changes
	actDelete                 // a fleet is deleted
	actRelease                // one instance is released
	actBusy                   // one idle instance is marked busy
	actIdle                   // one busy instance is marked idle
	actVanish                 // one instance is deleted behind the Manager's back
	actFault                  // a fault is armed in a fake
	actSlow                   // provider calls answer slowly for a while
	actHide                   // new instances are missing from List and Get for a while after their create
	actCrash                  // the process crashes (now, or on an event or call)
)

func (k actKind) String() string {
	return [...]string{"fleet", "apply", "delete", "release", "busy", "idle", "vanish", "fault", "slow", "hide", "crash"}[k]
}

type action struct {
	At     time.Duration
	Kind   actKind
	Fleet  string
	Nodes  int
	Index  int // which instance (release, busy, idle, vanish)
	Policy fleet.ReleasePolicy
	Spec   fleet.Spec // actFleet
	Hot    bool       // actFault: on Hot Aisle (else Vultr)
	Fault  sim.Fault
	For    time.Duration // actSlow, actHide: the window
	Max    time.Duration // actSlow: the longest wait; actHide: the longest hiding
	Crash  crashPlan
}

// crashPlan says when the process dies and how it comes back.
type crashPlan struct {
	Trigger    string          // "timer" (at once), "event" or "call"
	Event      fleet.EventType // Trigger "event": inside OnEvent of the first such event
	Method     string          // Trigger "call": around the first such provider call
	AfterCall  bool            // after the call returned (else before it is made)
	EmptyStore bool            // the new process has an empty Store (same owner)
	Reapply    bool            // the new process applies the desired state again
}

// fleetKind is a kind of fleet the schedules draw.
type fleetKind int

const (
	vultrVMs fleetKind = iota
	vultrCluster
	hotVMs
	vultrMetal
	hotMetal
)

var kindMax = [...]int{vultrVMs: 4, vultrCluster: 3, hotVMs: 3, vultrMetal: 2, hotMetal: 1}

func newSchedule(seed uint64, crashes bool) *schedule {
	stream := uint64(0x5eed)
	if crashes {
		stream++ // other fleets and faults than the fault schedule of the same seed
	}
	r := rand.New(rand.NewPCG(seed, stream))
	s := &schedule{seed: seed, crashes: crashes, runLoop: seed%2 == 0,
		opsEnd: time.Duration(20+r.IntN(31)) * time.Minute}
	// The default list interval and longer ones, which also keep hundreds
	// of schedules within budget (listing is most of the cost).
	s.interval = []time.Duration{10 * time.Second, 30 * time.Second, time.Minute}[r.IntN(3)]
	if r.IntN(2) == 0 {
		s.teardownPolicy = fleet.ReleaseNow
	}
	g := &planner{r: r, s: s, kinds: map[string]fleetKind{}, metal: r.IntN(8) == 0}
	for range 1 + r.IntN(3) {
		g.newFleet(time.Duration(r.IntN(60)) * time.Second) // before the operations
	}
	g.operations(3 + r.IntN(10))
	for range 2 + r.IntN(8) {
		g.fault(g.at(0))
	}
	for range r.IntN(3) {
		g.window(actSlow, g.at(0))
	}
	for range r.IntN(3) {
		g.window(actHide, g.at(0))
	}
	if crashes {
		for range 2 + r.IntN(3) {
			g.crash(g.at(2 * time.Minute))
		}
	}
	slices.SortStableFunc(s.actions, func(a, b action) int { return int(a.At - b.At) })
	return s
}

// planner draws a schedule's actions.
type planner struct {
	r      *rand.Rand
	s      *schedule
	kinds  map[string]fleetKind
	alive  []string // fleets applied and not deleted, in the order of the operations drawn so far
	metal  bool     // this schedule may rent bare metal
	fleets int
}

func (g *planner) add(a action) { g.s.actions = append(g.s.actions, a) }

// at draws a time in [from, opsEnd).
func (g *planner) at(from time.Duration) time.Duration {
	return from + time.Duration(g.r.Int64N(int64(g.s.opsEnd-from)/int64(time.Second)))*time.Second
}

func (g *planner) newFleet(at time.Duration) {
	g.fleets++
	name := fmt.Sprintf("f%d", g.fleets)
	kind := fleetKind(g.r.IntN(3))
	if g.metal && g.r.IntN(3) == 0 {
		kind = vultrMetal + fleetKind(g.r.IntN(2))
	}
	g.kinds[name] = kind
	g.alive = append(g.alive, name)
	g.add(action{At: at, Kind: actFleet, Spec: g.spec(name, kind)})
}

func (g *planner) spec(name string, kind fleetKind) fleet.Spec {
	r := g.r
	s := fleet.Spec{Name: name, Nodes: 1 + r.IntN(kindMax[kind])}
	some := func(all ...string) []string { return all[:1+r.IntN(len(all))] }
	switch kind {
	case vultrVMs:
		s.Requirements = fleet.Requirements{Providers: []string{"vultr"}, InstanceTypes: some(vm, "vc2-1c-2gb"),
			Regions: some("ewr", "ord")}
	case vultrCluster:
		s.Requirements = fleet.Requirements{Providers: []string{"vultr"}, InstanceTypes: []string{"vc2-2c-4gb"},
			Regions: []string{[]string{"ewr", "ord"}[r.IntN(2)]}}
		s.Placement = fleet.PlacementCluster
	case hotVMs:
		s.Requirements = fleet.Requirements{Providers: []string{"hotaisle"}, InstanceTypes: some("vm-mi300x-1", "vm-mi300x-2")}
	case vultrMetal:
		s.Requirements = fleet.Requirements{Providers: []string{"vultr"}, InstanceTypes: []string{"vbm-24c-256gb-amd"}, Regions: []string{"ewr"}}
	case hotMetal:
		s.Requirements = fleet.Requirements{Providers: []string{"hotaisle"}, InstanceTypes: []string{"bm-mi300x-8"}}
	}
	if r.IntN(10) < 3 {
		s.ReleasePolicy = fleet.ReleaseNow
	}
	if r.IntN(4) == 0 {
		s.IdleTimeout = time.Duration(15+r.IntN(31)) * time.Minute
		s.MinNodes = r.IntN(2)
	}
	if r.IntN(5) < 2 {
		s.SSHKeys = []string{authorizedKey(r)}
	}
	return s
}

// authorizedKey draws an ed25519 public key in authorized_keys form.
func authorizedKey(r *rand.Rand) string {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(r.Uint32())
	}
	pub, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(seed).Public())
	if err != nil {
		panic(err)
	}
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " schedule"
}

// operations draws n operations at increasing times, each on a fleet alive then.
func (g *planner) operations(n int) {
	times := make([]time.Duration, n)
	for i := range times {
		times[i] = g.at(time.Minute)
	}
	slices.Sort(times)
	for _, at := range times {
		if len(g.alive) == 0 || g.r.IntN(12) == 0 {
			g.newFleet(at)
			continue
		}
		i := g.r.IntN(len(g.alive))
		name := g.alive[i]
		a := action{At: at, Fleet: name, Index: g.r.IntN(4)}
		switch k := g.r.IntN(100); {
		case k < 35:
			a.Kind, a.Nodes = actApply, g.r.IntN(kindMax[g.kinds[name]]+1)
		case k < 45:
			a.Kind = actDelete
			if g.r.IntN(2) == 0 {
				a.Policy = fleet.ReleaseNow
			}
			g.alive = slices.Delete(g.alive, i, i+1)
		case k < 65:
			a.Kind = actRelease
			if g.r.IntN(3) == 0 {
				a.Policy = fleet.ReleaseNow
			}
		case k < 80:
			a.Kind = actBusy
		case k < 94:
			a.Kind = actIdle
		default:
			a.Kind = actVanish
		}
		g.add(a)
	}
}

// window opens a slow or hide window.
func (g *planner) window(kind actKind, at time.Duration) {
	a := action{At: at, Kind: kind, For: time.Duration(2+g.r.IntN(25)) * time.Minute}
	if kind == actSlow {
		// Up to 4 min before and after a call: past CallTimeout and, for a
		// create, past CreateTimeout (its answer lost after it committed).
		a.Max = []time.Duration{5 * time.Second, 30 * time.Second, 2 * time.Minute, 4 * time.Minute}[g.r.IntN(4)]
	} else {
		// Mostly within VisibilityGrace (3 min); sometimes beyond it, when
		// the Manager may take the instance as vanished.
		a.Max = []time.Duration{30 * time.Second, 150 * time.Second, 4 * time.Minute}[g.r.IntN(3)]
	}
	g.add(a)
}

func (g *planner) crash(at time.Duration) {
	r := g.r
	p := crashPlan{EmptyStore: r.IntN(3) == 0}
	p.Reapply = r.IntN(10) < 5 || (p.EmptyStore && r.IntN(10) < 6)
	switch r.IntN(3) {
	case 0:
		p.Trigger = "timer"
	case 1:
		p.Trigger = "event"
		p.Event = []fleet.EventType{fleet.EventInstanceCreated, fleet.EventReleaseRequested, fleet.EventCreateUncertain,
			fleet.EventInstanceRunning, fleet.EventInstanceTerminated, fleet.EventFleetApplied, fleet.EventVPCCreated,
			fleet.EventTerminationRetry}[r.IntN(8)]
	default:
		p.Trigger = "call"
		p.Method = []string{"Create", "Create", "Delete", "List", "Get", "CreateVPC", "AttachVPC", "DeleteVPC"}[r.IntN(8)]
		p.AfterCall = r.IntN(2) == 0
	}
	g.add(action{At: at, Kind: actCrash, Crash: p})
}

// Routes the faults hit.
const (
	vCreate    = "POST /v2/instances"
	vMetal     = "POST /v2/bare-metals"
	vList      = "GET /v2/instances"
	vGet       = "GET /v2/instances/{id}"
	vDelete    = "DELETE /v2/instances/{id}"
	vAttach    = "POST /v2/instances/{id}/vpcs/attach"
	vVPCs      = "GET /v2/instances/{id}/vpcs"
	vVPCCreate = "POST /v2/vpcs"
	vVPCList   = "GET /v2/vpcs"
	vVPCDelete = "DELETE /v2/vpcs/{id}"
	hCreate    = "POST /api/teams/{team}/virtual_machines/"
	hMetal     = "POST /api/teams/{team}/bare_metal/"
	hList      = "GET /api/teams/{team}/virtual_machines/"
	hGet       = "GET /api/teams/{team}/virtual_machines/{vm}/"
	hDelete    = "DELETE /api/teams/{team}/virtual_machines/{vm}/"
	hLabel     = "PATCH /api/teams/{team}/virtual_machines/{vm}/"
	hKeys      = "POST /api/user/ssh_keys/"
)

// fault draws one fault of the clouds' repertoire.
func (g *planner) fault(at time.Duration) {
	r := g.r
	times := 1 + r.IntN(3)
	five := []int{500, 502, 503}[r.IntN(3)]
	hot := r.IntN(2) == 0
	var f sim.Fault
	switch k := r.IntN(13); {
	case k == 0: // 5xx before the create commits
		f = sim.Fault{Route: pick(r, hot, vCreate, hCreate), Times: times, Status: five}
	case k == 1: // 5xx after it commits
		f = sim.Fault{Route: pick(r, hot, vCreate, hCreate), Times: times, Status: five, AfterCommit: true}
	case k == 2 && g.metal:
		f = sim.Fault{Route: pick(r, hot, vMetal, hMetal), Times: 1, Status: five, AfterCommit: r.IntN(2) == 0}
	case k == 3: // sold out
		if hot {
			f = sim.Fault{Route: hCreate, Times: times, Status: http.StatusNotFound, Message: "No available virtual machine matching requested specifications"}
		} else {
			f = sim.Fault{Route: vCreate, Times: times, Status: http.StatusBadRequest, Message: "Plan is not available in the selected region."}
		}
	case k == 4: // a 429 burst
		route := sim.AnyRoute
		if r.IntN(2) == 0 {
			route = pick(r, hot, vList, hList)
		}
		f = sim.Fault{Route: route, Times: 3 + r.IntN(10), Status: http.StatusTooManyRequests, RetryAfter: time.Duration(1+r.IntN(5)) * time.Second}
	case k == 5:
		hot = false
		f = sim.Fault{Route: vAttach, Times: times + r.IntN(3), Status: 500, Message: "Unable to attach VPC"}
	case k == 6:
		hot = false
		f = sim.Fault{Route: vVPCDelete, Times: times + r.IntN(3), Status: http.StatusBadRequest,
			Message: "The following servers are attached to this VPC network: cb676a46-66fd-4dfb-b839-443f2e6c0b60"}
	case k == 7:
		f = sim.Fault{Route: pick(r, hot, vDelete, hDelete), Times: times, Status: five}
	case k == 8:
		f = sim.Fault{Route: pick(r, hot, vList, hList), Times: times, Status: five, Reset: r.IntN(3) == 0}
	case k == 9:
		f = sim.Fault{Route: pick(r, hot, vGet, hGet), Times: times, Status: five}
	case k == 10: // an outage
		f = sim.Fault{Route: sim.AnyRoute, Status: 503, Reset: r.IntN(2) == 0, Duration: time.Duration(1+r.IntN(12)) * time.Minute}
	case k == 11:
		hot = false
		f = sim.Fault{Route: []string{vVPCCreate, vVPCList, vVPCs}[r.IntN(3)], Times: times, Status: five, AfterCommit: r.IntN(2) == 0}
	default:
		hot = true
		f = sim.Fault{Route: []string{hKeys, hLabel}[r.IntN(2)], Times: times, Status: five}
	}
	g.add(action{At: at, Kind: actFault, Hot: hot, Fault: f})
}

func pick(r *rand.Rand, hot bool, vultrRoute, hotRoute string) string {
	if hot {
		return hotRoute
	}
	return vultrRoute
}

func (a action) String() string {
	s := fmt.Sprintf("%8s  %s", a.At, a.Kind)
	switch a.Kind {
	case actFleet:
		sp := a.Spec
		s += fmt.Sprintf(" %s nodes=%d %v %v %s", sp.Name, sp.Nodes, sp.Requirements.Providers, sp.Requirements.InstanceTypes, sp.Placement)
		if len(sp.Requirements.Regions) > 0 {
			s += fmt.Sprintf(" regions=%v", sp.Requirements.Regions)
		}
		if sp.ReleasePolicy != "" {
			s += " release=" + string(sp.ReleasePolicy)
		}
		if sp.IdleTimeout > 0 {
			s += fmt.Sprintf(" idle=%s min=%d", sp.IdleTimeout, sp.MinNodes)
		}
		if len(sp.SSHKeys) > 0 {
			s += " ssh-key"
		}
	case actApply:
		s += fmt.Sprintf(" %s nodes=%d", a.Fleet, a.Nodes)
	case actDelete, actRelease, actBusy, actIdle, actVanish:
		s += " " + a.Fleet
		if a.Kind != actDelete {
			s += fmt.Sprintf(" #%d", a.Index)
		}
		if a.Policy != "" {
			s += " policy=" + string(a.Policy)
		}
	case actFault:
		f := a.Fault
		s += fmt.Sprintf(" %s %q %d", map[bool]string{true: "hotaisle", false: "vultr"}[a.Hot], f.Route, f.Status)
		if f.Times > 0 {
			s += fmt.Sprintf(" ×%d", f.Times)
		}
		if f.Duration > 0 {
			s += fmt.Sprintf(" for %s", f.Duration)
		}
		if f.AfterCommit {
			s += " after-commit"
		}
		if f.Reset {
			s += " reset"
		}
		if f.RetryAfter > 0 {
			s += fmt.Sprintf(" retry-after=%s", f.RetryAfter)
		}
		if f.Message != "" {
			s += fmt.Sprintf(" %q", f.Message)
		}
	case actSlow, actHide:
		s += fmt.Sprintf(" for %s, up to %s", a.For, a.Max)
	case actCrash:
		c := a.Crash
		switch c.Trigger {
		case "event":
			s += " inside OnEvent(" + string(c.Event) + ")"
		case "call":
			s += fmt.Sprintf(" %s a %s call", map[bool]string{true: "after", false: "before"}[c.AfterCall], c.Method)
		default:
			s += " now"
		}
		s += map[bool]string{true: "; restart with an empty store", false: "; restart with the same store"}[c.EmptyStore]
		s += map[bool]string{true: ", desired state applied again", false: ""}[c.Reapply]
	}
	return s
}

func (s *schedule) String() string {
	var b strings.Builder
	mode := map[bool]string{true: "crash", false: "faults"}[s.crashes]
	driver := map[bool]string{true: "Run", false: "Reconcile every 10s"}[s.runLoop]
	fmt.Fprintf(&b, "schedule seed=%d mode=%s driver=%s interval=%s; teardown at %s (delete policy %q)\n", s.seed, mode, driver,
		s.interval, s.opsEnd, s.teardownPolicy)
	for _, a := range s.actions {
		b.WriteString(a.String() + "\n")
	}
	return b.String()
}
