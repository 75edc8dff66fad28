package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acceptance 2 (tester S): a fleet's first job runs past one and a half
// minimums, then the next job comes minutes after it ended. The fleet has
// seen no gap yet, so the break-even hold keeps the node: keeping it costs
// the gap, a new node a whole minimum (8 h on bare metal). One machine, and
// at most twice the optimum (the hold's ski-rental bound: the node is held
// up to one minimum after the last job).
func TestRebuyLongFirstJobThenShortGap(t *testing.T) {
	for _, c := range []struct {
		name    string
		req     fleet.Requirements
		minimum time.Duration
		jobs    []workJob
	}{
		{"ha bm 13h job then 30m later", hotType("bm-mi300x-8"), 8 * time.Hour,
			[]workJob{{0, 13 * time.Hour}, {13*time.Hour + 30*time.Minute, time.Hour}}},
		{"ha vm 50m job then 5m later", hotType("vm-mi300x-1"), 30 * time.Minute,
			[]workJob{{0, 50 * time.Minute}, {55 * time.Minute, 5 * time.Minute}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := driveWith(t, c.req, c.jobs, driveOpts{tail: true})
			var total time.Duration
			for _, b := range res.Billed {
				total += b
			}
			last := c.jobs[len(c.jobs)-1]
			optimum := last.Arrive + last.Duration // one node throughout
			assert.Len(t, res.Machines, 1, "a new minimum bought for a job minutes after one ended; billed %v per machine", res.Billed)
			assert.LessOrEqual(t, total, 2*optimum, "billed %v, optimum %v", total, optimum)
		})
	}
}

// Acceptance 2, and rebuyPrior's claim that a fleet working in waves keeps
// all its nodes between waves (tester S): Hot Aisle bare metal (8 h
// prepaid), waves of 12 one-hour jobs every 3 hours. The 12 machines bought
// for the first wave serve every wave: the peak counted is the last wave's,
// however long ago it ended (keeping one idle 2 hours costs 2 hours; a new
// one 8).
func TestRebuyWavesOfTwelveKeepAllTwelve(t *testing.T) {
	var jobs []workJob
	for w := range 4 {
		for range 12 {
			jobs = append(jobs, workJob{time.Duration(w) * 3 * time.Hour, time.Hour})
		}
	}
	res := driveWith(t, hotType("bm-mi300x-8"), jobs, driveOpts{tail: true})
	assert.Len(t, res.Machines, 12, "rentals %v; billed %v", res.Machines, res.Billed)
}

// Acceptance 2 across a restart with the Store (tester S): a Hot Aisle
// bare-metal node (8 h prepaid) ran the fleet's only job for 2 h and is
// idle; the Manager restarts at 4 h; the next job comes 20 minutes after
// the node's minimum ended. The new Manager rebuilds the fleet's jobs from
// its records (InstanceRecord.BusySince) and keeps the node, as the one
// that ran the job would have: the job takes it, no new 8 h is bought.
func TestRebuyHoldSurvivesRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		stop := e.running()
		nodes := e.idleFleet("f", 1, time.Minute, hotType("bm-mi300x-8"))
		created := nodes[0].Created
		in, err := e.m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		time.Sleep(2 * time.Hour)
		require.NoError(t, e.m.MarkIdle(in.ID))
		time.Sleep(2 * time.Hour)
		stop()
		e.m.Close()
		e.m = e.manager(e.store)
		stop = e.running()
		time.Sleep(time.Until(created.Add(8*time.Hour + 20*time.Minute)))
		got, err := e.m.Acquire(t.Context(), "f")
		stop()
		if assert.NoError(t, err, "an idle node 20 min past its minimum; %d live", e.liveServers()) {
			assert.Equal(t, in.ID, got.ID)
		}
		assert.Len(t, servers(e.hot.Ledger().Charges), 1, "one machine bought")
	})
}

// Acceptance 2 (tester W): a fleet none of whose nodes has idled past its
// minimum without a job — jobs handed from node to node, or one batch on
// several nodes — keeps the break-even hold however long since its first
// job (holding has cost nothing yet): the next job, minutes after the last
// one ended, takes a node already paid for instead of buying new minimums.
func TestRebuyHoldUntilAHoldHasCost(t *testing.T) {
	for _, c := range []struct {
		name     string
		req      fleet.Requirements
		jobs     []workJob
		machines int
	}{
		{"ha bm two jobs on one node then 29m later", hotType("bm-mi300x-8"),
			[]workJob{{0, 6 * time.Hour}, {6*time.Hour + 30*time.Minute, 6*time.Hour + 45*time.Minute}, {13*time.Hour + 45*time.Minute, time.Hour}}, 1},
		{"ha bm two-node 13h job then another 30m later", hotType("bm-mi300x-8"),
			[]workJob{{0, 13 * time.Hour}, {0, 13 * time.Hour}, {13*time.Hour + 30*time.Minute, time.Hour}, {13*time.Hour + 30*time.Minute, time.Hour}}, 2},
		{"ha vm two-node 50m job then another 5m later", hotType("vm-mi300x-1"),
			[]workJob{{0, 50 * time.Minute}, {0, 50 * time.Minute}, {55 * time.Minute, 5 * time.Minute}, {55 * time.Minute, 5 * time.Minute}}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := driveWith(t, c.req, c.jobs, driveOpts{tail: true})
			assert.Len(t, res.Machines, c.machines, "rentals %v, billed %v", res.Machines, res.Billed)
		})
	}
}

// A restart on the same Store does not change the re-buy hold (tester W):
// the fleet's first job, its ended jobs and whether a hold has cost are in
// its FleetRecord. Hot Aisle bare metal: a 1 h job, then an 11 h job on the
// same node from 3 h; the Manager restarts at 13 h while it runs; no job
// follows. Billed the same with and without the restart (the restarted
// Manager used to read the fleet as young again and hold the node 8 h more).
func TestRebuyHoldSameAfterARestart(t *testing.T) {
	jobs := []workJob{{0, time.Hour}, {3 * time.Hour, 11 * time.Hour}}
	seen := driveWith(t, hotType("bm-mi300x-8"), jobs, driveOpts{tail: true})
	restarted := driveWith(t, hotType("bm-mi300x-8"), jobs, driveOpts{tail: true, restarts: []time.Duration{13 * time.Hour}})
	total := func(r driveResult) (s time.Duration) {
		for _, b := range r.Billed {
			s += b
		}
		return s
	}
	assert.InDelta(t, total(seen).Minutes(), total(restarted).Minutes(), 5, "without a restart %v (%v), with one %v (%v)",
		total(seen), seen.Machines, total(restarted), restarted.Machines)
}

// Waves of 12 one-hour jobs every 3 hours on Hot Aisle bare metal, the jobs
// of a wave a minute apart (tester W): when a wave's first job starts, the
// previous wave's peak still counts (rebuyPrior counts from the latest
// ended job, not from now), so no idle node is released to be rented again
// minutes later for the same wave.
func TestRebuyWaveStartKeepsThePeak(t *testing.T) {
	var jobs []workJob
	for w := range 4 {
		for i := range 12 {
			jobs = append(jobs, workJob{time.Duration(w)*3*time.Hour + time.Duration(i)*time.Minute, time.Hour})
		}
	}
	res := driveWith(t, hotType("bm-mi300x-8"), jobs, driveOpts{tail: true})
	assert.Len(t, res.Machines, 12, "rentals %v; billed %v", res.Machines, res.Billed)
}

// A fleet whose spec changes kind keeps a re-buy history per kind (its
// minimum reservation: FleetRecord.RebuyKinds, BusyPeriod.Minimum; tester
// X). Two 10-minute Hot Aisle VM jobs (0 h and 4 h; the first VM held past
// its 30-minute minimum and released), then the fleet applied with bare
// metal at 5 h: a 7-hour job from 6 h, the next 30 minutes after the
// server's 8-hour minimum ended. As for a fleet that only ever had bare
// metal, the idle server is held and takes the next job: one server, about
// 9 h to the last job's end (the fleet is deleted then). The VMs' history (a VM idled past its minimum; VM jobs replayed on
// 8-hour nodes) used to turn the bare-metal hold off: two servers, 16 h.
func TestRebuyHoldPerKindAfterASpecChange(t *testing.T) {
	jobs := []workJob{{0, 10 * time.Minute}, {4 * time.Hour, 10 * time.Minute},
		{6 * time.Hour, 7 * time.Hour}, {14*time.Hour + 30*time.Minute, time.Hour}}
	res := driveWith(t, hotType("vm-mi300x-1"), jobs, driveOpts{at: map[time.Duration]func(*env){
		5 * time.Hour: func(e *env) {
			for _, s := range e.m.Fleets() {
				s.Requirements = hotType("bm-mi300x-8")
				require.NoError(e.t, e.m.Apply(e.t.Context(), s))
			}
		},
	}})
	var bm []machineSpan
	var billed time.Duration
	for i, m := range res.Machines {
		if m.ID[:8] == "enc1-gpu" && m.ID[8:10] != "vm" {
			bm = append(bm, m)
			billed += res.Billed[i]
		}
	}
	assert.Len(t, bm, 1, "bare-metal rentals %v, billed %v; runs %v", bm, billed, res.Runs)
	assert.LessOrEqual(t, billed, 10*time.Hour)
}
