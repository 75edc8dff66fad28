package fleet_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A waiting release its own fleet's growth takes back does not give way to
// another fleet in the pass that growth is carried out: the idle release
// (which forces a waiting release for a refused fleet) runs before the
// growth's reclaim in a pass, and a node forced away there is bought again
// by its own fleet, a new minimum. Hot Aisle bare metal, the pool of 2:
// fleet "c"'s server runs a job all along; fleet "a" is applied with no
// node and its idle server X's scale-down waits for its 8-h minimum's end.
// Fleet "b" applies one server: the catalog lists the offer sold out (b's
// refusal is noted at the end of that pass). Before the next pass, "a" is
// applied with one node again: in that pass X is taken back for a
// (EventReleaseCancelled), not forced away for b.
//
// (before the fix: X yielded to b and was released with force in the pass
// that raised a's Nodes; a wanted a server again and would buy a new
// 8-h minimum.)
func TestWaitingReleaseTakenBackByItsFleetsGrowthDoesNotGiveWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		e.idleFleet("c", 1, 5*time.Minute, hotType("bm-mi300x-8"))
		x := e.idleFleet("a", 1, 5*time.Minute, hotType("bm-mi300x-8"))[0]
		stop := e.running()
		defer stop()
		xc, err := e.m.Acquire(t.Context(), "c")
		require.NoError(t, err)
		sa := spec("a", 0, hotType("bm-mi300x-8"))
		sa.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), sa))
		time.Sleep(10 * time.Minute) // the catalog's cache ends: b's pass reads it afresh (sold out)
		rec := recordOf(e.m, x.ID)
		require.NotNil(t, rec.Termination, "a's scale-down")
		require.Equal(t, "scale down", rec.Termination.Reason)
		// a grows once b's refusal is noted, in the pass after: b's
		// EventNoOffers, delivered after the pass that noted it, records it.
		grown := make(chan error, 1)
		e.mu.Lock()
		e.onEvent = func(ev fleet.Event) {
			if ev.Type != fleet.EventNoOffers || ev.Fleet != "b" {
				return
			}
			e.mu.Lock()
			e.onEvent = nil
			yielded := len(yieldedTo0(e.events, "b"))
			e.mu.Unlock()
			if yielded > 0 {
				grown <- errors.New("X gave way before a's growth")
				return
			}
			sa.Nodes = 1
			grown <- e.m.Apply(context.Background(), sa)
		}
		e.mu.Unlock()
		s := spec("b", 1, hotType("bm-mi300x-8"))
		s.IdleTimeout = 5 * time.Minute
		require.NoError(t, e.m.Apply(t.Context(), s))
		asked := time.Now()
		select {
		case err := <-grown:
			require.NoError(t, err, "a's growth")
		case <-time.After(10 * time.Minute):
			t.Fatal("b's refusal (the catalog lists the offer sold out) not seen")
		}
		time.Sleep(30 * time.Minute)
		logYieldEvents(t, e, asked)
		assert.Empty(t, yieldedTo(e, "b", asked), "X gave way to b in the pass a's growth took it back")
		assert.True(t, serverCharge(e, x.ID).Live, "a's server X released")
		y, err := e.m.Acquire(t.Context(), "a")
		if assert.NoError(t, err, "a's node") {
			assert.Equal(t, x.ID, y.ID, "a's node is X, taken back")
			require.NoError(t, e.m.GiveBack(y))
		}
		require.NoError(t, e.m.GiveBack(xc))
	})
}

// yieldedTo0 counts the releases among events that give way to fleet name
// (as yieldedTo, on a log already locked).
func yieldedTo0(events []fleet.Event, name string) []fleet.Event {
	var out []fleet.Event
	for _, ev := range events {
		if ev.Type == fleet.EventReleaseRequested && strings.Contains(ev.Message, "yields to fleet "+name) {
			out = append(out, ev)
		}
	}
	return out
}
