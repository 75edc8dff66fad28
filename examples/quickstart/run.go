package main

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"golang.org/x/crypto/ssh"
)

// run is the whole program; it returns the exit code: 0; 1 when something
// failed or leaked; 2 for a bad command line (an unknown plan included);
// 130 when interrupted and torn down cleanly.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "quickstart:", err)
		return 2
	}
	rep, err := quickstart(ctx, cfg, getenv, stdout)
	if errors.Is(err, errInterrupted) {
		fmt.Fprintln(stderr, "quickstart:", err)
		return 130
	}
	if errors.As(err, new(usageError)) {
		fmt.Fprintln(stderr, "quickstart:", err)
		return 2
	}
	if err != nil {
		fmt.Fprintln(stderr, "quickstart:", err)
		return 1
	}
	return exitCode(ctx, rep)
}

// errInterrupted: the run was interrupted (Ctrl+C) before anything was
// rented.
var errInterrupted = errors.New("interrupted before anything was rented")

// exitCode is 1 when the report shows a leak or a failure, 130 when ctx
// was cancelled (Ctrl+C) and the teardown was clean, else 0.
func exitCode(ctx context.Context, rep *report) int {
	switch {
	case rep != nil && !rep.ok():
		return 1
	case ctx.Err() != nil:
		return 130
	}
	return 0
}

// driver runs the fleets through one Manager and keeps what the report needs.
type driver struct {
	cfg  config
	w    *world
	m    *fleet.Manager
	ui   *progress
	out  io.Writer
	jobs []job
	pub  ssh.PublicKey

	start, wallStart time.Time

	mu      sync.Mutex
	events  []fleet.Event
	workEnd map[string]time.Time // instance id → when its work stopped
	// workStart is when each instance's work started (instance id).
	workStart map[string]time.Time
	errs      []string // what went wrong, for the report
	pace      pacer    // when the next pass is due (under mu: pace.passed)
}

// quickstart builds the world, shows the offers and, unless it is a dry run
// on the real clouds, runs every fleet from apply to confirmed deletion and
// returns the report (nil for a dry run).
func quickstart(ctx context.Context, cfg config, getenv func(string) string, out io.Writer) (*report, error) {
	priv, signer, err := throwawayKey()
	if err != nil {
		return nil, err
	}
	var w *world
	if cfg.real {
		w, err = newRealWorld(cfg, getenv, signer)
	} else {
		w, err = newSimWorld(cfg, signer)
	}
	if err != nil {
		return nil, err
	}
	if w.sims != nil {
		defer w.sims.close()
	}
	d := &driver{cfg: cfg, w: w, out: out, pub: signer.PublicKey(), ui: newProgress(out, cfg.plain, w.clock, w.meter.link),
		start: w.clock.Now(), wallStart: time.Now(), workEnd: map[string]time.Time{},
		workStart: map[string]time.Time{}, pace: newPacer()}
	d.m, err = fleet.NewManager(fleet.Config{Providers: w.providers, Agent: w.agent, Clock: w.clock,
		Interval: cfg.interval, OnEvent: d.onEvent})
	if err != nil {
		return nil, err
	}
	defer d.m.Close()
	authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " gpufleet-quickstart"
	d.jobs = jobs(cfg, w.have(), fleet.NewPrivateKey(priv), authorized)
	if err := d.intro(ctx); err != nil {
		return nil, err
	}
	if cfg.real && !cfg.yes {
		fmt.Fprintln(out, "\nDry run: nothing was rented. Run again with -real -yes to provision these fleets (you pay for them).")
		return nil, nil
	}
	d.lifecycle(ctx)
	d.m.Close() // agent starts end; their last events come before the report
	d.removeKey()
	rep := d.report()
	rep.print(out)
	return rep, nil
}

// throwawayKey makes the run's SSH key, in memory only. Its SHA256
// fingerprint has no "/": Hot Aisle deletes a key by fingerprint in the URL
// path, where "/" travels as %2F, and a "//" there is lost by path cleaning
// (the sim answers 404), which would leave the key on the account.
func throwawayKey() (ed25519.PrivateKey, ssh.Signer, error) {
	for {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		signer, err := ssh.NewSignerFromKey(priv)
		if err != nil {
			return nil, nil, err
		}
		if !strings.Contains(ssh.FingerprintSHA256(signer.PublicKey()), "/") {
			return priv, signer, nil
		}
	}
}

func (d *driver) onEvent(e fleet.Event) {
	d.mu.Lock()
	d.events = append(d.events, e)
	d.mu.Unlock()
	d.ui.event(e)
}

func (d *driver) fail(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.mu.Lock()
	d.errs = append(d.errs, msg)
	d.mu.Unlock()
	d.ui.printf("! %s\n", msg)
}

// lifecycle runs every job concurrently while this goroutine reconciles
// whenever something is due (see drive), until every fleet is deleted and
// confirmed gone.
// If ctx ends first (Ctrl+C) or the run overruns, everything is released at
// once and the teardown goes on under a fresh context.
func (d *driver) lifecycle(ctx context.Context) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	jobsDone := make(chan struct{})
	for _, j := range d.jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.runJob(runCtx, j)
		}()
	}
	go func() { wg.Wait(); close(jobsDone) }()
	d.ui.run(d.m.Records, d.header)
	defer d.ui.close()
	finished := func() bool {
		select {
		case <-jobsDone:
			return d.allGone()
		default:
			return false
		}
	}
	if d.drive(runCtx, finished, d.start.Add(d.overrun())) {
		return
	}
	reason := "interrupted"
	if ctx.Err() == nil {
		reason = fmt.Sprintf("still running after %s of cloud time", d.overrun())
		d.fail("the run overran: %s", reason)
	}
	cancel()
	wg.Wait()
	d.teardown(reason)
}

// overrun is how much cloud time the run may take before it is torn down:
// the longest minimum reservation and work, plus four hours.
func (d *driver) overrun() time.Duration {
	longest := time.Hour
	if d.cfg.bareMetal {
		longest = 8 * time.Hour
	}
	return longest + 4*time.Hour
}

// passTimeout bounds one reconcile pass (wall time).
const passTimeout = 5 * time.Minute

// drive reconciles until done holds (true), or ctx ends or the cloud clock
// passes deadline (false). Passes come when the Manager says the next is
// due (NextPass), at most -interval apart, and at once after a job's
// intent (see pacer). A pass is never cut by ctx, only stopped between
// passes: cutting a create call half-way leaves a machine the Manager can
// only find again by its label, and on Hot Aisle the label is written by a
// second call that may not have happened.
func (d *driver) drive(ctx context.Context, done func() bool, deadline time.Time) bool {
	for {
		pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), passTimeout)
		err := d.m.Reconcile(pctx)
		cancel()
		d.passDone()
		if err != nil {
			d.fail("reconcile: %v", err)
		}
		if done() {
			return true
		}
		if ctx.Err() != nil || !d.w.clock.Now().Before(deadline) {
			return false
		}
		if d.untilNextPass(ctx) != nil {
			return false
		}
	}
}

// allGone reports whether no fleet is left and nothing may still bill.
func (d *driver) allGone() bool {
	if len(d.m.Fleets()) > 0 {
		return false
	}
	for _, r := range d.m.Records() {
		if r.Instance.Status.Active() || r.CreateUncertain {
			return false
		}
	}
	return true
}

// header is the first line of the live table.
func (d *driver) header() string {
	now := d.w.clock.Now()
	s := fmt.Sprintf("gpufleet quickstart  cloud %s  wall %s", clockSince(now.Sub(d.start)),
		time.Since(d.wallStart).Round(100*time.Millisecond))
	if !d.cfg.real {
		s += fmt.Sprintf("  (1 cloud hour per %s)", wallPerHour(d.cfg.speed))
	}
	return s
}

func wallPerHour(speed float64) time.Duration {
	return time.Duration(float64(time.Hour) / speed).Round(10 * time.Millisecond)
}

// removeKey takes the run's throwaway SSH key off the Hot Aisle account.
func (d *driver) removeKey() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := d.w.removeKey(ctx, d.pub); err != nil {
		d.fail("removing the throwaway SSH key from Hot Aisle: %v", err)
	}
}
