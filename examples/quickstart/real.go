package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/shim"
	"github.com/gpufleet/gpufleet/vultr"
	"golang.org/x/crypto/ssh"
)

// Environment variables of the real clouds. The *_BASE_URL ones point the
// clients elsewhere than the real APIs, e.g. at a gpufleet-sim server
// (go run ./sim/cmd/gpufleet-sim), to try -real without an account.
const (
	envVultrKey     = "VULTR_API_KEY"
	envVultrURL     = "VULTR_BASE_URL" // origin, e.g. http://127.0.0.1:41001 (a trailing /v2 is dropped)
	envHotAisleKey  = "HOTAISLE_API_KEY"
	envHotAisleTeam = "HOTAISLE_TEAM"
	envHotAisleURL  = "HOTAISLE_BASE_URL" // API root, e.g. http://127.0.0.1:41002/api
)

// errNoCredentials is returned by newRealWorld when no cloud is configured.
var errNoCredentials = errors.New("-real needs credentials: set " + envVultrKey + ", or " +
	envHotAisleKey + " and " + envHotAisleTeam + " (or both)")

// newRealWorld builds clients for the clouds that have credentials in the
// environment, and the shim over real TCP. Keys are read here and only kept
// inside the clients, which never print them.
func newRealWorld(cfg config, getenv func(string) string, signer ssh.Signer) (*world, error) {
	w := &world{clock: fleet.RealClock(), meter: newMeter()}
	if key := strings.TrimSpace(getenv(envVultrKey)); key != "" {
		opts := []vultr.Option{}
		if u := strings.TrimSpace(getenv(envVultrURL)); u != "" {
			opts = append(opts, vultr.WithBaseURL(u))
		}
		w.providers = append(w.providers, w.meter.wrap(vultr.NewProvider(vultr.New(key, opts...))))
	}
	key, team := strings.TrimSpace(getenv(envHotAisleKey)), strings.TrimSpace(getenv(envHotAisleTeam))
	if key != "" && team != "" {
		opts := []hotaisle.Option{}
		if u := strings.TrimSpace(getenv(envHotAisleURL)); u != "" {
			opts = append(opts, hotaisle.WithBaseURL(u))
		}
		w.hot = hotaisle.New(key, team, opts...)
		w.providers = append(w.providers, w.meter.wrap(hotaisle.NewProvider(w.hot, hotaisle.WithBareMetal(cfg.bareMetal))))
	}
	if len(w.providers) == 0 {
		return nil, errNoCredentials
	}
	if cfg.agent {
		starter, err := shim.New(shim.DstackShim(dstackShimVersion), []ssh.Signer{signer},
			shim.TrustOnFirstUse(shim.NewMemoryHostKeyStore()), shim.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			return nil, err
		}
		w.agent = starter
	}
	return w, nil
}

// realLeftovers asks the clouds about every instance and VPC the run
// created (or adopted): only a not-found answer proves an instance gone,
// only its absence from the VPC list a VPC.
func (d *driver) realLeftovers() (created, terminated int, leaked []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	byName := map[string]fleet.Provider{}
	for _, p := range d.w.providers {
		byName[p.Name()] = p
	}
	instances := map[made]bool{}
	var vpcs []made
	for _, r := range d.w.meter.created() {
		if r.kind == "vpc" {
			vpcs = append(vpcs, r)
		} else {
			instances[r] = true
		}
	}
	for _, r := range d.m.Records() {
		if r.Instance.ID != "" {
			instances[made{r.Instance.Provider, "instance", r.Instance.ID}] = true
		}
	}
	for r := range instances {
		created++
		_, err := byName[r.provider].Get(ctx, r.id)
		switch {
		case errors.Is(err, fleet.ErrNotFound):
			terminated++
		case err != nil:
			leaked = append(leaked, fmt.Sprintf("%s instance %s (could not confirm it gone: %v)", r.provider, r.id, err))
		default:
			leaked = append(leaked, fmt.Sprintf("%s instance %s", r.provider, r.id))
		}
	}
	for _, v := range vpcs {
		vp, _ := byName[v.provider].(fleet.VPCProvider)
		list, err := vp.ListVPCs(ctx)
		if err != nil {
			leaked = append(leaked, fmt.Sprintf("%s VPC %s (could not confirm it gone: %v)", v.provider, v.id, err))
			continue
		}
		for _, x := range list {
			if x.ID == v.id {
				leaked = append(leaked, fmt.Sprintf("%s VPC %s", v.provider, v.id))
			}
		}
	}
	leaked = append(leaked, d.labelledLeftovers(ctx, byName, instances)...)
	sort.Strings(leaked)
	return created, terminated, leaked
}

// labelledLeftovers lists each cloud for instances labelled with one of the
// run's fleets that the checks above did not already cover (a create whose
// answer was lost, then found by nobody).
func (d *driver) labelledLeftovers(ctx context.Context, byName map[string]fleet.Provider, known map[made]bool) []string {
	fleets := map[string]bool{}
	for _, j := range d.jobs {
		fleets[j.spec.Name] = true
	}
	var out []string
	for name, p := range byName {
		list, err := p.List(ctx)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: could not list instances to look for leftovers: %v", name, err))
			continue
		}
		for _, i := range list {
			if fleets[i.Fleet] && !known[made{name, "instance", i.ID}] {
				out = append(out, fmt.Sprintf("%s instance %s labelled for fleet %s", name, i.ID, i.Fleet))
			}
		}
	}
	return out
}
