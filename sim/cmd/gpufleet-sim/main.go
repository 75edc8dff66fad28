// Command gpufleet-sim serves the sim fakes of the Vultr API v2 and the Hot
// Aisle API on loopback ports, so that test suites in any language can use
// them:
//
//	go run ./sim/cmd/gpufleet-sim -speed 60
//
// A script that stops it by pid builds it first (the pid of "go run" is the
// go tool's, not the server's):
//
//	go build -o gpufleet-sim ./sim/cmd/gpufleet-sim && ./gpufleet-sim -speed 60 &
//
// It prints one line per fake, easy to parse:
//
//	GPUFLEET_SIM_VULTR_URL=http://127.0.0.1:41001/v2
//	GPUFLEET_SIM_HOTAISLE_URL=http://127.0.0.1:41002/api
//
// and serves on each port, besides the fake's API, an admin API under
// /_sim/ (GET /_sim/ lists it): snapshot, resources, calls, ledger, routes,
// faults, chaos mode, out-of-band operations, reset. -chaos bad-day makes
// both fakes misbehave from the start, seeded by -chaos-seed. It stops on
// SIGINT or SIGTERM; -h prints the flags and exits 0.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gpufleet/gpufleet/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(exitCode(run(ctx, os.Args[1:], os.Stdout, os.Stderr), os.Stderr))
}

// exitCode is 0 for success and for -h (the usage was printed: asking
// for help is no error), else 2 after printing the error.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "gpufleet-sim:", err)
	return 2
}

// config is the command line.
type config struct {
	vultrAddr, hotaisleAddr string
	vultrKey, hotaisleKey   string
	team                    string
	seed                    uint64
	speed                   float64
	vultrRPS                float64
	chaos                   string
	chaosSeed               uint64
	lag                     time.Duration
}

const usageHead = `gpufleet-sim serves fakes of the Vultr API v2 and the Hot Aisle API on
loopback ports, for test suites in any language. It prints one line per fake:

  GPUFLEET_SIM_VULTR_URL=http://127.0.0.1:PORT/v2
  GPUFLEET_SIM_HOTAISLE_URL=http://127.0.0.1:PORT/api

Each port also serves an admin API under /_sim/ (GET /_sim/ lists it).
It stops on SIGINT or SIGTERM.

Flags:
`

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("gpufleet-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.vultrAddr, "vultr-addr", "127.0.0.1:0", "listen address of the Vultr fake (port 0: any free port)")
	fs.StringVar(&c.hotaisleAddr, "hotaisle-addr", "127.0.0.1:0", "listen address of the Hot Aisle fake (port 0: any free port)")
	fs.StringVar(&c.vultrKey, "vultr-key", sim.DefaultAPIKey, "API key the Vultr fake accepts (Authorization: Bearer <key>)")
	fs.StringVar(&c.hotaisleKey, "hotaisle-key", sim.DefaultAPIKey, "API key the Hot Aisle fake accepts (Authorization: Token <key>)")
	fs.StringVar(&c.team, "team", sim.DefaultTeam, "Hot Aisle team handle")
	fs.Uint64Var(&c.seed, "seed", sim.DefaultSeed, "seed of names, addresses and passwords")
	fs.Float64Var(&c.speed, "speed", 1, "cloud time runs this many times faster than wall time (60: an hour per minute)")
	fs.Float64Var(&c.vultrRPS, "vultr-rps", sim.DefaultVultrRateLimit,
		"Vultr rate limit in requests per wall-clock second (0: none)")
	fs.StringVar(&c.chaos, "chaos", "", fmt.Sprintf("chaos mode from the start with this profile, one of %q", sim.ChaosProfileNames()))
	chaosSeed := fs.Uint64("chaos-seed", 0, "seed of chaos mode (default: -seed)")
	fs.DurationVar(&c.lag, "visibility-lag", 0, "servers created less than this long ago (cloud time) are missing from reads, e.g. 30s")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usageHead)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.chaosSeed = c.seed
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "chaos-seed" {
			c.chaosSeed = *chaosSeed
		}
	})
	if _, ok := sim.ChaosProfileByName(c.chaos); c.chaos != "" && !ok {
		return c, fmt.Errorf("-chaos %q: want one of %q", c.chaos, sim.ChaosProfileNames())
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if err := sim.CheckSpeed(c.speed); err != nil {
		return c, fmt.Errorf("-%w", err)
	}
	if !(c.vultrRPS >= 0) || math.IsInf(c.vultrRPS, 0) {
		return c, fmt.Errorf("-vultr-rps must be 0 or more, got %v", c.vultrRPS)
	}
	switch {
	case strings.TrimSpace(c.vultrKey) == "" || strings.TrimSpace(c.hotaisleKey) == "":
		return c, errors.New("-vultr-key and -hotaisle-key must not be empty (the fakes would refuse every request)")
	case c.team == "" || strings.ContainsAny(c.team, "/?#% "):
		return c, fmt.Errorf("-team %q: a Hot Aisle team handle is one non-empty path segment", c.team)
	case c.lag < 0:
		return c, fmt.Errorf("-visibility-lag must not be negative, got %v", c.lag)
	case c.chaos == "" && c.chaosSeed != c.seed:
		return c, errors.New("-chaos-seed only makes sense with -chaos")
	}
	return c, nil
}

// fakes builds both fakes on one clock and one SSH network. The Vultr rate
// limit runs on the cloud clock, so it is scaled by the speed to stay
// vultrRPS per wall-clock second.
func (c config) fakes() (*sim.Vultr, *sim.HotAisle, *sim.Network) {
	clock := sim.RealClock()
	if c.speed != 1 {
		clock = sim.ScaledClock(c.speed)
	}
	network := sim.NewNetwork(clock, c.seed)
	common := []sim.Option{sim.WithSeed(c.seed), sim.WithClock(clock), sim.WithNetwork(network),
		sim.WithVisibilityLag(c.lag)}
	if p, ok := sim.ChaosProfileByName(c.chaos); ok {
		common = append(common, sim.WithChaos(c.chaosSeed, p))
	}
	burst := max(int(c.vultrRPS), 1)
	v := sim.NewVultr(append(common, sim.WithAPIKey(c.vultrKey),
		sim.WithVultrRateLimit(c.vultrRPS/c.speed, burst))...)
	h := sim.NewHotAisle(append(common, sim.WithAPIKey(c.hotaisleKey), sim.WithTeam(c.team))...)
	return v, h, network
}

// run serves both fakes until ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	v, h, network := c.fakes()
	defer network.Close()
	vl, err := net.Listen("tcp", c.vultrAddr)
	if err != nil {
		return err
	}
	hl, err := net.Listen("tcp", c.hotaisleAddr)
	if err != nil {
		vl.Close()
		return err
	}
	servers := []*http.Server{
		{Handler: withAdmin(v), ReadHeaderTimeout: 10 * time.Second},
		{Handler: withAdmin(h), ReadHeaderTimeout: 10 * time.Second},
	}
	fmt.Fprintf(stdout, "GPUFLEET_SIM_VULTR_URL=http://%s/v2\n", vl.Addr())
	fmt.Fprintf(stdout, "GPUFLEET_SIM_HOTAISLE_URL=http://%s/api\n", hl.Addr())
	fmt.Fprintf(stderr, "gpufleet-sim: seed %d, speed %vx, Hot Aisle team %q; admin API under %s on both ports\n",
		c.seed, c.speed, c.team, AdminPrefix)
	if c.chaos != "" {
		fmt.Fprintf(stderr, "gpufleet-sim: chaos mode %q, seed %d\n", c.chaos, c.chaosSeed)
	}
	errs := make(chan error, 2)
	for i, l := range []net.Listener{vl, hl} {
		go func() { errs <- servers[i].Serve(l) }()
	}
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdown)
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
