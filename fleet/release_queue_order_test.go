package fleet

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
)

// Due releases take Policy.Parallelism's free slots earliest billing
// boundary first (those with none last), and only a release inside its
// last release margin goes beyond the bound. Four due releases: a Hot
// Aisle-like minimum ending in 20 s (inside MinuteReleaseMargin), one
// ending in 20 min, a Vultr-like hour ending in 40 min, a per-minute offer
// past any minimum; only the first is boundary-critical.
func TestDueReleasesEarliestBoundaryFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _ := newTestManager(t, Config{Providers: []Provider{newFakeProvider("p")}, Policy: Policy{Parallelism: 1}})
		now := time.Now()
		hourly := vmOffer("p", 2, time.Hour)
		hourly.BillingGranularity = time.Hour
		add := func(req string, o Offer, age time.Duration) {
			m.addRecord(&InstanceRecord{Instance: Instance{ID: "id-" + req, RequestID: req, Fleet: "f", Provider: "p", Offer: o,
				Created: now.Add(-age), Status: StatusTerminating}, Termination: &Termination{Requested: now}})
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		add("none", vmOffer("p", 1, 0), 2*time.Hour)
		add("hour", hourly, 20*time.Minute)
		add("min20", vmOffer("p", 3, 30*time.Minute), 10*time.Minute)
		add("min0", vmOffer("p", 3, 30*time.Minute), 30*time.Minute-20*time.Second)
		var order []string
		var critical []bool
		for _, r := range m.dueReleases(now) {
			order = append(order, r.Instance.RequestID)
			critical = append(critical, m.boundaryCritical(r, now))
		}
		assert.Equal(t, []string{"min0", "min20", "hour", "none"}, order)
		assert.Equal(t, []bool{true, false, false, false}, critical)
	})
}
