package fleet_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"go.uber.org/goleak"
)

// Seeded fault schedules: random fleets, operations, cloud faults and (in
// TestCrashSchedules) process crashes at random times, each schedule in one
// synctest bubble; then every fleet is deleted and the reservation windows
// pass, and the invariants are read from the fakes' own records (see
// faultschedule_check_test.go). Even seeds drive the Manager with Run in a
// goroutine, odd seeds with Reconcile every 10 s.
//
// A failing schedule prints its seed and its plan; replay one with
//
//	go test ./fleet -run 'TestFaultSchedules/seed=123$' -v
//
// (-schedule.events also prints every Manager event). More schedules:
// -schedules=1000, or GPUFLEET_SCHEDULES=1000.

var (
	scheduleCount  = flag.Int("schedules", 0, "fault schedules per mode (default 200; also GPUFLEET_SCHEDULES)")
	scheduleEvents = flag.Bool("schedule.events", false, "print every Manager event of a failing fault schedule")
	scheduleLog    = flag.Bool("schedule.log", false, "print the plan and run log of every fault schedule, failing or not")
)

func schedulesPerMode() int {
	if *scheduleCount > 0 {
		return *scheduleCount
	}
	if n, err := strconv.Atoi(os.Getenv("GPUFLEET_SCHEDULES")); err == nil && n > 0 {
		return n
	}
	return 200
}

func TestFaultSchedules(t *testing.T) { runSchedules(t, false) }

// TestCrashSchedules adds crashes: the Manager is abandoned between passes,
// mid-pass (inside OnEvent, around a provider call) and restarted with the
// same Store or an empty one, its old calls still landing.
func TestCrashSchedules(t *testing.T) { runSchedules(t, true) }

func runSchedules(t *testing.T, crashes bool) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after every schedule's bubble
	for seed := 1; seed <= schedulesPerMode(); seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			runSchedule(t, newSchedule(uint64(seed), crashes))
		})
	}
}

// replayEnv is the environment a replay of seed needs (tester AF: a seed
// above the default count, or run under another policy, replayed as "no
// tests to run" without it).
func replayEnv(seed uint64) string {
	var env string
	if seed > 200 {
		env += fmt.Sprintf("GPUFLEET_SCHEDULES=%d ", seed)
	}
	if p := os.Getenv("GPUFLEET_SCHEDULE_POLICY"); p != "" {
		env += fmt.Sprintf("GPUFLEET_SCHEDULE_POLICY=%q ", p)
	}
	return env
}

func runSchedule(t *testing.T, sch *schedule) {
	var w *world
	t.Cleanup(func() {
		if w == nil || !(t.Failed() || *scheduleLog) {
			return
		}
		t.Logf("replay: %sgo test ./fleet -run '%s$' -v\n%s\nrun log:\n%s", replayEnv(sch.seed), t.Name(), sch, w.runLog())
		if *scheduleEvents && t.Failed() || *scheduleLog {
			t.Logf("events:\n%s", w.eventLog())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		w = newWorld(t, sch)
		w.play()
		w.check()
	})
}

// play runs the schedule: its actions at their times, then the teardown.
func (w *world) play() {
	w.seedForeign()
	w.startGen()
	for _, a := range w.sch.actions {
		w.runUntil(w.start.Add(a.At))
		w.restartIfPending()
		w.do(a)
	}
	w.runUntil(w.start.Add(w.sch.opsEnd))
	w.teardown()
	w.stopAll()
}

// teardownLimit bounds the teardown: Hot Aisle bare metal is prepaid for
// 8 hours, and an orphan waits OrphanGrace before its release.
const teardownLimit = 10 * time.Hour

// teardown deletes every fleet the test or the Manager knows and drives the
// Manager until the fakes hold nothing of its owner (or teardownLimit). A
// crash during the teardown loses the Delete calls the loop had not taken
// yet: they are made again to the next process.
func (w *world) teardown() {
	w.deleteAll()
	end := time.Now().Add(teardownLimit)
	for time.Now().Before(end) {
		g := w.gen
		w.runUntil(time.Now().Add(time.Minute))
		if w.gen != g {
			w.deleteAll()
		}
		if w.clean() {
			w.logf("clean")
			return
		}
	}
	w.logf("not clean after %s", teardownLimit)
}

// deleteAll deletes every fleet the test or the Manager knows.
func (w *world) deleteAll() {
	w.restartIfPending()
	names := map[string]bool{}
	for _, s := range w.gen.m.Fleets() {
		names[s.Name] = true
	}
	for _, name := range w.model.order {
		names[name] = true
	}
	w.logf("teardown: delete every fleet (policy %q)", w.sch.teardownPolicy)
	for _, name := range w.model.order {
		if names[name] {
			w.deleteFleet(name, w.sch.teardownPolicy)
			delete(names, name)
		}
	}
	for name := range names { // known to the Manager only (a lost Delete)
		w.deleteFleet(name, w.sch.teardownPolicy)
	}
}

func (w *world) deleteFleet(name string, p fleet.ReleasePolicy) {
	var opts []fleet.ReleaseOption
	if p != "" {
		opts = append(opts, fleet.WithReleasePolicy(p))
	}
	err := w.gen.m.Delete(context.Background(), name, opts...)
	w.model.deleted(name, p)
	if err != nil {
		w.logf("delete %s: %v", name, err)
	}
}

// restartIfPending restarts after a crash before an action, so that the
// action reaches a live process.
func (w *world) restartIfPending() {
	w.mu.Lock()
	pending := w.restart != nil
	w.mu.Unlock()
	if pending {
		w.tick()
	}
}

// do carries out one action of the schedule.
func (w *world) do(a action) {
	ctx, m := context.Background(), w.gen.m
	switch a.Kind {
	case actFleet, actApply:
		spec := a.Spec
		if a.Kind == actApply {
			spec = w.model.fleets[a.Fleet].spec
			spec.Nodes = a.Nodes
		}
		err := m.Apply(ctx, spec)
		w.model.applied(spec, err)
		if err != nil {
			w.logf("apply %s: %v", spec.Name, err)
		}
	case actDelete:
		w.deleteFleet(a.Fleet, a.Policy)
	case actRelease, actBusy, actIdle, actVanish:
		w.onInstance(a)
	case actFault:
		target := w.vultr.Inject
		if a.Hot {
			target = w.hot.Inject
		}
		if err := target(a.Fault); err != nil {
			w.t.Fatalf("%s: %v", a, err)
		}
	case actSlow:
		w.mu.Lock()
		w.slowTill, w.slowMax = time.Now().Add(a.For), a.Max
		w.mu.Unlock()
	case actHide:
		w.mu.Lock()
		w.hideTill, w.hideMax = time.Now().Add(a.For), a.Max
		w.mu.Unlock()
	case actCrash:
		w.arm(a.Crash)
	}
}

// onInstance carries out an action on one instance of a fleet, picked by
// index among those it applies to.
func (w *world) onInstance(a action) {
	var pick []fleet.Instance
	for _, inst := range w.gen.m.Instances(a.Fleet) {
		switch {
		case inst.ID == "" || inst.Status == fleet.StatusTerminated:
		case a.Kind == actBusy && inst.Status != fleet.StatusIdle, a.Kind == actIdle && inst.Status != fleet.StatusBusy:
		default:
			pick = append(pick, inst)
		}
	}
	if len(pick) == 0 {
		w.logf("%s: no instance", a.Kind)
		return
	}
	inst := pick[a.Index%len(pick)]
	var err error
	switch a.Kind {
	case actRelease:
		var opts []fleet.ReleaseOption
		if a.Policy != "" {
			opts = append(opts, fleet.WithReleasePolicy(a.Policy))
		}
		if _, err = w.gen.m.Release(context.Background(), inst.ID, opts...); err == nil {
			w.model.fleets[a.Fleet].releases++
		}
	case actBusy:
		err = w.gen.m.MarkBusy(inst.ID)
	case actIdle:
		err = w.gen.m.MarkIdle(inst.ID)
	case actVanish:
		if inst.Provider == fleet.ProviderVultr {
			err = w.vultr.DestroyOutOfBand(inst.ID)
		} else {
			err = w.hot.DeleteOutOfBand(inst.ID)
		}
		if err == nil {
			w.model.fleets[a.Fleet].destroyed++
		}
	}
	w.logf("%s %s %s: err=%v", a.Kind, a.Fleet, inst.ID, err)
}

// model is what the test asked for, to bound the creates it explains.
type model struct {
	fleets map[string]*fleetModel
	order  []string
}

type fleetModel struct {
	spec      fleet.Spec // as last applied
	base      int        // Nodes the Manager was last told (0 once a restart forgot the fleet)
	grown     int        // the sum of every increase of Nodes over base
	releases  int        // Release calls accepted
	destroyed int        // instances deleted behind the Manager's back
	deleted   bool
	delPolicy fleet.ReleasePolicy
}

func newModel() *model { return &model{fleets: map[string]*fleetModel{}} }

func (m *model) get(name string) *fleetModel {
	f := m.fleets[name]
	if f == nil {
		f = &fleetModel{}
		m.fleets[name] = f
		m.order = append(m.order, name)
	}
	return f
}

func (m *model) applied(spec fleet.Spec, err error) {
	f := m.get(spec.Name)
	if err != nil {
		return
	}
	f.spec = spec
	f.grown += max(0, spec.Nodes-f.base)
	f.base = spec.Nodes
}

func (m *model) deleted(name string, p fleet.ReleasePolicy) {
	f := m.get(name)
	if !f.deleted {
		f.deleted, f.delPolicy = true, p
	}
}

// reapply tells a restarted Manager the desired state, as a program does
// when it starts: Apply for the fleets it wants, Delete for those it
// deleted and the Manager still has.
func (m *model) reapply(w *world, g *generation) {
	known := map[string]bool{}
	for _, s := range g.m.Fleets() {
		known[s.Name] = true
	}
	for _, name := range m.order {
		f := m.fleets[name]
		switch {
		case f.deleted && known[name]:
			w.deleteFleet(name, f.delPolicy)
		case !f.deleted && f.spec.Name != "":
			err := g.m.Apply(context.Background(), f.spec)
			m.applied(f.spec, err)
			if err != nil {
				w.logf("apply again %s: %v", name, err)
			}
		}
	}
}

// forget is a restart with an empty Store and no Apply: the Manager knows
// no fleet, so the next Apply of one counts from zero.
func (m *model) forget() {
	for _, f := range m.fleets {
		f.base = 0
	}
}
