package fleet

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An idle hourly node is released at its hour's end less the calm margin
// (3 min) while its provider answers; after a listing fails with an outage
// the wide margin (10 min) holds for 30 minutes, so a delete refused by
// the same outage has time to land inside the paid hour; a refusal about
// the request itself (the server locked) unsettles nothing.
func TestHourlyReleaseMarginFollowsTheProvidersHealth(t *testing.T) {
	cases := []struct {
		name    string
		listErr error
		want    time.Duration // the release, from the create
	}{
		{"calm", nil, 57 * time.Minute},
		{"outage", ErrUnavailable, 50 * time.Minute},
		{"rate limited", ErrRateLimited, 50 * time.Minute},
		{"timeout", errors.New("context deadline exceeded"), 50 * time.Minute},
		{"locked answer", ErrLocked, 57 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, m, in := hourlyIdleNode(t, time.Hour, 3*time.Minute)
				passes(t, m, time.Until(in.Created.Add(35*time.Minute)))
				p.mu.Lock()
				p.listErr = c.listErr
				p.mu.Unlock()
				passes(t, m, 10*time.Minute)
				p.mu.Lock()
				p.listErr = nil
				p.mu.Unlock()
				passes(t, m, time.Until(in.Created.Add(70*time.Minute)))
				got := m.Instances("f")[0]
				require.Equal(t, StatusTerminated, got.Status)
				var asked time.Time
				for _, h := range got.History {
					if h.Status == StatusTerminating {
						asked = h.Time
						break
					}
				}
				assert.WithinDuration(t, in.Created.Add(c.want), asked, 20*time.Second)
			})
		})
	}
}

// hourlyIdleNode runs a fleet "f" of one hourly-billed fake node with the
// given minimum reservation for the given time; the node is idle then.
func hourlyIdleNode(t *testing.T, minimum, after time.Duration) (*fakeProvider, *Manager, Instance) {
	t.Helper()
	o := vmOffer("vultr", 1, minimum)
	o.BillingGranularity = time.Hour
	p := newFakeProvider("vultr", o)
	m, _ := newTestManager(t, Config{Providers: []Provider{p}})
	require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute}))
	passes(t, m, after)
	in := m.Instances("f")[0]
	require.Equal(t, StatusIdle, in.Status)
	return p, m, in
}

// A release planned past a per-minute minimum at or just after a minute
// boundary (a hold of whole minutes ends on one) is moved boundarySlack
// before it, so that a delete landing a moment late does not bill the
// next minute; other times, and times inside the minimum, are kept.
func TestReleaseBeforeTheMinuteBoundary(t *testing.T) {
	m, err := NewManager(Config{Providers: []Provider{newFakeProvider("x")}})
	require.NoError(t, err)
	defer m.Close()
	t0 := time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC)
	r := &InstanceRecord{Instance: Instance{Offer: Offer{BillingGranularity: time.Minute, MinimumReservation: 30 * time.Minute}, Created: t0}}
	for _, c := range []struct{ at, want time.Duration }{
		{60 * time.Minute, 59*time.Minute + 50*time.Second},
		{60*time.Minute + 5*time.Second, 59*time.Minute + 50*time.Second},
		{60*time.Minute + 30*time.Second, 60*time.Minute + 30*time.Second},
		{30 * time.Minute, 30 * time.Minute}, // the minimum's end: its own margin decides
		{20 * time.Minute, 20 * time.Minute},
	} {
		assert.Equal(t, t0.Add(c.want), m.beforeMinuteBoundary(r, t0.Add(c.at)), "planned at %v", c.at)
	}
}
