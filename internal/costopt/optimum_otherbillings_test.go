package costopt

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// otherBillingTrace draws n jobs to the second over horizon, with ties (jobs at the
// same instant), jobs of exactly one unit, one minute, the minimum, just
// over the minimum, and jobs ending exactly when another arrives.
func otherBillingTrace(r *rand.Rand, n int, horizon time.Duration, b Billing) Trace {
	jobs := make([]Job, 0, n)
	for len(jobs) < n {
		var at time.Duration
		switch {
		case len(jobs) > 0 && r.IntN(4) == 0: // same instant as an earlier job
			at = jobs[r.IntN(len(jobs))].Arrive
		case len(jobs) > 0 && r.IntN(4) == 0: // exactly when an earlier job ends
			at = jobs[r.IntN(len(jobs))].End()
		default:
			at = time.Duration(r.Int64N(int64(horizon/time.Second))) * time.Second
		}
		var d time.Duration
		switch r.IntN(7) {
		case 0:
			d = b.Unit
		case 1:
			d = time.Minute
		case 2:
			d = max(b.Minimum, time.Second)
		case 3:
			d = b.Minimum + time.Second
		case 4:
			d = b.Unit - b.BootTime
		case 5:
			d = time.Second
		default:
			d = time.Duration(1+r.Int64N(int64(3*max(b.Minimum, b.Unit)/time.Second))) * time.Second
		}
		if d <= 0 {
			d = time.Second
		}
		jobs = append(jobs, Job{Arrive: at, Duration: d})
	}
	slices.SortStableFunc(jobs, func(x, y Job) int { return cmpDur(x.Arrive, y.Arrive) })
	for i := range jobs {
		jobs[i].ID = i
	}
	return Trace{Jobs: jobs}
}

func otherBillings() []Billing {
	m, h := time.Minute, time.Hour
	return []Billing{
		{Name: "10-min units, no minimum, boot 3 min", Unit: 10 * m, PricePerHour: 1, BootTime: 3 * m},
		{Name: "hourly, 2 h minimum, boot 50 min", Unit: h, Minimum: 2 * h, PricePerHour: 1, BootTime: 50 * m},
		{Name: "per minute, 60 min minimum, refused", Unit: m, Minimum: 60 * m, PricePerHour: 1, BootTime: 90 * time.Second, RefusedInMinimum: true},
		{Name: "half hours, 30 min minimum, no boot", Unit: 30 * m, Minimum: 30 * m, PricePerHour: 1},
		{Name: "hourly, no minimum, boot 2 h", Unit: h, PricePerHour: 1, BootTime: 2 * h},
		{Name: "per second, 5 min minimum, boot 7 s", Unit: time.Second, Minimum: 5 * m, PricePerHour: 1, BootTime: 7 * time.Second},
		{Name: "per minute, 8 h minimum, bare metal", Unit: m, Minimum: 8 * h, PricePerHour: 1, BootTime: 10 * m, BareMetal: true, RefusedInMinimum: true},
		{Name: "2-hour units, 4 h minimum, boot 1 s", Unit: 2 * h, Minimum: 4 * h, PricePerHour: 1, BootTime: time.Second},
	}
}

// TestOptimumAgainstExactOtherBillings: Optimum against bruteForce on
// small random traces (to the second, with ties and edge durations) for
// billings the existing brute tests do not use. A plan that is not optimal
// must not be Proven, the lower bound must not exceed the exact optimum,
// and Plan.Check must accept the plan.
func TestOptimumAgainstExactOtherBillings(t *testing.T) {
	r := rand.New(rand.NewPCG(0xb4, 0x17))
	for _, b := range otherBillings() {
		for try := range 80 {
			n := 1 + try%11
			horizon := []time.Duration{30 * time.Minute, 3 * time.Hour, 12 * time.Hour}[try%3]
			tr := otherBillingTrace(r, n, horizon, b)
			if err := tr.Validate(); err != nil {
				t.Fatal(err)
			}
			o, err := Optimum(tr, b)
			if err != nil {
				t.Fatal(err)
			}
			want := bruteForce(tr, b)
			msg := fmt.Sprintf("%s, try %d, jobs %v", b.Name, try, tr.Jobs)
			if err := o.Check(tr); err != nil {
				t.Fatalf("%s: plan invalid: %v", msg, err)
			}
			if o.Units() != want {
				t.Errorf("%s: optimum %d units (%.2f USD), exact %d units (proven %v)", msg, o.Units(), o.Bill(), want, o.Proven)
			}
			if !o.Proven {
				t.Errorf("%s: not proven on %d jobs", msg, n)
			}
			if lb := o.LowerBound; lb > b.usd(float64(want))+1e-9 {
				t.Errorf("%s: lower bound %.4f above the exact optimum %.4f", msg, lb, b.usd(float64(want)))
			}
		}
	}
}
