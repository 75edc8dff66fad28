package vultrfake

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"golang.org/x/time/rate"
)

// allow is the rate-limit hook: a token bucket per key on the sim clock
// (DefaultVultrRateLimit, WithVultrRateLimit, SqueezeRateLimit). Over it the
// call is answered 429 with Retry-After: the wait for the next token,
// rounded up to whole seconds (1 at the default rate).
func (v *Vultr) allow(r *http.Request) (bool, time.Duration) {
	v.mu.Lock()
	defer v.unlock()
	rps, burst, lims := v.cfg.RPS, v.cfg.Burst, v.st.limiters
	if rps <= 0 && v.st.squeeze == nil {
		return true, 0 // no limit: no clock to read
	}
	now := v.clock.Now()
	if sq := v.st.squeeze; sq != nil {
		if now.Before(sq.until) {
			rps, burst, lims = sq.rps, 0, sq.limiters
		} else {
			v.st.squeeze = nil
		}
	}
	if rps <= 0 {
		return true, 0
	}
	if burst < 1 {
		burst = int(math.Ceil(rps))
	}
	key := vultrRateKey(r)
	l := lims[key]
	if l == nil {
		l = rate.NewLimiter(rate.Limit(rps), burst)
		lims[key] = l
	}
	if l.AllowN(now, 1) {
		return true, 0
	}
	res := l.ReserveN(now, 1)
	d := res.DelayFrom(now)
	res.CancelAt(now)
	return false, max(d, time.Second)
}

// SqueezeRateLimit lowers the rate limit to rps requests per second per key
// (burst: rps rounded up) for d of cloud time from now, as when Vultr
// throttles an account under load. rps must be positive.
func (v *Vultr) SqueezeRateLimit(rps float64, d time.Duration) error {
	if rps <= 0 || d <= 0 {
		return fmt.Errorf("sim: SqueezeRateLimit wants a positive rate and duration, got %v, %v", rps, d)
	}
	v.mu.Lock()
	v.st.squeeze = &vultrSqueeze{rps: rps, until: v.clock.Now().Add(d), limiters: map[string]*rate.Limiter{}}
	v.unlock()
	return nil
}

// FlakyAttach makes the next times VPC attach calls on each of
// /v2/instances/{id}/vpcs/attach and /v2/bare-metals/{id}/vpcs/attach fail
// with 500 "Unable to attach VPC" without attaching (dstack saw attach "not
// always succeed on the first attempt"). times 0 fails every call until
// ClearFaults.
func (v *Vultr) FlakyAttach(times int) error {
	for _, route := range []string{"POST /v2/instances/{id}/vpcs/attach", "POST /v2/bare-metals/{id}/vpcs/attach"} {
		if err := v.Inject(core.Fault{Route: route, Times: times, Status: http.StatusInternalServerError,
			Message: "Unable to attach VPC"}); err != nil {
			return err
		}
	}
	return nil
}

// LockWindow sets how long after becoming active a server refuses every
// mutation as "Server is currently locked" (default 5 min), for every server:
// those that exist (measured from their activation) and those created later.
func (v *Vultr) LockWindow(d time.Duration) {
	v.mu.Lock()
	defer v.unlock()
	v.st.rules = append(v.st.rules, TimingRule{Pattern: "*", Set: func(t *VultrTiming) { t.Lock = d }})
	for _, srv := range v.st.servers {
		srv.timing.Lock = d
	}
}

// NotActiveWindow makes DELETE of servers created from now on whose plan
// matches pattern (a path.Match glob) answer 500 "This subscription is not
// currently active" until d after create, even once they show "active".
func (v *Vultr) NotActiveWindow(pattern string, d time.Duration) error {
	return v.addRule(pattern, func(t *VultrTiming) { t.NotActive = d })
}

// SlowProvisioning makes servers created from now on whose plan matches
// pattern stay "pending" for d (VM default 90 s, bare metal 40 min).
func (v *Vultr) SlowProvisioning(pattern string, d time.Duration) error {
	return v.addRule(pattern, func(t *VultrTiming) { t.Pending = d })
}

// Outage makes every call fail for d of cloud time from now: alternately a
// connection reset and a 503, as when the API is unreachable.
func (v *Vultr) Outage(d time.Duration) error {
	return v.Inject(core.Fault{Route: core.AnyRoute, Reset: true, Status: http.StatusServiceUnavailable, Duration: d})
}

// SoldOut takes plan (VM or bare metal) off sale in region:
// /v2/regions/{region}/availability omits it and a create answers 400 "Plan
// is not available in the selected region." (the real no-capacity text is
// unknown; dstack saw a 400). It fails for an unknown plan or region.
func (v *Vultr) SoldOut(plan, region string) error {
	return v.setSoldOut(plan, region, true)
}

// Restock undoes SoldOut and SoldOutAfterListing.
func (v *Vultr) Restock(plan, region string) error {
	return v.setSoldOut(plan, region, false)
}

func (v *Vultr) setSoldOut(plan, region string, out bool) error {
	if err := v.checkPlanRegion(plan, region); err != nil {
		return err
	}
	v.mu.Lock()
	defer v.unlock()
	if out {
		v.st.soldOut[plan+"@"+region] = true
	} else {
		delete(v.st.soldOut, plan+"@"+region)
		delete(v.st.listed, plan+"@"+region)
	}
	return nil
}

// DetachLag makes detaches from now on (the detach routes and PATCH
// detach_vpc) answer 204 at once but keep showing the attachment in
// …/{id}/vpcs and blocking the VPC's deletion for d (dstack saw detaching
// "unreliable … even after 15 minutes"). 0 restores immediate detaches.
func (v *Vultr) DetachLag(d time.Duration) {
	v.mu.Lock()
	v.st.detach = d
	v.unlock()
}
