// Command offers prints what Vultr and Hot Aisle rent, as one table,
// cheapest first, filtered by flags:
//
//	go run ./examples/offers -gpu MI300X -count 8 -bare-metal any -max-price 30
//
// By default it asks in-process fakes of both clouds (package sim) and needs
// no account. With -real it asks the real APIs, with the credentials in the
// environment: VULTR_API_KEY; HOTAISLE_API_KEY and HOTAISLE_TEAM (either
// cloud, or both). VULTR_BASE_URL and HOTAISLE_BASE_URL point the clients
// elsewhere, e.g. at a gpufleet-sim server.
package main

import (
	"context"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
