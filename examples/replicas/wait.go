package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/jackc/pgx/v5"
)

// waitFor polls cond every 50 ms of wall time until it holds, ctx ends or
// limit (wall time) passes.
func (d *demo) waitFor(ctx context.Context, what string, limit time.Duration, cond func(context.Context) (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond(ctx)
		switch {
		case err != nil:
			return fmt.Errorf("waiting for %s: %w", what, err)
		case ok:
			return nil
		case ctx.Err() != nil:
			return fmt.Errorf("waiting for %s: interrupted", what)
		case time.Now().After(deadline):
			if d.left != "" {
				return fmt.Errorf("waiting for %s: still not there after %s (%s)", what, limit, d.left)
			}
			return fmt.Errorf("waiting for %s: still not there after %s", what, limit)
		}
		t := time.NewTimer(50 * time.Millisecond)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// cloudLimit is the wall time that cloud of cloud time takes, plus a few
// lease lifetimes.
func (d *demo) cloudLimit(cloud time.Duration) time.Duration {
	return time.Duration(float64(cloud)/d.cfg.speed) + 5*d.cfg.ttl
}

// allLive: every replica's lease "replica/<id>" is in the store.
func (d *demo) allLive(ctx context.Context) (bool, error) {
	ls, err := d.watch.Leases(ctx)
	n := 0
	for _, l := range ls {
		if strings.HasPrefix(l.Name, "replica/") {
			n++
		}
	}
	return n == len(d.reps), err
}

// allReady: the stored records show every fleet's nodes ready.
func (d *demo) allReady(ctx context.Context) (bool, error) {
	recs, err := d.watch.Instances(ctx)
	ready := map[string]int{}
	for _, r := range recs {
		if r.Instance.Status == fleet.StatusIdle && r.Termination == nil {
			ready[r.Instance.Fleet]++
		}
	}
	for _, s := range d.specs {
		if ready[s.Name] < s.Nodes {
			return false, err
		}
	}
	return err == nil, err
}

// takenOver: no fleet is held by the stopped replica, none unheld.
func (d *demo) takenOver(context.Context) (bool, error) {
	held := d.holders()
	for _, s := range d.specs {
		if h := held[s.Name]; h == "" || h == d.victim {
			return false, nil
		}
	}
	return true, nil
}

// allGone: no fleet is stored and no stored instance may still bill.
func (d *demo) allGone(ctx context.Context) (bool, error) {
	fleets, err := d.watch.Fleets(ctx)
	if err != nil {
		return false, err
	}
	var left []string
	for _, f := range fleets {
		left = append(left, fmt.Sprintf("fleet %s (deleting %t)", f.Spec.Name, f.Deleting))
	}
	recs, err := d.watch.Instances(ctx)
	for _, r := range recs {
		if r.Instance.Status.Active() || r.CreateUncertain {
			left = append(left, fmt.Sprintf("instance %s of %s %s", r.Instance.RequestID, r.Instance.Fleet, r.Instance.Status))
		}
	}
	d.left = strings.Join(left, ", ")
	return err == nil && len(left) == 0, err
}

// fakesEmpty: nothing of any kind is live in either fake.
func (d *demo) fakesEmpty(context.Context) (bool, error) {
	_, _, left := d.w.inventory()
	return len(left) == 0, nil
}

// dropSchema drops the run's schema (pgstore has no call for it).
func (d *demo) dropSchema() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, d.cfg.dsn)
	if err == nil {
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{d.schema}.Sanitize()+" CASCADE")
	}
	if err != nil {
		d.say("warning: dropping schema %s: %v (drop it by hand)", d.schema, err)
	}
}
