package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Reconcile waits for a Vultr create that takes 20 minutes (past
// CreateTimeout, 5 min); a minute in, the fleet is deleted and the
// Manager closed (Close during Reconcile). Expected: Reconcile returns
// ErrClosed at once, Close returns within its bound (4.5 min), and a new
// Manager on the same Store deletes whatever the create left: nothing
// billing after 2 h, at most 1 h billed.
func TestCloseDuringAReconcileWaitingForACreate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.slowCreates("vultr", 20*time.Minute, 1)
		require.NoError(t, e.m.Apply(t.Context(), spec("v", 1, vultrVM("ewr"))))
		done := make(chan error, 1)
		go func() { done <- e.m.Reconcile(context.Background()) }()
		time.Sleep(time.Minute)
		require.NoError(t, e.m.Delete(t.Context(), "v"))
		start := time.Now()
		e.m.Close()
		took := time.Since(start)
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Hour):
			t.Fatal("Reconcile did not return after Close")
		}
		t.Logf("Close took %v; Reconcile: %v", took, err)
		assert.LessOrEqual(t, took, 3*90*time.Second)
		e.m = e.manager(e.store)
		e.run(2 * time.Hour)
		for _, c := range servers(e.vultr.Ledger().Charges) {
			t.Logf("%s billed %v live %v", c.ResourceID, c.Billed, c.Live)
			assert.False(t, c.Live)
			assert.LessOrEqual(t, c.Billed, time.Hour)
		}
		_, err = e.m.Acquire(t.Context(), "v")
		assert.ErrorIs(t, err, fleet.ErrNotFound)
	})
}

// CloseContext promises: "Every method returns ErrClosed after Close; a
// call that Close overtakes returns ErrClosed rather than record
// anything", and Reconcile's doc names ErrClosed among its errors. A
// Reconcile waiting for a slow Vultr create (20 min) is overtaken by Close
// a minute in. Now: it returns ErrClosed (its caller's loop learns the
// Manager is gone, and that what fell due was not carried out).
// Before (tester AT): it returns nil, as if it had carried out what was due.
// Cause: loop.go Reconcile drops awaitOrDue's ErrClosed (the final return
// joins only flush, ctx.Err and replicaErr).
func TestReconcileOvertakenByCloseReturnsErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.slowCreates("vultr", 20*time.Minute, 1)
		require.NoError(t, e.m.Apply(t.Context(), spec("v", 1, vultrVM("ewr"))))
		done := make(chan error, 1)
		go func() { done <- e.m.Reconcile(context.Background()) }()
		time.Sleep(time.Minute)
		e.m.Close()
		err := <-done
		t.Logf("Reconcile overtaken by Close: %v", err)
		assert.ErrorIs(t, err, fleet.ErrClosed)
		time.Sleep(30 * time.Minute) // the sim's slow create ends
	})
}
