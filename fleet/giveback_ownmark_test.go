package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// The job's own MarkBusy keeps its give-back: an orchestrator that marks
// the node it acquired busy (a heartbeat, or re-asserting its placements
// after its own restart — MarkBusy of a node already busy, by the job that
// holds it) gives the node back with GiveBack, which frees it: the node
// goes at its first hour's last safe moment (IdleTimeout 5 min, 1 h
// billed). Whether the MarkBusy is carried out before the give-back or
// still queued with it.
// (tester AZ: before the fix, GiveBack answered ErrHandedOutAgain — "the
// node stays with its current job" — and nobody freed it: a Vultr VM still
// busy and billing 6 h after the job ended, 7 h billed where 1 h.)
func TestGiveBackAfterTheJobsOwnMarkBusy(t *testing.T) {
	for _, mark := range []string{"carried out", "queued"} {
		t.Run("MarkBusy "+mark, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				stop := e.running()
				defer func() { stop(); time.Sleep(time.Minute) }()
				e.idleFleet("f", 1, 5*time.Minute, vultrVM("ewr"))
				job, err := e.m.Acquire(t.Context(), "f")
				require.NoError(t, err)
				time.Sleep(time.Minute)
				require.NoError(t, e.m.MarkBusy(job.ID), "the job's heartbeat: its node is busy")
				if mark == "carried out" {
					time.Sleep(10 * time.Minute)
				}
				gbErr := e.m.GiveBack(job)
				time.Sleep(6 * time.Hour)
				var billed time.Duration
				live := false
				for _, ch := range servers(e.vultr.Ledger().Charges) {
					billed, live = ch.Billed, ch.Live
				}
				t.Logf("GiveBack: %v; 6 h later: %s, billed %v, live %v", gbErr, e.only("f").Status, billed, live)
				assert.NoError(t, gbErr, "the job's own give-back")
				assert.False(t, live, "busy with no job, billing")
				assert.Equal(t, time.Hour, billed)
			})
		})
	}
}

// With replicas, through the holder or the other replica: the job's own
// MarkBusy (stored, carried out by the holder or still pending) keeps its
// hand-out, so its GiveBack frees the node and the holder releases it for
// idleness (1 h billed); the hand-out stays on the stored record meanwhile.
// (tester AZ: before the fix, ErrHandedOutAgain and the node busy for ever.)
func TestReplicasGiveBackAfterTheJobsOwnMarkBusy(t *testing.T) {
	for _, c := range giveBackRoutes {
		t.Run(c.through+", MarkBusy "+c.mark, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, store, rs, h := replicasWithNode(t)
				via := c.replica(rs, h)
				job, err := rs.ms[h].Acquire(t.Context(), "gb")
				require.NoError(t, err)
				time.Sleep(time.Minute)
				require.NoError(t, via.MarkBusy(job.ID), "the job's heartbeat")
				if c.mark == "carried out" {
					time.Sleep(5 * time.Minute)
					rec := storedNode(t, store)
					assert.Equal(t, fleet.StatusBusy, rec.Instance.Status)
					assert.Equal(t, job.HandOut, rec.HandOut, "the job's own MarkBusy keeps its hand-out")
				}
				require.NoError(t, via.GiveBack(job), "the job's own give-back")
				time.Sleep(6 * time.Hour)
				var billed time.Duration
				live := false
				for _, ch := range servers(e.vultr.Ledger().Charges) {
					billed, live = ch.Billed, ch.Live
				}
				assert.False(t, live, "busy with no job, billing")
				assert.Equal(t, time.Hour, billed)
				rs.stopAll()
			})
		})
	}
}
