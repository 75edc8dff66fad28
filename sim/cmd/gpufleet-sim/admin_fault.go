package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/gpufleet/gpufleet/sim"
)

// adminFault is the JSON of a fault (POST /_sim/faults, and the "armed"
// list of GET /_sim/faults): the fields of sim.Fault, keys matched
// case-insensitively ("route", "times", "probability", "status", "message",
// "aftercommit", "reset", "emptybody", "cutafter", "retryafter", "latency",
// "latencymax", "visibilitylag", "duration"); durations are Go duration
// strings ("20m", "1.5s").
type adminFault struct {
	Route         string
	Times         int
	Probability   float64
	Status        int
	Message       string
	AfterCommit   bool
	Reset         bool
	EmptyBody     bool
	CutAfter      int
	RetryAfter    adminDuration
	Latency       adminDuration
	LatencyMax    adminDuration
	VisibilityLag adminDuration
	Duration      adminDuration
}

// adminDuration is a Go duration string in JSON ("20m0s").
type adminDuration time.Duration

// MarshalJSON writes the duration as a Go duration string ("20m0s").
func (d adminDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a Go duration string.
func (d *adminDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration %s: want a Go duration string such as \"90s\" or \"20m\"", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration %q: want a Go duration string such as \"90s\" or \"20m\"", s)
	}
	*d = adminDuration(v)
	return nil
}

func (af adminFault) fault() sim.Fault {
	return sim.Fault{Route: af.Route, Times: af.Times, Probability: af.Probability, Status: af.Status,
		Message: af.Message, AfterCommit: af.AfterCommit, Reset: af.Reset, EmptyBody: af.EmptyBody,
		CutAfter: af.CutAfter, RetryAfter: time.Duration(af.RetryAfter), Latency: time.Duration(af.Latency),
		LatencyMax: time.Duration(af.LatencyMax), VisibilityLag: time.Duration(af.VisibilityLag),
		Duration: time.Duration(af.Duration)}
}

func adminFaultOf(f sim.Fault) adminFault {
	return adminFault{Route: f.Route, Times: f.Times, Probability: f.Probability, Status: f.Status,
		Message: f.Message, AfterCommit: f.AfterCommit, Reset: f.Reset, EmptyBody: f.EmptyBody,
		CutAfter: f.CutAfter, RetryAfter: adminDuration(f.RetryAfter), Latency: adminDuration(f.Latency),
		LatencyMax: adminDuration(f.LatencyMax), VisibilityLag: adminDuration(f.VisibilityLag),
		Duration: adminDuration(f.Duration)}
}

// armFault serves POST /_sim/faults: 201 with the fault as armed
// (defaults filled in), or 400.
func armFault(w http.ResponseWriter, r *http.Request, f fake) {
	var af adminFault
	if err := adminDecode(r.Body, &af); err != nil {
		adminError(w, http.StatusBadRequest, err)
		return
	}
	if af.Route == "" {
		adminError(w, http.StatusBadRequest,
			errors.New(`bad fault: "route" is required (GET /_sim/routes lists them, "*" is every route)`))
		return
	}
	if err := f.Inject(af.fault()); err != nil {
		if errors.Is(err, sim.ErrUnknownRoute) {
			err = fmt.Errorf(`bad fault: no route %q on this fake (GET /_sim/routes lists them, "*" is every route)`, af.Route)
		}
		adminError(w, http.StatusBadRequest, err)
		return
	}
	armed := f.ArmedFaults()
	adminJSON(w, http.StatusCreated, adminFaultOf(armed[len(armed)-1]))
}

// adminFaults is GET /_sim/faults.
type adminFaults struct {
	Armed []adminFault
	Fired []sim.FiredFault
	Chaos *adminChaos // null when chaos mode is off
}

func adminFaultsOf(f fake) adminFaults {
	out := adminFaults{Armed: []adminFault{}, Fired: f.Faults()}
	for _, a := range f.ArmedFaults() {
		out.Armed = append(out.Armed, adminFaultOf(a))
	}
	if out.Fired == nil {
		out.Fired = []sim.FiredFault{}
	}
	if seed, p, on := f.Chaos(); on {
		c := adminChaosOf(seed, p)
		out.Chaos = &c
	}
	return out
}

// adminChaos is chaos mode in JSON: the seed and the profile, durations as
// Go duration strings.
type adminChaos struct {
	Seed            uint64
	Profile         string
	ServerError     float64
	CommitThenError float64
	Reset           float64
	RateLimitBurst  float64
	BurstLength     adminDuration
	CutBody         float64
	EmptyBody       float64
	ErrorBody       float64
	StaleRead       float64
	Lag             adminDuration
	ProviderFault   float64
	Slow            float64
	SlowMin         adminDuration
	SlowMax         adminDuration
}

func adminChaosOf(seed uint64, p sim.ChaosProfile) adminChaos {
	return adminChaos{Seed: seed, Profile: p.Name, ServerError: p.ServerError, CommitThenError: p.CommitThenError,
		Reset: p.Reset, RateLimitBurst: p.RateLimitBurst, BurstLength: adminDuration(p.BurstLength),
		CutBody: p.CutBody, EmptyBody: p.EmptyBody, ErrorBody: p.ErrorBody, StaleRead: p.StaleRead,
		Lag: adminDuration(p.Lag), ProviderFault: p.ProviderFault, Slow: p.Slow,
		SlowMin: adminDuration(p.SlowMin), SlowMax: adminDuration(p.SlowMax)}
}

// startChaos serves POST /_sim/chaos {"profile": "bad-day", "seed": 7}.
func startChaos(w http.ResponseWriter, r *http.Request, f fake) {
	var req struct {
		Profile string
		Seed    uint64
	}
	if err := adminDecode(r.Body, &req); err != nil {
		adminError(w, http.StatusBadRequest, err)
		return
	}
	p, ok := sim.ChaosProfileByName(req.Profile)
	if !ok {
		adminError(w, http.StatusBadRequest, fmt.Errorf("no chaos profile %q: one of %q", req.Profile,
			sim.ChaosProfileNames()))
		return
	}
	if err := f.StartChaos(req.Seed, p); err != nil {
		adminError(w, http.StatusBadRequest, err)
		return
	}
	adminJSON(w, http.StatusCreated, adminChaosOf(req.Seed, p))
}
