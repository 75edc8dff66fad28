package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
)

// owner is the Config.Owner every replica shares.
const owner = "demo"

// replica is one Manager of the three, as if in its own process.
type replica struct {
	id    string
	store *pgstore.Store
	m     *fleet.Manager
	stop  context.CancelFunc
	done  chan struct{} // closed when its loop has returned
}

// move is a FleetTaken or FleetReleased event of one replica.
type move struct {
	replica, fleet string
	taken          bool
	at             time.Duration // wall time since the start
	why            string        // FleetReleased: why the replica let go
}

// demo is one run: the fakes, the replicas, and what the report needs.
type demo struct {
	cfg    config
	out    io.Writer
	w      *world
	schema string
	watch  *pgstore.Store // reads the shared records, as an operator would
	left   string         // what allGone last found still there
	reps   []*replica
	specs  []fleet.Spec

	start  time.Time // wall
	cloud0 time.Time

	mu    sync.Mutex
	moves []move

	victim    string        // the replica stopped half-way
	stoppedAt time.Duration // wall time since the start
	takeover  time.Duration // from the stop until its fleets were all held by others
	errs      []string
}

// replicas runs the whole scenario and returns its report; the error is
// one that ended it early (the report then says what was left behind).
func replicas(ctx context.Context, cfg config, out io.Writer) (*report, error) {
	key, err := authorizedKey()
	if err != nil {
		return nil, err
	}
	d := &demo{cfg: cfg, out: out, w: newWorld(cfg.speed), schema: newSchemaName(), specs: specs(key), start: time.Now()}
	d.cloud0 = d.w.clock.Now()
	if d.watch, err = pgstore.Open(ctx, cfg.dsn, pgstore.WithSchema(d.schema)); err != nil {
		return nil, err
	}
	defer d.dropSchema()
	defer d.watch.Close()
	for i := range 3 {
		if err := d.startReplica(ctx, fmt.Sprintf("r%d", i+1)); err != nil {
			d.closeAll()
			return nil, err
		}
	}
	d.say("3 replicas (r1, r2, r3, owner %q) share PostgreSQL schema %s; lease TTL %s of wall time; one cloud hour per %s",
		owner, d.schema, cfg.ttl, time.Duration(float64(time.Hour)/cfg.speed).Round(10*time.Millisecond))
	err = d.scenario(ctx)
	if err != nil {
		d.errs = append(d.errs, err.Error())
	}
	d.closeAll()
	return d.report(), err
}

// scenario: apply, wait until ready, stop one replica, wait for the
// takeover, delete everything, wait until it is gone.
func (d *demo) scenario(ctx context.Context) error {
	if err := d.waitFor(ctx, "the 3 replicas to register", 10*d.cfg.ttl, d.allLive); err != nil {
		return err
	}
	for i, s := range d.specs {
		r := d.reps[i%len(d.reps)]
		if err := r.m.Apply(ctx, s); err != nil {
			return fmt.Errorf("apply %s on %s: %w", s.Name, r.id, err)
		}
		d.say("apply %s (%d x %s %s) on %s", s.Name, s.Nodes, s.Requirements.Providers[0], s.Requirements.InstanceTypes[0], r.id)
	}
	if err := d.waitFor(ctx, "every node ready", d.cloudLimit(2*time.Hour), d.allReady); err != nil {
		return err
	}
	d.say("every node ready; holders: %s", d.holdersText())
	d.stopOne()
	if err := d.waitFor(ctx, "the takeover", 10*d.cfg.ttl, d.takenOver); err != nil {
		return err
	}
	d.takeover = time.Since(d.start) - d.stoppedAt
	d.say("%s's fleets are held by others %.2fs after it stopped; holders: %s", d.victim, d.takeover.Seconds(), d.holdersText())
	live := []*replica{}
	for _, r := range d.reps {
		if r.id != d.victim {
			live = append(live, r)
		}
	}
	for i, s := range d.specs {
		if err := live[i%len(live)].m.Delete(ctx, s.Name); err != nil {
			return fmt.Errorf("delete %s: %w", s.Name, err)
		}
	}
	d.say("every fleet deleted (intents recorded on %s and %s, carried out by each fleet's holder)", live[0].id, live[1].id)
	if err := d.waitFor(ctx, "every fleet gone", d.cloudLimit(3*time.Hour), d.allGone); err != nil {
		return err
	}
	d.say("every fleet gone, its machines confirmed deleted; the collector replica removes the SSH key at its next lease sync")
	_ = d.waitFor(ctx, "the fakes to be empty", 5*d.cfg.ttl, d.fakesEmpty) // what is left shows in the report
	return nil
}

// startReplica opens the replica's own store and Manager and runs its loop.
func (d *demo) startReplica(ctx context.Context, id string) error {
	s, err := pgstore.Open(ctx, d.cfg.dsn, pgstore.WithSchema(d.schema))
	if err != nil {
		return err
	}
	m, err := fleet.NewManager(fleet.Config{Providers: d.w.providers(), Clock: d.w.clock, Store: s, Owner: owner,
		ReplicaID: id, Policy: fleet.Policy{LeaseTTL: d.cfg.ttl}, OnEvent: func(e fleet.Event) { d.onEvent(id, e) }})
	if err != nil {
		s.Close()
		return err
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	r := &replica{id: id, store: s, m: m, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		_ = m.Run(rctx) // returns when stopped or closed
	}()
	d.reps = append(d.reps, r)
	return nil
}

func (d *demo) onEvent(id string, e fleet.Event) {
	if e.Type != fleet.EventFleetTaken && e.Type != fleet.EventFleetReleased {
		return
	}
	mv := move{replica: id, fleet: e.Fleet, taken: e.Type == fleet.EventFleetTaken, at: time.Since(d.start)}
	if !mv.taken {
		_, mv.why, _ = strings.Cut(e.Message, ": ")
	}
	d.mu.Lock()
	d.moves = append(d.moves, mv)
	d.mu.Unlock()
}

// stopOne stops the loop of the replica holding the most fleets, without
// Close: it no longer renews its leases, as if its process had hung.
func (d *demo) stopOne() {
	held := d.holders()
	count := map[string]int{}
	for _, h := range held {
		count[h]++
	}
	victim := d.reps[0]
	for _, r := range d.reps {
		if count[r.id] > count[victim.id] {
			victim = r
		}
	}
	victim.stop()
	<-victim.done
	d.victim, d.stoppedAt = victim.id, time.Since(d.start)
	var mine []string
	for _, s := range d.specs {
		if held[s.Name] == victim.id {
			mine = append(mine, s.Name)
		}
	}
	d.say("stopping %s's loop without Close, as if its process hung: it stops renewing its leases (%s)", victim.id, strings.Join(mine, ", "))
}

// closeAll closes every Manager (the stopped one too: its leases are
// already lost, so its last writes are refused) and its store.
func (d *demo) closeAll() {
	for _, r := range d.reps {
		r.m.Close()
		r.stop()
		<-r.done
		r.store.Close()
	}
}

// holders returns each fleet's current holder by the events.
func (d *demo) holders() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]string{}
	for _, mv := range d.moves {
		switch {
		case mv.taken:
			out[mv.fleet] = mv.replica
		case out[mv.fleet] == mv.replica:
			delete(out, mv.fleet)
		}
	}
	return out
}

func (d *demo) holdersText() string {
	held := d.holders()
	var parts []string
	for _, r := range d.reps {
		var mine []string
		for _, s := range d.specs {
			if held[s.Name] == r.id {
				mine = append(mine, s.Name)
			}
		}
		parts = append(parts, r.id+" "+list(mine))
	}
	return strings.Join(parts, "; ")
}

// say prints one line stamped with the wall and cloud time since the start.
func (d *demo) say(format string, args ...any) {
	cloud := d.w.clock.Now().Sub(d.cloud0)
	fmt.Fprintf(d.out, "[wall %5.2fs  cloud %s] %s\n", time.Since(d.start).Seconds(), hms(cloud), fmt.Sprintf(format, args...))
}

// newSchemaName is a fresh schema for one run.
func newSchemaName() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "replicas_" + hex.EncodeToString(b[:])
}

func hms(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}
