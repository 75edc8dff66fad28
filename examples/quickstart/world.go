package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/shim"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"golang.org/x/crypto/ssh"
)

// dstackShimVersion is the agent the shim installs and starts on every node.
const dstackShimVersion = "0.19.41"

// world is where the fleets live: the in-process fakes or the real clouds.
type world struct {
	clock     fleet.Clock
	providers []fleet.Provider // counted by meter
	meter     *meter
	agent     fleet.Agent // nil: no agent
	sims      *sims       // nil on the real clouds
	hot       *hotaisle.Client
}

// sims are the two fakes and the network their SSH hosts live on.
type sims struct {
	vultr   *sim.Vultr
	hot     *sim.HotAisle
	network *sim.Network
}

// have reports which providers the world has.
func (w *world) have() map[string]bool {
	out := map[string]bool{}
	for _, p := range w.providers {
		out[p.Name()] = true
	}
	return out
}

// newSimWorld starts both fakes on one scaled clock and one SSH network,
// switches on the faults the clouds are known for, and builds the clients,
// providers and shim over them. The clients wait (rate limiter, Retry-After,
// retry backoff) on the fakes' clock, as the Manager does; the shim's SSH
// retry backoff, which runs on the wall clock, is divided by the speed so
// that it takes as much cloud time as it would on the real clouds.
func newSimWorld(cfg config, signer ssh.Signer) (*world, error) {
	clock := sim.ScaledClock(cfg.speed)
	network := sim.NewNetwork(clock, cfg.seed)
	opts := []sim.Option{sim.WithClock(clock), sim.WithNetwork(network), sim.WithSeed(cfg.seed)}
	s := &sims{vultr: sim.NewVultr(opts...), hot: sim.NewHotAisle(opts...), network: network}
	err := s.armFaults()
	if err == nil && cfg.moreFaults != nil {
		err = cfg.moreFaults(s)
	}
	if err != nil {
		network.Close()
		return nil, err
	}
	wall := func(d time.Duration) time.Duration {
		return max(time.Duration(float64(d)/cfg.speed), 50*time.Microsecond)
	}
	vc := vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(s.vultr.Client()), vultr.WithClock(clock))
	hc := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(s.hot.Client()), hotaisle.WithClock(clock))
	w := &world{clock: clock, meter: newMeter(), sims: s, hot: hc}
	w.providers = []fleet.Provider{
		w.meter.wrap(vultr.NewProvider(vc)),
		w.meter.wrap(hotaisle.NewProvider(hc, hotaisle.WithBareMetal(cfg.bareMetal))),
	}
	if cfg.agent {
		starter, err := shim.New(shim.DstackShim(dstackShimVersion), []ssh.Signer{signer},
			shim.TrustOnFirstUse(shim.NewMemoryHostKeyStore()), shim.WithDial(network.Dial),
			shim.WithBackoff(wall(500*time.Millisecond), wall(5*time.Second)), shim.WithLogger(slog.New(slog.DiscardHandler)))
		if err != nil {
			network.Close()
			return nil, err
		}
		w.agent = starter
	}
	return w, nil
}

// Faults switched on in the fakes (on top of their default physics: Vultr
// bare metal pending for 40 min then locked for 5 min, Hot Aisle minimum
// reservations of 30 and 60 min and 8 h for bare metal).
const (
	flakyAttaches   = 2                // Vultr "Unable to attach VPC" before an attach works
	lockAfterBoot   = 5 * time.Minute  // Vultr "Server is currently locked" after active
	notActiveWindow = 58 * time.Minute // Vultr bare metal DELETE "not currently active" until create+this
)

// faultNotes describe the switched-on faults for the intro.
var faultNotes = []string{
	"vultr: VPC attach fails twice (\"Unable to attach VPC\") before it works",
	"vultr: servers are locked for 5 min after they turn active (\"Server is currently locked\")",
	"vultr: bare-metal DELETE answers \"not currently active\" until 58 min after create",
	"vultr: the cheapest MI300X region sells out between listing and create",
	"hotaisle: VMs bill at least 30 min (1 GPU) or 60 min; bare metal 8 h, prepaid",
}

func (s *sims) armFaults() error {
	s.vultr.LockWindow(lockAfterBoot)
	return errors.Join(s.vultr.FlakyAttach(flakyAttaches), s.vultr.NotActiveWindow("vbm-*", notActiveWindow))
}

// sellOut takes o off sale in its fake after the catalog was listed, so the
// Manager meets the refusal at create and must skip to the next offer.
func (s *sims) sellOut(o fleet.Offer) error {
	if o.Provider == fleet.ProviderVultr {
		return s.vultr.SoldOut(o.InstanceType, o.Region)
	}
	return s.hot.SoldOut(o.InstanceType)
}

func (s *sims) close() { s.network.Close() }

// removeKey deletes the run's throwaway key from the Hot Aisle account (the
// provider registers it there; nothing else uses it once the servers are
// gone). An absent key is fine.
func (w *world) removeKey(ctx context.Context, pub ssh.PublicKey) error {
	if w.hot == nil {
		return nil
	}
	err := w.hot.DeleteSSHKey(ctx, ssh.FingerprintSHA256(pub))
	if errors.Is(err, fleet.ErrNotFound) {
		return nil
	}
	return err
}
