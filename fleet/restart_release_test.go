package fleet_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runAgainOnStore starts a new Manager on e's Store, the old one stopped
// (its Run ended), and runs it; the returned stop ends that Run.
func (e *env) runAgainOnStore() (stop func()) {
	e.restartWith(e.store)
	return e.running()
}

// serversRented is how many servers (no SSH keys) both sims have billed.
func (e *env) serversRented() int {
	return len(servers(append(e.vultr.Ledger().Charges, e.hot.Ledger().Charges...)))
}

// A Manager restarted from its Store mid-hour (Close, a new Manager on the
// same Store, Run), one node idle since its job ended. The node must still
// go at its last safe moment, and nothing is bought again (the fleet's
// idle release lowered Nodes). Cases: the restart well before the release
// moment; a Manager down across the moment and back with time for a delete
// left (Vultr VM: down 55:00–58:00, 2 min of the hour left; Hot Aisle VM,
// RebuyHoldOff: down 20:00–29:20, 40 s of the minimum left); a restart
// just after a release was requested. Holds on main; kept as a guard.
func TestRestartMidHourReleasesOnTime(t *testing.T) {
	for _, c := range []struct {
		name     string
		pol      fleet.Policy
		req      fleet.Requirements
		jobEnd   time.Duration
		down, up time.Duration
		want     time.Duration // billed
	}{
		{"vultr/restart 30m", fleet.Policy{}, vultrType(vm), 10 * time.Minute, 30 * time.Minute, 30 * time.Minute, time.Hour},
		{"vultr/down 55m-58m", fleet.Policy{}, vultrType(vm), 10 * time.Minute, 55 * time.Minute, 58 * time.Minute, time.Hour},
		{"vultr/restart 57m05s", fleet.Policy{}, vultrType(vm), 10 * time.Minute, 57*time.Minute + 5*time.Second, 57*time.Minute + 5*time.Second, time.Hour},
		{"vultr/2nd hour down 110m-118m", fleet.Policy{}, vultrType(vm), 70 * time.Minute, 110 * time.Minute, 118 * time.Minute, 2 * time.Hour},
		{"hot/restart 20m", fleet.Policy{RebuyHoldOff: true}, hotType("vm-mi300x-1"), 12 * time.Minute, 20 * time.Minute, 20 * time.Minute, 30 * time.Minute},
		{"hot/down 20m-29m20s", fleet.Policy{RebuyHoldOff: true}, hotType("vm-mi300x-1"), 12 * time.Minute, 20 * time.Minute, 29*time.Minute + 20*time.Second, 30 * time.Minute},
		{"hot/bm down 7h50m-7h59m", fleet.Policy{RebuyHoldOff: true}, hotType("bm-mi300x-8"), 2 * time.Hour, 470 * time.Minute, 479 * time.Minute, 480 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, x, from, stop := oneNodeAfterJob(t, c.pol, c.req, 5*time.Minute, c.jobEnd, c.down)
				stop()
				time.Sleep(time.Until(from.Add(c.up)))
				defer e.runAgainOnStore()()
				got := waitChargeEnds(e, x.ID, 6*time.Hour)
				t.Logf("%s: billed %v, to +%v, live %v; servers rented %d (%s)", c.name, got.Billed, got.To.Sub(got.From).Round(time.Second), got.Live, e.serversRented(), got.Description)
				assert.False(t, got.Live, "still live")
				assert.Equal(t, c.want, got.Billed, "billed")
				assert.Equal(t, 1, e.serversRented(), "a server bought again after the restart")
			})
		})
	}
}

// The default re-buy hold (break-even, chosen from the fleet's stored
// jobs) across a restart: the same jobs billed the same with or without a
// Manager restarted from its Store during the hold, and nothing bought
// again. Hot Aisle VM: jobs 0–12 min and 40–47 min (the second after its
// minimum), restart at 60 min, while the node is held past its minimum
// (TestRebuyHoldSameAfterARestart and TestRebuyHoldSurvivesRestart cover
// bare metal). Holds on main; kept as a guard.
func TestDefaultHoldAcrossRestart(t *testing.T) {
	billed := map[bool]time.Duration{}
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprintf("restart=%v", restart), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				in := e.idleFleet("a", 1, 5*time.Minute, hotType("vm-mi300x-1"))[0]
				stop := e.running()
				from := serverCharge(e, in.ID).From
				for _, j := range [][2]time.Duration{{0, 12 * time.Minute}, {40 * time.Minute, 47 * time.Minute}} {
					time.Sleep(time.Until(from.Add(j[0])))
					x, err := e.m.Acquire(t.Context(), "a")
					require.NoError(t, err)
					time.Sleep(time.Until(from.Add(j[1])))
					require.NoError(t, e.m.GiveBack(x))
				}
				if restart {
					time.Sleep(time.Until(from.Add(time.Hour)))
					stop()
					stop = e.runAgainOnStore()
				}
				defer func() { stop() }()
				got := waitChargeEnds(e, in.ID, 30*time.Hour)
				billed[restart] = got.Billed
				t.Logf("restart %v: billed %v, to +%v, live %v, servers %d", restart, got.Billed, got.To.Sub(got.From).Round(time.Second), got.Live, e.serversRented())
				assert.Equal(t, 1, e.serversRented(), "bought again")
			})
		})
	}
	assert.Equal(t, billed[false], billed[true], "the hold changed across a restart")
}

// A Manager restarted from its Store shortly before an idle node's release
// is due, its first listings of the node's provider failing (HTTP 503)
// until after that moment, then answering again with time left for a
// delete. The Store holds the node's id and billing start; deletes work.
// Expected: released inside the unit it was in (Vultr VM: billed 1 h; Hot
// Aisle VM, RebuyHoldOff: its 30-min minimum), nothing bought again.
// Holds on main; kept as a guard.
func TestRestartWithListingDownAcrossReleaseMoment(t *testing.T) {
	for _, c := range []struct {
		name     string
		req      fleet.Requirements
		route    string
		jobEnd   time.Duration
		restart  time.Duration
		listDown time.Duration
		want     time.Duration
	}{
		{"vultr", vultrType(vm), vultrVMList, 10 * time.Minute, 50 * time.Minute, 8 * time.Minute, time.Hour},
		{"hot", hotType("vm-mi300x-1"), hotVMList, 12 * time.Minute, 25 * time.Minute, 4*time.Minute + 20*time.Second, 30 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, x, from, stop := oneNodeAfterJob(t, fleet.Policy{RebuyHoldOff: true}, c.req, 5*time.Minute, c.jobEnd, c.restart)
				stop()
				f := sim.Fault{Route: c.route, Status: 503, Duration: c.listDown}
				if c.name == "vultr" {
					require.NoError(t, e.vultr.Inject(f))
				} else {
					require.NoError(t, e.hot.Inject(f))
				}
				defer e.runAgainOnStore()()
				got := waitChargeEnds(e, x.ID, 6*time.Hour)
				for _, ev := range e.eventsOf(fleet.EventReleaseRequested) {
					t.Logf("+%v release requested %s", ev.Time.Sub(from).Round(time.Second), ev.Message)
				}
				t.Logf("%s: restart +%v, listing down %v: billed %v, to +%v, servers %d (%s)", c.name, c.restart, c.listDown, got.Billed, got.To.Sub(got.From).Round(time.Second), e.serversRented(), got.Description)
				assert.False(t, got.Live)
				assert.Equal(t, c.want, got.Billed)
				assert.Equal(t, 1, e.serversRented(), "bought again")
			})
		})
	}
}

// The idle clock across a restart. Hot Aisle VM, RebuyHoldOff, IdleTimeout
// 20 min, a job to 35:00 (past the 30-min minimum, so IdleTimeout
// decides): released at 55:00 and billed 55 min, whether or not the
// Manager is restarted from its Store at 50:00 (in one case its first VM
// listings fail for 3 min). Holds on main; kept as a guard.
func TestIdleClockAcrossRestart(t *testing.T) {
	for _, c := range []struct {
		name     string
		restart  bool
		listDown time.Duration
	}{{"no restart", false, 0}, {"restart", true, 0}, {"restart, listing down 3m", true, 3 * time.Minute}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e, x, _, stop := oneNodeAfterJob(t, fleet.Policy{RebuyHoldOff: true}, hotType("vm-mi300x-1"), 20*time.Minute, 35*time.Minute, 50*time.Minute)
				if c.restart {
					stop()
					if c.listDown > 0 {
						require.NoError(t, e.hot.Inject(sim.Fault{Route: hotVMList, Status: 503, Duration: c.listDown}))
					}
					stop = e.runAgainOnStore()
				}
				defer func() { stop() }()
				got := waitChargeEnds(e, x.ID, 6*time.Hour)
				t.Logf("%s: billed %v, to +%v", c.name, got.Billed, got.To.Sub(got.From).Round(time.Second))
				assert.Equal(t, 55*time.Minute, got.Billed)
			})
		})
	}
}
