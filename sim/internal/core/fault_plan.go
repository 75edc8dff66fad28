package core

import (
	"net/http"
	"time"
)

// faultPlan is what the armed faults and chaos mode do to one call.
type faultPlan struct {
	latency time.Duration
	lag     time.Duration
	answer  Fault // meaningful when hasAnswer
	has     bool  // answer replaces the handler's
	reset   bool  // this call drops the connection
}

func (p *faultPlan) empty() bool { return !p.has && p.latency == 0 && p.lag == 0 }

// planFaults decides the faults of call (of route rt), counts them against
// their Times and logs what fires. Callers hold s.mu.
func (s *Server) planFaults(rt *serverRoute, call *Call) faultPlan {
	var p faultPlan
	rt.seen++
	n := rt.seen
	if len(s.faults) > 0 {
		s.planInjected(rt, call, n, &p)
	}
	if s.chaos != nil {
		s.chaos.plan(s, rt, call, n, &p)
	}
	return p
}

// planInjected applies the armed faults, dropping expired ones.
func (s *Server) planInjected(rt *serverRoute, call *Call, n uint64, p *faultPlan) {
	live := s.faults[:0]
	for _, af := range s.faults {
		if af.expired(call.Time) {
			continue
		}
		live = append(live, af)
		if af.Route != AnyRoute && af.Route != rt.display {
			continue
		}
		if af.Probability > 0 && faultDraw(s.seed, rt.hash, n, af.id) >= af.Probability {
			continue
		}
		if !s.applyFault(rt, call, n, &af.Fault, af.id, af.used, p, false) {
			continue
		}
		af.used++
	}
	for i := len(live); i < len(s.faults); i++ {
		s.faults[i] = nil
	}
	s.faults = live
}

// applyFault merges f into p for this call and logs its effects; it reports
// false when f has no effect on the call (an answer already chosen, or a lag
// on a route that is not a read). used is how many calls f applied to before.
func (s *Server) applyFault(rt *serverRoute, call *Call, n uint64, f *Fault, salt uint64, used int,
	p *faultPlan, chaos bool) bool {
	answer := f.hasAnswer() && !p.has
	lag := f.VisibilityLag > 0 && rt.read
	delay := f.Latency > 0 || f.LatencyMax > 0
	if !answer && !lag && !delay {
		return false
	}
	if delay {
		d := f.Latency
		if f.LatencyMax > f.Latency {
			u := faultDraw(s.seed, rt.hash, n, salt^0x5bd1e995)
			d += time.Duration(u * float64(f.LatencyMax-f.Latency))
		}
		p.latency += d
		s.fire(call, FiredFault{Kind: FaultLatency, Delay: d, Chaos: chaos})
	}
	if lag {
		p.lag = max(p.lag, f.VisibilityLag)
		s.fire(call, FiredFault{Kind: FaultLag, Delay: f.VisibilityLag, Chaos: chaos})
	}
	if answer {
		p.has, p.answer = true, *f
		p.reset = f.Reset && (f.Status == 0 || used%2 == 0)
		call.Fault = true
		rec := answerRecord(f, p.reset, chaos)
		if rec.Message == "" && s.hk.DefaultMessage != nil && (rec.Kind == FaultStatus || rec.Kind == FaultRateLimit) {
			rec.Message = s.hk.DefaultMessage(rec.Status)
		} else if rec.Message == "" && s.hk.DefaultMessage != nil && rec.Kind == FaultErrorBody {
			rec.Message = s.hk.DefaultMessage(http.StatusInternalServerError)
		}
		s.fire(call, rec)
	}
	return true
}

// answerRecord describes the answer a fault gives.
func answerRecord(f *Fault, reset, chaos bool) FiredFault {
	r := FiredFault{Status: f.Status, Message: f.Message, Commit: f.AfterCommit, Chaos: chaos}
	switch {
	case reset:
		r.Kind, r.Status, r.Message = FaultReset, 0, ""
	case f.CutAfter > 0:
		r.Kind, r.Commit = FaultCut, true
	case f.EmptyBody:
		r.Kind = FaultEmptyBody
	case f.Status < 300:
		r.Kind = FaultErrorBody
	case f.Status == 429:
		r.Kind = FaultRateLimit
	default:
		r.Kind = FaultStatus
	}
	return r
}

// fire logs one effect on call. Callers hold s.mu.
func (s *Server) fire(call *Call, r FiredFault) {
	r.Time, r.Method, r.Route, r.Path = call.Time, call.Method, call.Route, call.Path
	s.fired = append(s.fired, r)
}

// faultDraw is a uniform number in [0, 1) fixed by the seed, the route, the
// call's position among the route's calls and a salt: replaying the same
// calls with the same seed draws the same numbers, whatever other routes
// are called in between.
func faultDraw(seed, route, n, salt uint64) float64 {
	x := splitmix64(seed ^ splitmix64(route^splitmix64(n^splitmix64(salt))))
	return float64(x>>11) / (1 << 53)
}

func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// fnv64 hashes a route pattern (FNV-1a).
func fnv64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
