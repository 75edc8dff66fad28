package pgstore_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// halfStore fails this replica's PutInstance once armed: the process dies
// between the FleetRecord write and the InstanceRecord write of one flush.
type halfStore struct {
	*pgstore.Store
	failInstance atomic.Bool
}

func (s *halfStore) PutInstance(ctx context.Context, r fleet.InstanceRecord) error {
	if s.failInstance.Load() {
		return errors.New("connection reset")
	}
	return s.Store.PutInstance(ctx, r)
}

// As fleet's TestJobHistoryAcrossATakeoverMidFlush, on PostgreSQL: the
// holder writes the FleetRecord (with the job) and dies before its
// InstanceRecord write lands; the replica taking over carries the MarkIdle
// out again and the job is stored once (it was stored twice, 40m0s and
// 41m10s from the same start; tester AD).
func TestJobStoredOnceAfterATakeoverMidFlush(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	w := newWorld(t, 10)
	var ms []*fleet.Manager
	var views []*halfStore
	for _, id := range []string{"a", "b"} {
		s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
		require.NoError(t, err)
		t.Cleanup(s.Close)
		v := &halfStore{Store: s}
		m, err := fleet.NewManager(fleet.Config{Providers: w.providers, Clock: w.clock, Store: v, Owner: "tad",
			ReplicaID: id, Policy: fleet.Policy{Release: fleet.ReleaseNow, LeaseTTL: time.Second}})
		require.NoError(t, err)
		t.Cleanup(m.Close)
		ms, views = append(ms, m), append(views, v)
	}
	a, b := ms[0], ms[1]
	name := fleetFor("a", []string{"a", "b"})
	require.True(t, until(t, w, 5*time.Second, func() bool {
		ls, _ := views[0].Leases(t.Context())
		return len(ls) >= 2
	}, a, b))
	require.NoError(t, a.Apply(t.Context(), fleet.Spec{Name: name, Nodes: 1, Requirements: hotVMs(), IdleTimeout: time.Hour}))
	require.True(t, until(t, w, 30*time.Second, func() bool { return all(a, name, 1, fleet.StatusIdle) }, a, b), "not converged")
	in, err := a.Acquire(t.Context(), name)
	require.NoError(t, err)
	for range 240 { // 40 minutes of cloud time
		_ = a.Reconcile(context.Background())
		_ = b.Reconcile(context.Background())
		w.clock.Advance(10 * time.Second)
	}
	jobs := func() []fleet.BusyPeriod {
		fs, err := views[1].Store.Fleets(t.Context())
		require.NoError(t, err)
		for _, f := range fs {
			if f.Spec.Name == name {
				return f.Jobs
			}
		}
		return nil
	}
	require.Empty(t, jobs())
	views[0].failInstance.Store(true)
	require.NoError(t, a.MarkIdle(in.ID))
	require.True(t, until(t, w, 5*time.Second, func() bool { return len(jobs()) == 1 }, a), "a wrote its FleetRecord")
	a.Close() // dies
	require.True(t, until(t, w, 10*time.Second, func() bool { return all(b, name, 1, fleet.StatusIdle) }, b), "b took over")
	assert.Len(t, jobs(), 1, "one job ran; stored: %v", jobs())
	require.NoError(t, b.Delete(t.Context(), name))
	until(t, w, 10*time.Second, func() bool { return len(b.Fleets()) == 0 }, b)
}
