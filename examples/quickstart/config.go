package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/gpufleet/gpufleet/sim"
)

// mi300xMetal is Vultr's MI300X bare-metal plan (8 GPUs, 17.52 USD/h).
const mi300xMetal = "vbm-256c-2048gb-8-mi300x-gpu"

// defaultSpeed runs one cloud hour in 3 wall seconds.
const defaultSpeed = 1200

// maxSpeed is the fastest -speed the quickstart takes: one cloud hour in
// 0.36 wall seconds. A run does wall-clock work too (SSH handshakes of the
// agent starts, the loop's passes): above about 20000 it falls behind the
// cloud clock, agent deadlines are missed and the bill shows that rather
// than the Manager's rules (a VM billed 32 minutes for 30 at 20000; runs
// failing at 50000). sim.MaxSpeed, for embedded clocks, is higher.
const maxSpeed = 10000

// config is the command line.
type config struct {
	speed     float64       // cloud seconds per wall second (sim only)
	bareMetal bool          // also a Hot Aisle bare-metal fleet (8 hours prepaid)
	real      bool          // the real clouds, credentials from the environment
	yes       bool          // real: really provision (and pay)
	plain     bool          // one line per event even on a terminal
	agent     bool          // start the agent over SSH on every node
	seed      uint64        // sim: seed of ids, addresses and keys
	interval  time.Duration // longest pause between reconcile passes, in cloud time (shorter when the Manager has something due)
	teardown  time.Duration // real: wall-clock limit of the teardown
	vultrPlan string        // the Vultr cluster's plan
	nodes     int           // the Vultr cluster's size
	hotNodes  int           // the Hot Aisle VM fleet's size

	// moreFaults, when set, arms more faults in the fakes (tests).
	moreFaults func(*sims) error
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("quickstart", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `quickstart runs a whole GPU fleet lifecycle with gpufleet.

By default it needs no credentials: it starts fakes of Vultr and Hot Aisle in
the process, with their real-world faults switched on, and a clock that runs
one cloud hour in a few seconds. With -real it talks to the real clouds
(VULTR_API_KEY; HOTAISLE_API_KEY and HOTAISLE_TEAM) and lists their offers;
it rents machines only with -yes, and always tears down what it created,
also on Ctrl+C.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.Float64Var(&c.speed, "speed", defaultSpeed, "sim: cloud seconds per wall second (1200: one cloud hour per 3 s; at most 10000)")
	fs.BoolVar(&c.bareMetal, "bare-metal", false, "also run a Hot Aisle bare-metal fleet (prepaid for 8 hours)")
	fs.BoolVar(&c.real, "real", false, "use the real clouds (credentials from the environment)")
	fs.BoolVar(&c.yes, "yes", false, "with -real: really rent the machines (you pay for them)")
	fs.BoolVar(&c.plain, "plain", false, "print one line per event, even on a terminal")
	fs.BoolVar(&c.agent, "agent", true, "start the host agent (dstack-shim) over SSH on every node")
	fs.Uint64Var(&c.seed, "seed", 1, "sim: seed of ids, addresses and host keys")
	fs.DurationVar(&c.interval, "interval", 10*time.Second, "longest pause between reconcile passes (cloud time); a pass comes earlier when a release, retry or timeout falls due")
	fs.DurationVar(&c.teardown, "teardown-timeout", 90*time.Minute, "with -real: how long the teardown may take")
	fs.StringVar(&c.vultrPlan, "vultr-plan", mi300xMetal, "plan of the Vultr cluster fleet")
	fs.IntVar(&c.nodes, "nodes", 2, "nodes of the Vultr cluster fleet")
	fs.IntVar(&c.hotNodes, "hotaisle-nodes", 2, "nodes of the Hot Aisle VM fleet (1x MI300X each)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	case !(c.speed > 0 && c.speed <= maxSpeed): // NaN and +Inf too: a clock that never moves, or overflows
		return c, fmt.Errorf("-speed %g: must be positive, at most %d (one cloud hour per %s): faster, a run's wall-clock work (SSH agent starts, the Manager's passes) falls behind the cloud clock and the bill no longer shows the Manager's rules", c.speed, maxSpeed, wallPerHour(maxSpeed))
	case sim.CheckSpeed(c.speed) != nil: // the sim clock's own bound (higher): kept in step
		return c, fmt.Errorf("-%w", sim.CheckSpeed(c.speed))
	case c.yes && !c.real:
		return c, errors.New("-yes only makes sense with -real")
	case c.interval <= 0 || c.teardown <= 0:
		return c, errors.New("-interval and -teardown-timeout must be positive")
	case c.nodes < 0 || c.hotNodes < 0:
		return c, errors.New("-nodes and -hotaisle-nodes must be 0 or more")
	case c.nodes == 0 && c.hotNodes == 0 && !c.bareMetal:
		return c, errors.New("-nodes and -hotaisle-nodes are both 0 and -bare-metal is off: no fleet to run")
	}
	if c.real {
		c.speed = 1
	}
	return c, nil
}
