package fleet

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A scale-down releases the idle node with the least paid time left and
// keeps the one whose minimum reservation runs longest (it can still serve
// jobs for what it has paid), whichever is newer.
func TestScaleDownReleasesTheIdleNodeWithTheLeastPaidTimeLeft(t *testing.T) {
	for _, newerFirst := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			m, older, newer := twoIdleNodes(t, Policy{Release: ReleaseNow}, newerFirst)
			require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
			passes(t, m, time.Minute)
			gone, kept := older, newer
			if newerFirst {
				gone, kept = newer, older
			}
			for _, in := range m.Instances("f") {
				switch in.RequestID {
				case gone.RequestID:
					assert.Contains(t, []Status{StatusTerminating, StatusTerminated}, in.Status, "least paid time left: released")
				case kept.RequestID:
					assert.Equal(t, StatusIdle, in.Status, "most paid time left: kept")
				}
			}
		})
	}
}

// Growing a fleet again takes back the waiting release with the most paid
// time left (tester X noticed it took them in record order): two Hot Aisle
// VMs (60-minute minimum) created 20 minutes apart, the fleet shrunk to 0
// (both releases wait for their minimum's end, the default policy), then
// grown to 1: the newer node, paid 20 minutes longer, is taken back, and
// the older one goes at the end of its minimum.
func TestGrowTakesBackTheReleaseWithTheMostPaidTimeLeft(t *testing.T) {
	for _, newerFirst := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			m, older, newer := twoIdleNodes(t, Policy{}, newerFirst)
			require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 0}))
			passes(t, m, time.Minute)
			require.Equal(t, 2, statuses(m.Instances("f"))[StatusTerminating], "both releases wait for their minimum")
			require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
			passes(t, m, time.Minute)
			kept := newer
			if newerFirst {
				kept = older
			}
			for _, in := range m.Instances("f") {
				if in.RequestID == kept.RequestID {
					assert.Equal(t, StatusIdle, in.Status, "most paid time left: taken back")
				} else {
					assert.Equal(t, StatusTerminating, in.Status, "least paid time left: still going")
				}
			}
		})
	}
}

// twoIdleNodes is a Manager with a Hot Aisle VM fleet "f" (60-minute
// minimum) of two idle nodes created 20 minutes apart; with olderPaidMore
// the older one's minimum is stretched to 3 hours, so that it has the more
// paid time left.
func twoIdleNodes(t *testing.T, pol Policy, olderPaidMore bool) (m *Manager, older, newer Instance) {
	p := newFakeProvider("hotaisle", vmOffer("hotaisle", 2.99, 60*time.Minute))
	m, _ = newTestManager(t, Config{Providers: []Provider{p}, Policy: pol})
	require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
	passes(t, m, 20*time.Minute)
	require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 2}))
	passes(t, m, 5*time.Minute)
	insts := m.Instances("f")
	require.Len(t, insts, 2)
	require.Equal(t, 2, statuses(insts)[StatusIdle])
	older, newer = insts[0], insts[1]
	if newer.Created.Before(older.Created) {
		older, newer = newer, older
	}
	if olderPaidMore {
		m.mu.Lock()
		m.insts[older.RequestID].Instance.Offer.MinimumReservation = 3 * time.Hour
		m.mu.Unlock()
	}
	return m, older, newer
}
