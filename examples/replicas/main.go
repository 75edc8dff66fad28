// Command replicas runs three fleet.Manager replicas on one PostgreSQL
// database, on in-process fakes of Vultr and Hot Aisle, and shows a
// takeover:
//
//	eval "$(bash scripts/pg-local.sh start)"   # a throwaway PostgreSQL; exports GPUFLEET_PG_DSN
//	go run ./examples/replicas
//
// Each replica is a Manager with the same Owner, its own ReplicaID and its
// own pgstore.Store on a schema made for the run (dropped at the end). The
// fleets are applied on different replicas; each fleet is reconciled by
// the one replica that holds its lease. Half-way, the loop of the replica
// holding the most fleets is stopped without Close, as if its process had
// hung: it stops renewing its leases, and once they run out the others
// take its fleets over. Then every fleet is deleted, and a report says
// which replica held which fleets, how long the takeover took in wall
// time, the API calls, the bill from the fakes' ledgers and what was left
// behind (nothing, or the exit code is 1).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/sim"
)

// envDSN names the environment variable holding the connection string.
const envDSN = "GPUFLEET_PG_DSN"

// config is the command line.
type config struct {
	dsn   string        // PostgreSQL connection string
	speed float64       // cloud seconds per wall second
	ttl   time.Duration // fleet.Policy.LeaseTTL (leases run in wall time)
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the whole program; it returns the exit code: 0; 1 when something
// failed or was left behind; 2 for a bad command line or no database; 130
// when interrupted.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "replicas:", err)
		return 2
	}
	if cfg.dsn == "" {
		cfg.dsn = getenv(envDSN)
	}
	if cfg.dsn == "" {
		fmt.Fprintf(stderr, "replicas: no PostgreSQL: start a local one with eval \"$(bash scripts/pg-local.sh start)\" (it exports %s), or pass -dsn\n", envDSN)
		return 2
	}
	rep, err := replicas(ctx, cfg, stdout)
	if rep != nil {
		rep.print(stdout)
	}
	switch {
	case ctx.Err() != nil:
		return 130
	case errors.Is(err, pgstore.ErrUnreachable):
		fmt.Fprintf(stderr, "replicas: %v\nIs PostgreSQL running there? Check -dsn (or %s), or start a local one with eval \"$(bash scripts/pg-local.sh start)\"\n", err, envDSN)
		return 1
	case err != nil:
		fmt.Fprintln(stderr, "replicas:", err)
		return 1
	case !rep.ok():
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("replicas", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `replicas runs three gpufleet Manager replicas on one PostgreSQL and shows one taken over.

The replicas share the database that -dsn or `+envDSN+` names (a throwaway
one: eval "$(bash scripts/pg-local.sh start)"), in a schema made for the run
and dropped at the end. They drive fakes of Vultr and Hot Aisle in the
process, on a clock that runs one cloud hour in a few seconds. Half-way one
replica stops renewing its leases; the others take its fleets over. Then
every fleet is deleted and a report follows.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.dsn, "dsn", "", "PostgreSQL connection string (default: $"+envDSN+")")
	fs.Float64Var(&c.speed, "speed", 1200, "cloud seconds per wall second (1200: one cloud hour per 3 s)")
	fs.DurationVar(&c.ttl, "lease-ttl", 2*time.Second, "fleet.Policy.LeaseTTL, in wall time (the library's default is 30s)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	case sim.CheckSpeed(c.speed) != nil:
		return c, fmt.Errorf("-%w", sim.CheckSpeed(c.speed))
	case c.ttl < 300*time.Millisecond:
		return c, errors.New("-lease-ttl must be at least 300ms")
	}
	return c, nil
}
