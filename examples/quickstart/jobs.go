package main

import (
	"context"
	"fmt"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// readyTimeout bounds the wait for a fleet's nodes (cloud time): Vultr bare
// metal may take 55 minutes, then its agent starts.
const readyTimeout = 2 * time.Hour

// runJob is what an orchestrator does with a fleet: apply it, wait until
// every node is ready (agent healthy, in the VPC when the job needs one),
// mark the nodes busy for the work, mark them idle, and delete the fleet.
// The Manager then releases each node by the release policy: not before
// its reservation window ends (paid anyway), and retried until the cloud
// confirms it gone.
func (d *driver) runJob(ctx context.Context, j job) {
	name := j.spec.Name
	if err := d.m.Apply(ctx, j.spec); err != nil {
		d.jobFailed(ctx, "fleet %s: apply: %v", name, err)
		return
	}
	d.poke()
	defer func() {
		if err := d.m.Delete(context.WithoutCancel(ctx), name); err != nil {
			d.fail("fleet %s: delete: %v", name, err)
		}
		d.poke()
	}()
	ids, err := d.waitReady(ctx, j)
	if err != nil {
		d.jobFailed(ctx, "fleet %s: %v", name, err)
		return
	}
	began := d.w.clock.Now()
	var busy []fleet.Instance
	for range ids { // the job takes every node: Acquire hands out each, the most paid time left first
		inst, err := d.m.Acquire(ctx, name)
		if err != nil {
			d.jobFailed(ctx, "fleet %s: acquire: %v", name, err)
			break
		}
		busy = append(busy, inst)
		d.mu.Lock()
		d.workStart[inst.ID] = began
		d.mu.Unlock()
	}
	d.poke()
	_ = d.w.clock.Sleep(ctx, j.work) // cut short by Ctrl+C
	now := d.w.clock.Now()
	for _, inst := range busy {
		_ = d.m.GiveBack(inst) // fails only for a node released meanwhile
		d.mu.Lock()
		d.workEnd[inst.ID] = now
		d.mu.Unlock()
	}
	d.poke()
}

// waitReady reads the Manager's records after every pass until the fleet
// has its nodes ready, and returns their ids.
func (d *driver) waitReady(ctx context.Context, j job) ([]string, error) {
	deadline := d.w.clock.Now().Add(readyTimeout)
	for {
		passed := d.afterPass() // taken before the read: a pass made meanwhile is not waited for
		var ids []string
		for _, r := range d.m.Records() {
			if r.Instance.Fleet == j.spec.Name && r.Instance.Status == fleet.StatusIdle && r.Termination == nil &&
				(!j.vpc || r.VPCDone) {
				ids = append(ids, r.Instance.ID)
			}
		}
		if len(ids) >= j.spec.Nodes {
			return ids[:j.spec.Nodes], nil
		}
		if !d.w.clock.Now().Before(deadline) {
			return nil, fmt.Errorf("%d of %d nodes ready after %s", len(ids), j.spec.Nodes, readyTimeout)
		}
		select {
		case <-passed:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// jobFailed records a job's failure, unless ctx is done: a step cut by
// Ctrl+C (Apply, the wait for ready nodes, Acquire) is the interrupt, which
// the teardown and exit code 130 report, not a failure of its own.
func (d *driver) jobFailed(ctx context.Context, format string, args ...any) {
	if ctx.Err() == nil {
		d.fail(format, args...)
	}
}

// teardown releases everything at once (on Hot Aisle inside a minimum
// reservation that means force: the minimum is charged anyway) and
// reconciles under a fresh context until every instance and VPC is
// confirmed gone or the teardown limit passes.
func (d *driver) teardown(reason string) {
	limit := 3 * time.Hour
	wall := time.Duration(float64(limit)/d.cfg.speed) + time.Minute
	if d.cfg.real {
		limit, wall = d.cfg.teardown, d.cfg.teardown
	}
	d.ui.printf("Tearing down (%s): releasing every instance now; this may take up to %s.\n", reason, limit)
	if d.cfg.real {
		d.ui.printf("Press Ctrl+C again only to abandon the teardown: what is left keeps billing.\n")
	}
	ctx, cancel := context.WithTimeout(context.Background(), wall)
	defer cancel()
	for _, s := range d.m.Fleets() {
		_ = d.m.Delete(ctx, s.Name)
	}
	for _, r := range d.m.Records() {
		if r.Instance.Status.Active() || r.CreateUncertain {
			id := r.Instance.ID
			if id == "" {
				id = r.Instance.RequestID
			}
			if _, err := d.m.Release(ctx, id, fleet.WithReleasePolicy(fleet.ReleaseNow)); err != nil {
				d.fail("release %s: %v", id, err)
			}
		}
	}
	if !d.drive(ctx, d.allGone, d.w.clock.Now().Add(limit)) {
		d.fail("teardown did not finish within %s", limit)
	}
}
