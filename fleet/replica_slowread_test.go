package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
)

// slowReadStore is a shared store whose intent reads (and with records
// set, its reads of fleet records too) hang until their context ends (a
// slow query cut by its deadline) or fail at once, while slow is set.
type slowReadStore struct {
	*fleet.MemoryLeaseStore
	slow    atomic.Bool
	records atomic.Bool  // Fleets reads are slow too
	reads   atomic.Int64 // slow reads made
	left    atomic.Int64 // > 0: only that many more reads are slow
	fast    atomic.Bool  // fail at once instead of hanging (a row that cannot be decoded)
}

var errIntentRow = errors.New("intents: cannot decode row")

func (s *slowReadStore) hang(ctx context.Context) error {
	if !s.slow.Load() {
		return nil
	}
	if s.left.Load() > 0 && s.left.Add(-1) == 0 {
		s.slow.Store(false)
	}
	s.reads.Add(1)
	if s.fast.Load() {
		return errIntentRow
	}
	<-ctx.Done()
	return ctx.Err()
}

func (s *slowReadStore) Intents(ctx context.Context, f string) ([]fleet.Intent, error) {
	if err := s.hang(ctx); err != nil {
		return nil, err
	}
	return s.MemoryLeaseStore.Intents(ctx, f)
}

func (s *slowReadStore) IntentsAfter(ctx context.Context, f string, after int64) ([]fleet.Intent, error) {
	if err := s.hang(ctx); err != nil {
		return nil, err
	}
	return s.MemoryLeaseStore.IntentsAfter(ctx, f, after)
}

func (s *slowReadStore) Fleets(ctx context.Context) ([]fleet.FleetRecord, error) {
	if s.records.Load() {
		if err := s.hang(ctx); err != nil {
			return nil, err
		}
	}
	return s.MemoryLeaseStore.Fleets(ctx)
}

// Two replicas, a Hot Aisle VM fleet of one node (30-minute minimum, then
// per minute), IdleTimeout 5 min, no job: the node's idle release is
// deferred to the minimum's last safe moment. From 3 minutes before the
// minimum's end the shared store's intent reads (and in one case its
// reads of fleet records too) are slow: each hangs until its deadline, or
// fails at once, for up to 3 h. The holder reads the fleet's intents
// before an idle release (marksRead); a read that fails counts as made.
// The holder renews its fleet leases whatever the reads answer, and each
// read is cut well inside the lease's TTL: it keeps the fleet, and the
// node goes inside its minimum, 30 min billed (31 at most). Also with two
// slow reads only.
// (tester AT: the holder's lease ran out 2m50s before the minimum's end,
// "its lease ran out before it was renewed": the lease sync read the
// records and intents before it renewed the fleet leases, returned on a
// failed read and hung on a slow one for CallTimeout (90 s) past LeaseTTL
// (30 s); no replica took the fleet until the reads worked again: 207 min
// billed instead of 30, $10.32 instead of $1.50 on a $2.99/h VM, growing
// for as long as the reads fail; the same when they fail at once.)
func TestSlowIntentReadAtTheMinimumsEnd(t *testing.T) {
	for _, c := range []struct {
		n       int64
		fast    bool
		records bool
	}{{0, false, false}, {2, false, false}, {0, true, false}, {0, false, true}, {0, true, true}} {
		t.Run(fmt.Sprintf("slow reads %d (0: all), failing at once %v, records too %v", c.n, c.fast, c.records), func(t *testing.T) {
			slowReadAtTheMinimumsEnd(t, c.n, c.fast, c.records)
		})
	}
}

func slowReadAtTheMinimumsEnd(t *testing.T, n int64, fast, records bool) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		store := &slowReadStore{MemoryLeaseStore: fleet.NewMemoryLeaseStore(nil)}
		rs := apReplicasOn(t, e, store, fleet.Policy{RebuyHoldOff: true}, 2)
		time.Sleep(time.Minute)
		s := spec("mi", 1, hotType("vm-mi300x-1"))
		s.IdleTimeout = 5 * time.Minute
		holder := apConverge(t, rs, s)
		end := apCharge(t, e).From.Add(30 * time.Minute)
		time.Sleep(time.Until(end.Add(-3 * time.Minute)))
		store.left.Store(n)
		store.fast.Store(fast)
		store.records.Store(records)
		store.slow.Store(true)
		for deadline := time.Now().Add(3 * time.Hour); apCharge(t, e).Live && time.Now().Before(deadline); time.Sleep(10 * time.Second) {
		}
		stillHeld := rs.holderOf(t, "mi")
		store.slow.Store(false)
		time.Sleep(time.Minute)
		rs.stopAll()
		got := apCharge(t, e)
		apDump(t, e, end)
		t.Logf("billed %v (%s), %d slow reads", got.Billed, got.Description, store.reads.Load())
		assert.False(t, got.Live, "still billing")
		assert.LessOrEqual(t, got.Billed, 31*time.Minute, "an idle node's release inside its minimum")
		assert.Equal(t, holder, stillHeld, "the holder keeps the fleet's lease while the reads fail")
		e.mu.Lock()
		defer e.mu.Unlock()
		for _, ev := range e.events {
			if ev.Type == fleet.EventFleetReleased {
				assert.NotContains(t, ev.Message, "lease ran out", "the holder lost the fleet's lease")
			}
			if ev.Type == fleet.EventStoreWriteFailed && strings.Contains(ev.Message, "lease sync failed") {
				t.Errorf("the lease sync failed on a read: %s: %s", ev.Message, ev.Err)
			}
		}
	})
}
