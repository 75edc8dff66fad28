// Command quickstart runs a whole GPU fleet lifecycle with gpufleet, with
// no account and no flags:
//
//	go run ./examples/quickstart
//
// It starts fakes of Vultr and Hot Aisle in the process (package sim) with
// the clouds' real-world faults switched on and a clock that runs one cloud
// hour in about three seconds, and drives them with one fleet.Manager and
// the shim: a two-node Vultr MI300X bare-metal cluster in a VPC, a Hot
// Aisle MI300X VM fleet (and Hot Aisle bare metal with -bare-metal), the
// agent started over SSH on every node, some simulated work, release by
// policy, the fleets deleted. It shows the instances live, then a report:
// API calls, faults met, the bill beside the least each instance could cost
// and beside the offline optimum for the same jobs (which knows them in
// advance and reuses machines when cheaper), and what leaked (nothing, or
// the exit code is 1).
//
// With -real it uses the real clouds (VULTR_API_KEY; HOTAISLE_API_KEY and
// HOTAISLE_TEAM): it lists the offers, rents only with -yes, and always
// tears down what it created, also on Ctrl+C.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // the teardown runs now; a second Ctrl+C ends the process
	}()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
