package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/examples/internal/hint"
	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
)

// queryTimeout bounds the whole listing.
const queryTimeout = 2 * time.Minute

// run is the whole program; it returns the exit code: 0 when offers were
// printed (or none matched), 1 when a cloud could not be asked, 2 for a bad
// command line, an unknown name included.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	req, real, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "offers:", err)
		return 2
	}
	var providers []fleet.Provider
	if real {
		providers, err = realProviders(getenv)
		if err != nil {
			fmt.Fprintln(stderr, "offers:", err)
			return 1
		}
	} else {
		providers = simProviders()
	}
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	cat := fleet.NewCatalog(providers, 0)
	defer cat.Close()
	all, err := cat.Offers(ctx, fleet.Requirements{Providers: req.Providers, IncludeSoldOut: true})
	code := 0
	if err != nil { // one cloud failed; the others' offers are still shown
		fmt.Fprintln(stderr, "offers: listing offers failed:", err)
		code = 1
	}
	if len(all) == 0 && err != nil {
		fmt.Fprintln(stderr, "offers: no cloud answered, so nothing can be shown or matched")
		return code
	}
	if err == nil { // a name unknown to every cloud asked is a typo
		if uerr := hint.Unknown(req, all); uerr != nil {
			fmt.Fprintln(stderr, "offers:", uerr)
			return 2
		}
	}
	offers := fleet.Filter(all, req)
	if len(offers) == 0 {
		noMatch(stdout, req, all, err != nil)
		return code
	}
	if werr := fleet.WriteOffers(stdout, offers); werr != nil {
		fmt.Fprintln(stderr, "offers:", werr)
		return 1
	}
	return code
}

// noMatch says that the filters matched nothing, and which flag to drop to
// get offers.
func noMatch(w io.Writer, req fleet.Requirements, all []fleet.Offer, partial bool) {
	of := ""
	if partial {
		of = " (from the clouds that answered)"
	}
	fmt.Fprintf(w, "0 of %d offers%s match these filters.\n", len(all), of)
	relax := hint.Relax(req, all)
	if len(relax) == 0 {
		fmt.Fprintln(w, "  dropping any one filter still matches nothing: drop several")
	}
	for _, r := range relax {
		if r.Flag == "all" {
			fmt.Fprintf(w, "  with -all (sold-out offers shown): %d\n", r.Matches)
		} else {
			fmt.Fprintf(w, "  without -%s: %d\n", r.Flag, r.Matches)
		}
	}
}

// parseFlags turns the command line into fleet.Requirements.
func parseFlags(args []string, stderr io.Writer) (req fleet.Requirements, real bool, err error) {
	fs := flag.NewFlagSet("offers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `offers lists what Vultr and Hot Aisle rent, as one table, cheapest first.

By default it asks in-process fakes of both clouds and needs no account; with
-real it asks the real APIs (VULTR_API_KEY; HOTAISLE_API_KEY and HOTAISLE_TEAM).

Usage: go run ./examples/offers [flags]

Flags:
`)
		fs.PrintDefaults()
	}
	gpu := fs.String("gpu", "", "GPU model, e.g. MI300X, H100, L40S (any when empty)")
	vendor := fs.String("vendor", "", "GPU vendor, AMD or NVIDIA (any when empty)")
	count := fs.Int("count", 0, "GPUs per instance (any when 0)")
	bareMetal := fs.String("bare-metal", "any", "bare metal: any, yes (only bare metal) or no (only VMs)")
	maxPrice := fs.Float64("max-price", 0, "highest price in USD per hour for the whole instance (no limit when 0)")
	provider := fs.String("provider", "", "providers, comma-separated: vultr, hotaisle (all when empty)")
	region := fs.String("region", "", "regions, comma-separated, e.g. ord,us-michigan-1 (all when empty)")
	all := fs.Bool("all", false, "also show offers that are sold out now")
	fs.BoolVar(&real, "real", false, "ask the real APIs (credentials from the environment) instead of the sim")
	if err := fs.Parse(args); err != nil {
		return req, false, err
	}
	if fs.NArg() > 0 {
		return req, false, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	req = fleet.Requirements{Providers: list(*provider), Regions: list(*region), GPUModel: *gpu, GPUVendor: *vendor,
		GPUCount: *count, MaxPricePerHour: *maxPrice, IncludeSoldOut: *all}
	switch strings.ToLower(*bareMetal) {
	case "any", "":
	case "yes", "true", "only":
		req.BareMetal = fleet.Yes
	case "no", "false":
		req.BareMetal = fleet.No
	default:
		return req, false, fmt.Errorf("-bare-metal must be any, yes or no, not %q", *bareMetal)
	}
	if *count < 0 || !(*maxPrice >= 0) || math.IsInf(*maxPrice, 0) {
		return req, false, errors.New("-count and -max-price must not be negative (-max-price a number)")
	}
	for _, p := range req.Providers {
		if p != fleet.ProviderVultr && p != fleet.ProviderHotAisle {
			return req, false, fmt.Errorf("unknown provider %q: want vultr or hotaisle", p)
		}
	}
	return req, real, nil
}

func list(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// simProviders are both clouds' fakes with their default catalogs, reached
// in memory. Hot Aisle lists its bare metal too (listing costs nothing).
func simProviders() []fleet.Provider {
	v, h := sim.NewVultr(), sim.NewHotAisle()
	return []fleet.Provider{
		vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client()))),
		hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client())),
			hotaisle.WithBareMetal(true)),
	}
}

// realProviders are the clouds with credentials in the environment.
func realProviders(getenv func(string) string) ([]fleet.Provider, error) {
	var out []fleet.Provider
	if key := strings.TrimSpace(getenv("VULTR_API_KEY")); key != "" {
		var opts []vultr.Option
		if u := strings.TrimSpace(getenv("VULTR_BASE_URL")); u != "" {
			opts = append(opts, vultr.WithBaseURL(strings.TrimSuffix(strings.TrimRight(u, "/"), "/v2")))
		}
		out = append(out, vultr.NewProvider(vultr.New(key, opts...)))
	}
	key, team := strings.TrimSpace(getenv("HOTAISLE_API_KEY")), strings.TrimSpace(getenv("HOTAISLE_TEAM"))
	if key != "" && team != "" {
		var opts []hotaisle.Option
		if u := strings.TrimSpace(getenv("HOTAISLE_BASE_URL")); u != "" {
			opts = append(opts, hotaisle.WithBaseURL(u))
		}
		out = append(out, hotaisle.NewProvider(hotaisle.New(key, team, opts...), hotaisle.WithBareMetal(true)))
	}
	if len(out) == 0 {
		return nil, errors.New("-real needs credentials: set VULTR_API_KEY, or HOTAISLE_API_KEY and HOTAISLE_TEAM (or both)")
	}
	return out, nil
}
