package pgstore_test

import (
	"encoding/json"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/internal/pgtest"
)

// A Manager on PostgreSQL writes every change against the version it
// holds (no write is refused), and a Manager started later on the same
// schema resumes the fleets without creating anything again.
func TestManagerResumesFromPostgres(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	w := newWorld(t, 10)
	var failures atomic.Int64

	s1, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
	require.NoError(t, err)
	m1 := w.manager(t, s1, &failures)
	require.NoError(t, m1.Apply(t.Context(), fleet.Spec{Name: "v", Nodes: 3, Requirements: vultrVMs()}))
	require.NoError(t, m1.Apply(t.Context(), fleet.Spec{Name: "h", Nodes: 2, Requirements: hotVMs()}))
	w.passes(t, m1, func() bool { return all(m1, "v", 3, fleet.StatusIdle) && all(m1, "h", 2, fleet.StatusIdle) })
	m1.Close()
	s1.Close()

	s2, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
	require.NoError(t, err)
	defer s2.Close()
	recs, err := s2.Instances(t.Context())
	require.NoError(t, err)
	require.Len(t, recs, 5)
	// The providers' trouble is recorded too (the hourly release margin
	// after a restart): since m1's start, nothing failed.
	v, ok, err := s2.Meta(t.Context(), fleet.MetaUnsettled)
	require.NoError(t, err)
	require.True(t, ok, "no %s record", fleet.MetaUnsettled)
	var settle struct {
		Since  time.Time
		Failed map[string]time.Time
	}
	require.NoError(t, json.Unmarshal([]byte(v), &settle), v)
	assert.False(t, settle.Since.IsZero(), v)
	assert.Empty(t, settle.Failed, v)
	for _, r := range recs {
		assert.GreaterOrEqual(t, r.Version, int64(2), "written more than once (pending, then created and on)")
	}
	m2 := w.manager(t, s2, &failures)
	defer m2.Close()
	assert.True(t, all(m2, "v", 3, fleet.StatusIdle), "known from the store before any call")
	require.NoError(t, m2.Apply(t.Context(), fleet.Spec{Name: "v", Nodes: 4, Requirements: vultrVMs()}))
	w.passes(t, m2, func() bool { return all(m2, "v", 4, fleet.StatusIdle) && all(m2, "h", 2, fleet.StatusIdle) })
	assert.Equal(t, 6, w.servers(false), "one more, nothing created twice")

	require.NoError(t, m2.Delete(t.Context(), "v"))
	require.NoError(t, m2.Delete(t.Context(), "h"))
	w.passes(t, m2, func() bool { return len(m2.Fleets()) == 0 })
	assert.Zero(t, w.servers(true), "nothing left")
	fs, err := s2.Fleets(t.Context())
	require.NoError(t, err)
	assert.Empty(t, fs)
	assert.Zero(t, failures.Load(), "no write refused")
}
