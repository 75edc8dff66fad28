package fleet_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refuseFleetStore refuses for good every write of one fleet's record (a
// record the store's schema rejects), and nothing else.
type refuseFleetStore struct {
	*fleet.MemoryStore
	name string
}

var errRecordRejected = errors.New("value violates a check constraint")

func (s *refuseFleetStore) PutFleet(ctx context.Context, f fleet.FleetRecord) error {
	if f.Spec.Name == s.name {
		return errRecordRejected
	}
	return s.MemoryStore.PutFleet(ctx, f)
}

// flush promises (state.go): "Records whose last write failed are written
// after the others, so that one the store refuses for good does not keep
// the others from being tried." The Store refuses fleet "bad"'s record for
// good; fleet "good" (one Vultr VM) is applied a minute later.
// Now: "good" gets its node (its records are written, its create is
// made) within minutes.
// Before (tester AT): no node for "good" in 2 hours: its instance record is
// never written (fleet records are written before every instance record,
// and "bad"'s, refused, ends the flush before any), and a create whose
// record is not stored is never called.
// Cause: state.go flush orders failed-last only within fleets and within
// instances; the refused fleet write (not a lost write) sets stop before
// the instance writes.
func TestRecordRefusedForGoodBlocksNoOtherFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &refuseFleetStore{MemoryStore: fleet.NewMemoryStore(), name: "bad"}
		e.m = e.manager(store)
		stop := e.running()
		defer stop()
		require.NoError(t, e.m.Apply(t.Context(), spec("bad", 1, vultrVM("ewr"))))
		time.Sleep(time.Minute)
		require.NoError(t, e.m.Apply(t.Context(), spec("good", 1, vultrVM("ewr"))))
		t0 := time.Now()
		var err error
		for time.Since(t0) < 2*time.Hour {
			if _, err = e.m.Acquire(t.Context(), "good"); err == nil {
				break
			}
			time.Sleep(10 * time.Second)
		}
		t.Logf("fleet good: Acquire after %v: %v; %d Vultr creates", time.Since(t0).Round(time.Second), err, calls(e.vultr.Calls(), vultrCreate, 0))
		assert.NoError(t, err, "fleet good got no node while another fleet's record is refused")
	})
}
