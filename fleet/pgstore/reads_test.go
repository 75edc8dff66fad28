package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/fleet/storetest"
	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// readCounter counts the records a Store's whole-table reads return; it
// keeps the Store's fleet.RecordFinder.
type readCounter struct {
	*pgstore.Store
	fleets, instances atomic.Int64
}

func (c *readCounter) Fleets(ctx context.Context) ([]fleet.FleetRecord, error) {
	out, err := c.Store.Fleets(ctx)
	c.fleets.Add(int64(len(out)))
	return out, err
}

func (c *readCounter) Instances(ctx context.Context) ([]fleet.InstanceRecord, error) {
	out, err := c.Store.Instances(ctx)
	c.instances.Add(int64(len(out)))
	return out, err
}

func (c *readCounter) reset() {
	c.fleets.Store(0)
	c.instances.Store(0)
}

// noFinder is a LeaseStore without the optional capabilities (the
// Manager reads every record to find one).
type noFinder struct{ fleet.LeaseStore }

// idleRecord is an idle instance record of fleet, created sec seconds
// into 2026.
func idleRecord(fleetName, requestID, providerID string, sec int) fleet.InstanceRecord {
	r := storetest.Instance(fleetName, requestID, time.Date(2026, 1, 1, 0, 0, sec, 0, time.UTC))
	r.Termination, r.Busy, r.Instance.Status, r.Instance.ID = nil, false, fleet.StatusIdle, providerID
	return r
}

// bigStore is a Store holding fleet "big" and n idle instance records of
// it (request ids req0000..., provider ids id-req0000...); it returns the
// Store behind a readCounter and the last record.
func bigStore(t *testing.T, n int) (*readCounter, fleet.InstanceRecord) {
	t.Helper()
	dsn := pgtest.DSN(t)
	s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(pgtest.Schema(t, dsn)))
	require.NoError(t, err)
	t.Cleanup(s.Close)
	f := storetest.Fleet("big")
	f.VPC, f.Spec.Placement = nil, ""
	require.NoError(t, s.PutFleet(t.Context(), f))
	var last fleet.InstanceRecord
	for i := range n {
		id := fmt.Sprintf("req%04d", i)
		last = idleRecord("big", id, "id-"+id, i)
		require.NoError(t, s.PutInstance(t.Context(), last))
	}
	return &readCounter{Store: s}, last
}

// replica returns a Manager replica on store that holds no fleet (it never
// reconciles).
func replica(t *testing.T, store fleet.Store, id string) *fleet.Manager {
	t.Helper()
	w := newWorld(t, 1)
	m, err := fleet.NewManager(fleet.Config{Providers: w.providers, Clock: w.clock, Store: store, Owner: "ab12", ReplicaID: id})
	require.NoError(t, err)
	t.Cleanup(m.Close)
	return m
}

// An orchestrator with 3 replicas sends two thirds of its MarkBusy,
// MarkIdle and Release calls to a replica that does not hold the fleet.
// Each such call read every instance record in the database (and Release
// every fleet record too) to find the one it names: with 2,000 instances
// stored, one MarkBusy decoded 2,000 records (~70 ms). Now the store's
// fleet.RecordFinder reads the records the call names.
func TestCallsOnNonHolderReadOneRecord(t *testing.T) {
	c, last := bigStore(t, 2000)
	m := replica(t, c, "nh")
	// In this order: a mark after a Release or Delete recorded is refused.
	calls := []struct {
		name string
		call func() error
	}{
		{"MarkBusy by provider id", func() error { return m.MarkBusy(last.Instance.ID) }},
		{"MarkIdle by request id", func() error { return m.MarkIdle(last.Instance.RequestID) }},
		{"Release by request id", func() error {
			_, err := m.Release(t.Context(), last.Instance.RequestID)
			return err
		}},
		{"Release by provider id", func() error {
			_, err := m.Release(t.Context(), last.Instance.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
			return err
		}},
		{"Delete", func() error { return m.Delete(t.Context(), "big") }},
	}
	for _, c2 := range calls {
		name, call := c2.name, c2.call
		c.reset()
		start := time.Now()
		require.NoError(t, call(), name)
		t.Logf("%s on a non-holder with 2,000 instances stored: %v", name, time.Since(start))
		assert.Zero(t, c.instances.Load(), "%s: instance records read by a whole-table read", name)
		assert.Zero(t, c.fleets.Load(), "%s: fleet records read by a whole-table read", name)
	}
	ins, err := c.Intents(t.Context(), "big")
	require.NoError(t, err)
	require.Len(t, ins, len(calls))
	for _, in := range ins {
		if in.Kind != fleet.IntentDelete {
			assert.Equal(t, last.Instance.RequestID, in.InstanceID, "%s names the record by its request id", in.Kind)
		}
	}
}

// Ids that name nothing a call may act on (unknown, empty, a prefix, a
// terminated rental) are not found, still without a whole-table read.
func TestCallsOnNonHolderForUnknownIDs(t *testing.T) {
	c, _ := bigStore(t, 50)
	gone := idleRecord("big", "req-gone", "srv-gone", 100)
	gone.Instance.Status = fleet.StatusTerminated
	require.NoError(t, c.PutInstance(t.Context(), gone))
	m := replica(t, c, "nh")
	c.reset()
	for _, id := range []string{"nope", "", "req", "id-req", "REQ0001", "req-gone", "srv-gone"} {
		_, err := m.Release(t.Context(), id)
		assert.ErrorIs(t, err, fleet.ErrNotFound, "Release %q", id)
		assert.ErrorIs(t, m.MarkBusy(id), fleet.ErrNotFound, "MarkBusy %q", id)
	}
	assert.ErrorIs(t, m.Delete(t.Context(), "small"), fleet.ErrNotFound)
	assert.Zero(t, c.instances.Load()+c.fleets.Load(), "records read by whole-table reads")
	ins, err := c.Intents(t.Context(), "")
	require.NoError(t, err)
	assert.Empty(t, ins, "nothing recorded")
}

// The same calls on a replica whose store finds records by id and on one
// whose store is read whole give the same answers and record the same
// intents: a provider id rented again names its current rental, a record
// being released keeps its release time, a record not ready refuses a
// mark.
func TestCallsOnNonHolderAnswerAsWithoutFinder(t *testing.T) {
	c, _ := bigStore(t, 3)
	ctx := t.Context()
	old := idleRecord("big", "r-old", "srv-1", 10)
	old.Instance.Status = fleet.StatusTerminated
	renew := idleRecord("big", "r-new", "srv-1", 20)
	busy := idleRecord("big", "r-busy", "srv-2", 15)
	busy.Instance.Status, busy.Busy = fleet.StatusBusy, true
	leaving := idleRecord("big", "r-leaving", "srv-3", 16)
	leaving.Instance.Status = fleet.StatusTerminating
	leaving.Termination = &fleet.Termination{Requested: time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC),
		NotBefore: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC), Reason: "idle"}
	booting := idleRecord("big", "r-boot", "srv-4", 17)
	booting.Instance.Status = fleet.StatusProvisioning
	for _, r := range []fleet.InstanceRecord{old, renew, busy, leaving, booting} {
		require.NoError(t, c.PutInstance(ctx, r))
	}
	withFinder, without := replica(t, c, "a"), replica(t, noFinder{c}, "b")
	_, isFinder := fleet.Store(noFinder{c}).(fleet.RecordFinder)
	require.False(t, isFinder)

	ids := []string{"r-old", "r-new", "srv-1", "r-busy", "srv-2", "r-leaving", "srv-3", "r-boot", "srv-4", "req0001", "id-req0002", "none"}
	for _, id := range ids {
		for _, mark := range []func(*fleet.Manager, string) error{(*fleet.Manager).MarkBusy, (*fleet.Manager).MarkIdle} {
			assert.Equal(t, fmt.Sprint(mark(without, id)), fmt.Sprint(mark(withFinder, id)), "mark %s", id)
		}
		for _, opts := range [][]fleet.ReleaseOption{nil, {fleet.WithReleasePolicy(fleet.ReleaseNow)}} {
			at1, err1 := without.Release(ctx, id, opts...)
			at2, err2 := withFinder.Release(ctx, id, opts...)
			assert.Equal(t, fmt.Sprint(err1), fmt.Sprint(err2), "Release %s", id)
			assert.True(t, at1.Equal(at2), "Release %s: %v and %v", id, at1, at2)
		}
	}
	ins, err := c.Intents(ctx, "big")
	require.NoError(t, err)
	require.NotEmpty(t, ins)
	require.Zero(t, len(ins)%2, "each call recorded by both replicas or by neither")
	named := map[string]bool{}
	for i := 0; i < len(ins); i += 2 {
		a, b := ins[i], ins[i+1]
		assert.Equal(t, a.Kind, b.Kind)
		assert.Equal(t, a.InstanceID, b.InstanceID)
		named[a.InstanceID] = true
	}
	assert.Equal(t, map[string]bool{"r-new": true, "r-busy": true, "r-leaving": true, "r-boot": true, "req0001": true, "req0002": true},
		named, "srv-1 names its current rental r-new; the terminated r-old is never named")
}
