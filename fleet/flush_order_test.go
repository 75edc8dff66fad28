package fleet

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A replica whose lease looks expired by its own clock at the moment a
// fleet's deletion completes (a slow step) must not delete the fleet's
// record while its instances' last writes (terminated) are held back: the
// store would keep them terminating for ever with no fleet to hold them. The
// fleet's record goes once they are written.
func TestFleetRecordIsNotDeletedBeforeItsInstancesLastWrites(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		store := NewMemoryLeaseStore(nil)
		m, _ := newTestManager(t, Config{Providers: []Provider{p}, Store: store, ReplicaID: "r1",
			Policy: Policy{LeaseTTL: time.Hour}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 5*time.Minute)
		recs, err := store.Instances(t.Context())
		require.NoError(t, err)
		require.Len(t, recs, 1)
		id := recs[0].Instance.RequestID

		m.mu.Lock() // the deletion completes in a step where the lease looks expired
		r := m.insts[id]
		r.Instance.Status = StatusTerminated
		m.dirtyI[id] = true
		delete(m.fleets, "f")
		m.goneF["f"] = true
		held := m.rep.heldAt["f"]
		m.rep.heldAt["f"] = time.Now().Add(-2 * time.Hour)
		m.mu.Unlock()
		require.NoError(t, m.flush(t.Context()))
		fleets, err := store.Fleets(t.Context())
		require.NoError(t, err)
		assert.Len(t, fleets, 1, "the fleet's record stays while its instance's last write waits")

		m.mu.Lock()
		m.rep.heldAt["f"] = held
		m.mu.Unlock()
		require.NoError(t, m.flush(t.Context()))
		fleets, err = store.Fleets(t.Context())
		require.NoError(t, err)
		assert.Empty(t, fleets, "then it goes")
		recs, err = store.Instances(t.Context())
		require.NoError(t, err)
		require.Len(t, recs, 1)
		assert.Equal(t, StatusTerminated, recs[0].Instance.Status, "the instance's last write landed")
	})
}
