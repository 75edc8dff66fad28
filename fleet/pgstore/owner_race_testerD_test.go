package pgstore_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Two replicas started at the same moment on a new database with
// different Config.Owner by mistake. Config.Owner promises: "A Store that
// already holds another owner is refused", and replicas "must share
// Config.Owner". Started one after the other, the second is refused; started
// at once, both read "no owner yet" and both store theirs (the later
// overwrites), so both run, labelling their servers with different owners
// and each taking the other's as foreign. Expected: exactly one of the two
// starts, however close together they are.
func TestReplicasWithDifferentOwnersStartingAtOnceTesterD(t *testing.T) {
	dsn := pgtest.DSN(t)
	w := newWorld(t, 1)
	both := 0
	for round := range 10 {
		schema := pgtest.Schema(t, dsn)
		var stores []*pgstore.Store
		for range 2 {
			s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
			require.NoError(t, err)
			stores = append(stores, s)
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make([]error, 2)
		ms := make([]*fleet.Manager, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ms[i], errs[i] = fleet.NewManager(fleet.Config{Providers: w.providers, Clock: w.clock, Store: stores[i],
					Owner: fmt.Sprintf("own%d", i), ReplicaID: fmt.Sprintf("x%d", i)})
			}()
		}
		close(start)
		wg.Wait()
		ok := 0
		for i := range 2 {
			if errs[i] == nil {
				ok++
				ms[i].Close()
			}
			stores[i].Close()
		}
		if ok == 2 {
			both++
		}
		assert.Equal(t, 1, ok, "round %d: replicas with owners own0 and own1 both started on one store", round)
	}
	t.Logf("both started in %d of 10 rounds", both)
}
