package pgstore_test

import (
	"sync"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startAtOnce opens one Store per owner on a new schema and starts a
// Manager on each at the same moment (a replica when replicas is set); it
// returns each Manager's owner (or "" when it did not start) and error.
func startAtOnce(t *testing.T, owners []string, replicas bool) ([]string, []error) {
	t.Helper()
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	w := newWorld(t, 1)
	stores := make([]*pgstore.Store, len(owners))
	for i := range owners {
		s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
		require.NoError(t, err)
		defer s.Close()
		stores[i] = s
	}
	got, errs := make([]string, len(owners)), make([]error, len(owners))
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i, owner := range owners {
		wg.Go(func() {
			<-start
			cfg := fleet.Config{Providers: w.providers, Clock: w.clock, Store: stores[i], Owner: owner}
			if replicas {
				cfg.ReplicaID = "x" + string(rune('0'+i))
			}
			m, err := fleet.NewManager(cfg)
			errs[i] = err
			if err == nil {
				got[i] = m.Owner()
				m.Close()
			}
		})
	}
	close(start)
	wg.Wait()
	return got, errs
}

// Two replicas started at the same moment on a new database with
// different Config.Owner by mistake: both read "no owner yet" and both
// stored theirs (the later overwrote), so both ran, labelling their
// servers with different owners and each taking the other's as foreign
// (4 to 5 rounds of 10). Now the owner is created atomically: exactly one
// starts, the other fails with fleet.ErrOwnerConflict naming the winner.
func TestReplicasWithDifferentOwnersStartingAtOnce(t *testing.T) {
	for round := range 10 {
		got, errs := startAtOnce(t, []string{"own0", "own1"}, true)
		started := 0
		for i := range got {
			if errs[i] == nil {
				started++
				continue
			}
			var oc *fleet.OwnerConflictError
			require.ErrorAs(t, errs[i], &oc, "round %d", round)
			assert.Equal(t, got[1-i], oc.Stored, "round %d: the refusal names the owner that won", round)
		}
		assert.Equal(t, 1, started, "round %d: replicas with owners own0 and own1 both started on one store", round)
	}
}

// Several owners at once, some shared: exactly the Managers of one owner
// start; every other is refused.
func TestManyOwnersStartingAtOnce(t *testing.T) {
	for round, owners := range [][]string{
		{"a1", "b2", "c3", "d4", "e5"},
		{"aa", "aa", "bb", "bb", "cc"},
		{"z", "z", "z", "y"},
	} {
		got, errs := startAtOnce(t, owners, round%2 == 0)
		winner := ""
		for i := range owners {
			if errs[i] == nil {
				require.True(t, winner == "" || winner == got[i], "round %d: owners %q and %q both started", round, winner, got[i])
				winner = got[i]
			}
		}
		require.NotEmpty(t, winner, "round %d: one owner starts", round)
		for i, owner := range owners {
			if owner == winner {
				assert.NoError(t, errs[i], "round %d: %s", round, owner)
			} else {
				assert.ErrorIs(t, errs[i], fleet.ErrOwnerConflict, "round %d: %s", round, owner)
			}
		}
	}
}

// Managers without Config.Owner started at once each generate an owner;
// all end up with the one stored first.
func TestManagersWithoutOwnerStartingAtOnceShareOne(t *testing.T) {
	for round := range 5 {
		got, errs := startAtOnce(t, []string{"", "", "", ""}, false)
		for i := range got {
			require.NoError(t, errs[i], "round %d", round)
			assert.Equal(t, got[0], got[i], "round %d: one owner", round)
		}
	}
}
