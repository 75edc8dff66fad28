package core

import (
	"fmt"
	"net/http"
	"sort"
	"time"
)

// ChaosProfile is a set of fault rates for chaos mode (WithChaos): each
// call of a fake draws, from the chaos seed, the route and the call's
// position among that route's calls, whether one of these faults answers it
// and whether it is slow. Rates are probabilities per call (0 to 1) and
// their sum should stay under 1; a fault that does not apply to the drawn
// call's route (a body cut on a DELETE) leaves the call alone, so the rate of
// each fault is per call of the routes it applies to.
type ChaosProfile struct {
	// Name identifies the profile ("bad-day").
	Name string
	// ServerError answers 500, 502 or 503 before the call takes effect
	// (any route).
	ServerError float64
	// CommitThenError lets a mutation (POST, PATCH, PUT, DELETE) take
	// effect, then answers 500: the create that succeeded but reported
	// failure.
	CommitThenError float64
	// Reset drops the connection before the call takes effect (any route).
	Reset float64
	// RateLimitBurst starts a burst: this call and every call for
	// BurstLength of cloud time answer 429 with Retry-After: 1.
	RateLimitBurst float64
	// BurstLength is how long a 429 burst lasts (cloud time).
	BurstLength time.Duration
	// CutBody cuts a read's answer (GET) after 1 to 64 bytes.
	CutBody float64
	// EmptyBody answers a read 200 with an empty body.
	EmptyBody float64
	// ErrorBody answers a read 200 with the provider's error body.
	ErrorBody float64
	// StaleRead makes a read miss the servers created less than Lag ago
	// (lists leave them out, their GET answers 404).
	StaleRead float64
	// Lag is the visibility lag of a stale read (cloud time).
	Lag time.Duration
	// ProviderFault answers one of the provider's own refusals on the routes
	// that have them (see each fake's documentation): Vultr's "Unable to
	// attach VPC", a plan sold out after it was listed, a VPC delete refused
	// as attached; Hot Aisle's provision and reservation finding no capacity.
	ProviderFault float64
	// Slow delays a call (independently of the faults above) by a seeded
	// duration from SlowMin to SlowMax of cloud time.
	Slow             float64
	SlowMin, SlowMax time.Duration
}

// ChaosBadDay is the "bad-day" profile: the faults a cloud API shows on a
// bad day, at rates that a fleet of a few dozen machines meets every hour.
// Per call: 2% 5xx before the call takes effect, 0.5% of mutations take
// effect then answer 500, 1% connection resets, 0.2% chance of starting a
// 2-second burst of 429s, 0.5% of reads cut short, 0.2% empty 200s, 0.2%
// 200s carrying an error, 5% stale reads that miss servers younger than 30
// s, 5% provider refusals on the routes that have them, and 5% of calls
// slowed by 0.5 to 5 s.
func ChaosBadDay() ChaosProfile {
	return ChaosProfile{Name: "bad-day", ServerError: 0.02, CommitThenError: 0.005, Reset: 0.01,
		RateLimitBurst: 0.002, BurstLength: 2 * time.Second, CutBody: 0.005, EmptyBody: 0.002,
		ErrorBody: 0.002, StaleRead: 0.05, Lag: 30 * time.Second, ProviderFault: 0.05,
		Slow: 0.05, SlowMin: 500 * time.Millisecond, SlowMax: 5 * time.Second}
}

// ChaosStorm is the "storm" profile: every fault of ChaosBadDay five times
// as often (stale reads, provider refusals and slow calls at 20%), for
// stress tests of retry and recovery paths.
func ChaosStorm() ChaosProfile {
	return ChaosProfile{Name: "storm", ServerError: 0.1, CommitThenError: 0.025, Reset: 0.05,
		RateLimitBurst: 0.01, BurstLength: 5 * time.Second, CutBody: 0.025, EmptyBody: 0.01,
		ErrorBody: 0.01, StaleRead: 0.2, Lag: time.Minute, ProviderFault: 0.2,
		Slow: 0.2, SlowMin: time.Second, SlowMax: 20 * time.Second}
}

// ChaosProfileNames lists the named profiles ChaosProfileByName knows.
func ChaosProfileNames() []string {
	out := make([]string, 0, len(chaosProfiles))
	for n := range chaosProfiles {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

var chaosProfiles = map[string]func() ChaosProfile{"bad-day": ChaosBadDay, "storm": ChaosStorm}

// ChaosProfileByName returns the named profile ("bad-day", "storm").
func ChaosProfileByName(name string) (ChaosProfile, bool) {
	f, ok := chaosProfiles[name]
	if !ok {
		return ChaosProfile{}, false
	}
	return f(), true
}

// Validate reports an error when a rate is outside 0 to 1 (or NaN), the fault rates
// (all but Slow) add up to more than 1, or a duration is negative or SlowMax
// is below SlowMin.
func (p ChaosProfile) Validate() error {
	sum := 0.0
	for _, r := range []float64{p.ServerError, p.CommitThenError, p.Reset, p.RateLimitBurst, p.CutBody,
		p.EmptyBody, p.ErrorBody, p.StaleRead, p.ProviderFault, p.Slow} {
		if !(r >= 0 && r <= 1) { // NaN too
			return fmt.Errorf("sim: chaos profile %q: rates must be from 0 to 1, got %v", p.Name, r)
		}
		sum += r
	}
	if !(sum-p.Slow <= 1) {
		return fmt.Errorf("sim: chaos profile %q: the fault rates add up to %.3f, over 1", p.Name, sum-p.Slow)
	}
	if p.SlowMax < p.SlowMin || p.SlowMin < 0 || p.BurstLength < 0 || p.Lag < 0 {
		return fmt.Errorf("sim: chaos profile %q: bad durations", p.Name)
	}
	return nil
}

// ChaosConfig is chaos mode from the start: its seed and profile.
type ChaosConfig struct {
	Seed    uint64
	Profile ChaosProfile
}

// chaosState is chaos mode on one fake. The server's mutex guards it.
type chaosState struct {
	ChaosConfig
	burstUntil time.Time
}

// StartChaos turns chaos mode on (or restarts it with a new seed or
// profile): see WithChaos. It fails for an invalid profile.
func (s *Server) StartChaos(seed uint64, profile ChaosProfile) error {
	if err := profile.Validate(); err != nil {
		return err
	}
	s.mu.Lock()
	s.chaos = &chaosState{ChaosConfig: ChaosConfig{Seed: seed, Profile: profile}}
	s.mu.Unlock()
	if profile.Reset > 0 {
		s.resets.Store(true)
	}
	return nil
}

// StopChaos turns chaos mode off; injected faults stay armed.
func (s *Server) StopChaos() {
	s.mu.Lock()
	s.chaos = nil
	s.mu.Unlock()
}

// Chaos reports the chaos seed and profile, and whether chaos mode is on.
func (s *Server) Chaos() (seed uint64, profile ChaosProfile, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chaos == nil {
		return 0, ChaosProfile{}, false
	}
	return s.chaos.Seed, s.chaos.Profile, true
}

// Salts of the chaos draws, one per decision.
const (
	chaosSaltAnswer = iota + 1
	chaosSaltStatus
	chaosSaltPick
	chaosSaltSlow
	chaosSaltDelay
)

// plan adds chaos mode's faults for call n of rt to p. Callers hold s.mu.
func (c *chaosState) plan(s *Server, rt *serverRoute, call *Call, n uint64, p *faultPlan) {
	pr := &c.Profile
	draw := func(salt uint64) float64 { return faultDraw(c.Seed, rt.hash, n, salt) }
	if pr.Slow > 0 && draw(chaosSaltSlow) < pr.Slow {
		d := pr.SlowMin + time.Duration(draw(chaosSaltDelay)*float64(pr.SlowMax-pr.SlowMin))
		s.applyFault(rt, call, n, &Fault{Latency: d}, 0, 0, p, true)
	}
	if f, ok := c.answer(s, rt, call.Time, draw); ok {
		s.applyFault(rt, call, n, &f, 0, 0, p, true)
	}
}

// answer draws the fault (if any) that answers the call.
func (c *chaosState) answer(s *Server, rt *serverRoute, now time.Time, draw func(uint64) float64) (Fault, bool) {
	pr := &c.Profile
	burst := Fault{Status: http.StatusTooManyRequests, RetryAfter: time.Second}
	if now.Before(c.burstUntil) {
		return burst, true
	}
	mutation := !rt.read
	domain := s.chaosFaults[rt.display]
	u := draw(chaosSaltAnswer)
	for _, k := range []struct {
		rate  float64
		apply bool
		f     func() Fault
	}{
		{pr.ServerError, true, func() Fault { return Fault{Status: chaosStatus(draw(chaosSaltStatus))} }},
		{pr.CommitThenError, mutation, func() Fault { return Fault{Status: 500, AfterCommit: true} }},
		{pr.Reset, true, func() Fault { return Fault{Reset: true} }},
		{pr.RateLimitBurst, true, func() Fault { c.burstUntil = now.Add(pr.BurstLength); return burst }},
		{pr.CutBody, rt.read, func() Fault { return Fault{CutAfter: 1 + int(draw(chaosSaltPick)*64)} }},
		{pr.EmptyBody, rt.read, func() Fault { return Fault{Status: 200, EmptyBody: true} }},
		{pr.ErrorBody, rt.read, func() Fault { return Fault{Status: 200} }},
		{pr.StaleRead, rt.read, func() Fault { return Fault{VisibilityLag: pr.Lag} }},
		{pr.ProviderFault, len(domain) > 0, func() Fault {
			return domain[min(int(draw(chaosSaltPick)*float64(len(domain))), len(domain)-1)]
		}},
	} {
		if u < k.rate {
			if !k.apply {
				return Fault{}, false
			}
			return k.f(), true
		}
		u -= k.rate
	}
	return Fault{}, false
}

// chaosStatus picks 500 (60%), 502 (20%) or 503 (20%).
func chaosStatus(u float64) int {
	switch {
	case u < 0.6:
		return http.StatusInternalServerError
	case u < 0.8:
		return http.StatusBadGateway
	}
	return http.StatusServiceUnavailable
}

// AddChaosFault registers a provider refusal chaos mode may answer on route
// (ChaosProfile.ProviderFault). It panics for a route not served.
func AddChaosFault(s *Server, f Fault) {
	if err := f.normalize(s.name, s.router); err != nil || f.Route == AnyRoute {
		panic(fmt.Sprintf("sim: bad chaos fault %+v: %v", f, err))
	}
	if s.chaosFaults == nil {
		s.chaosFaults = map[string][]Fault{}
	}
	s.chaosFaults[f.Route] = append(s.chaosFaults[f.Route], f)
}

// ChaosFaultsOf returns the provider refusals chaos mode may answer, by
// route (for tests).
func ChaosFaultsOf(s *Server) map[string][]Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chaosFaults
}
