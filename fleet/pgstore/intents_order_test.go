package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/internal/pgtest"
)

// blockDeleteIntents makes every insert of a delete intent in schema wait
// for the advisory lock key that conn holds: the insert has taken its seq
// (bigserial default) but has not committed, as a slow commit would.
func blockDeleteIntents(t *testing.T, dsn, schema string, key int64) (release func()) {
	t.Helper()
	ddl := connect(t, dsn)
	_, err := ddl.Exec(t.Context(), fmt.Sprintf(`CREATE FUNCTION %[1]s.slow_intent() RETURNS trigger AS $$
BEGIN
  IF NEW.data->>'Kind' = 'delete' THEN PERFORM pg_advisory_xact_lock_shared(%[2]d); END IF;
  RETURN NEW;
END $$ LANGUAGE plpgsql;
CREATE TRIGGER slow_intent BEFORE INSERT ON %[1]s.intents FOR EACH ROW EXECUTE FUNCTION %[1]s.slow_intent();`, schema, key))
	require.NoError(t, err)
	holder := connect(t, dsn)
	_, err = holder.Exec(t.Context(), "SELECT pg_advisory_lock($1)", key)
	require.NoError(t, err)
	return func() {
		_, err := holder.Exec(context.Background(), "SELECT pg_advisory_unlock($1)", key)
		require.NoError(t, err)
	}
}

// waitBlocked waits until an insert waits for the advisory lock.
func waitBlocked(t *testing.T, dsn string) {
	t.Helper()
	conn := connect(t, dsn)
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		var n int
		require.NoError(t, conn.QueryRow(t.Context(),
			`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`).Scan(&n))
		if n > 0 {
			return
		}
		require.Less(t, time.Since(start), 10*time.Second, "the delete intent never reached the database")
	}
}

// A Delete recorded on a replica whose insert is slow to commit, and an
// Apply of the same fleet recorded meanwhile by another caller: the Apply
// cannot draw its Seq before the Delete commits (a fleet's intents commit in
// Seq order), so the holder never sees the later one first, acknowledges
// past the earlier one and skips it. Both are carried out, Delete first
// (the Apply then meets a fleet being deleted and is ignored).
func TestIntentsOfAFleetCommitInSeqOrder(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	w := newWorld(t, 10)
	var mu sync.Mutex
	var events []fleet.EventType
	ms := make([]*fleet.Manager, 2)
	for i := range ms {
		s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
		require.NoError(t, err)
		t.Cleanup(s.Close)
		ms[i], err = fleet.NewManager(fleet.Config{Providers: w.providers, Clock: w.clock, Store: s, Owner: "t4",
			ReplicaID: fmt.Sprintf("r%d", i), Policy: fleet.Policy{Release: fleet.ReleaseNow, LeaseTTL: 600 * time.Millisecond},
			OnEvent: func(e fleet.Event) {
				if i == 0 && e.Fleet == "f" {
					mu.Lock()
					events = append(events, e.Type)
					mu.Unlock()
				}
			}})
		require.NoError(t, err)
		t.Cleanup(ms[i].Close)
	}
	holder, other := ms[0], ms[1] // only holder reconciles: it is the one live replica
	s0, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
	require.NoError(t, err)
	defer s0.Close()
	syncs := func(n int) {
		for range n {
			require.NoError(t, holder.Reconcile(context.Background()))
			time.Sleep(250 * time.Millisecond) // leases and syncs run on the process clock
			require.NoError(t, holder.Reconcile(context.Background()))
		}
	}
	require.NoError(t, other.Apply(t.Context(), fleet.Spec{Name: "f", Nodes: 0}))
	syncs(3)
	fs, err := s0.Fleets(t.Context())
	require.NoError(t, err)
	require.Len(t, fs, 1, "the holder stored the fleet")

	release := blockDeleteIntents(t, dsn, schema, 4242)
	deleted, applied := make(chan error, 1), make(chan error, 1)
	go func() { deleted <- other.Delete(context.Background(), "f") }()
	waitBlocked(t, dsn)
	go func() {
		applied <- other.Apply(context.Background(), fleet.Spec{Name: "f", Nodes: 0, IdleTimeout: time.Hour})
	}()
	syncs(2)
	select {
	case err := <-applied:
		t.Fatalf("the Apply was recorded while the earlier Delete had not committed (%v)", err)
	default:
	}
	release()
	require.NoError(t, <-deleted, "Delete was accepted")
	require.NoError(t, <-applied, "Apply was accepted")
	syncs(6)
	ins, err := s0.Intents(t.Context(), "f")
	require.NoError(t, err)
	assert.Empty(t, ins, "every intent carried out and acknowledged")
	mu.Lock()
	assert.Contains(t, events, fleet.EventFleetDeleted, "the Delete was carried out (the Apply after it, on a fleet being deleted, is ignored)")
	mu.Unlock()
	assert.Empty(t, holder.Fleets())
}
