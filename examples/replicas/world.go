package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"strings"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"golang.org/x/crypto/ssh"
)

// world is the two fakes on one sped-up clock.
type world struct {
	clock sim.Clock
	v     *sim.Vultr
	h     *sim.HotAisle
}

func newWorld(speed float64) *world {
	clock := sim.ScaledClock(speed)
	return &world{clock: clock, v: sim.NewVultr(sim.WithClock(clock)), h: sim.NewHotAisle(sim.WithClock(clock))}
}

// providers builds one replica's clients, as its own process would: its
// own rate limiters, waiting on the fakes' clock.
func (w *world) providers() []fleet.Provider {
	vc := vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(w.v.Client()), vultr.WithClock(w.clock))
	hc := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(w.h.Client()), hotaisle.WithClock(w.clock))
	return []fleet.Provider{vultr.NewProvider(vc), hotaisle.NewProvider(hc)}
}

// specs are the fleets: three on each cloud, every node logging in with
// authorized (an authorized_keys line; Hot Aisle registers it on the
// account, and the collector replica removes it at the end).
func specs(authorized string) []fleet.Spec {
	vultrGPU := fleet.Requirements{Providers: []string{fleet.ProviderVultr}, InstanceTypes: []string{"vcg-a100-1c-6g-4vram"}}
	hotGPU := fleet.Requirements{Providers: []string{fleet.ProviderHotAisle}, InstanceTypes: []string{"vm-mi300x-1"}}
	var out []fleet.Spec
	for i, name := range []string{"train", "infer", "eval"} {
		nodes := 1 + (i+1)%2 // 2, 1, 2
		out = append(out,
			fleet.Spec{Name: "v-" + name, Nodes: nodes, Requirements: vultrGPU, SSHKeys: []string{authorized}},
			fleet.Spec{Name: "h-" + name, Nodes: nodes, Requirements: hotGPU, SSHKeys: []string{authorized}})
	}
	return out
}

// authorizedKey makes the run's public key, as an authorized_keys line.
// Its SHA256 fingerprint has no "/": Hot Aisle deletes a key by
// fingerprint in the URL path, where a "//" is lost by path cleaning.
func authorizedKey() (string, error) {
	for {
		pub, _, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return "", err
		}
		k, err := ssh.NewPublicKey(pub)
		if err != nil {
			return "", err
		}
		if !strings.Contains(ssh.FingerprintSHA256(k), "/") {
			return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(k))) + " gpufleet-replicas", nil
		}
	}
}

// inventory counts the fakes' servers and lists every live resource of
// every kind (servers, VPCs, SSH keys).
func (w *world) inventory() (created, terminated int, left []string) {
	for _, r := range append(w.v.Resources(), w.h.Resources()...) {
		if r.Kind != sim.KindVPC && r.Kind != sim.KindSSHKey {
			created++
			if !r.Live() {
				terminated++
			}
		}
		if r.Live() {
			left = append(left, fmt.Sprintf("%s %s %s (%s)", r.Kind, r.ID, r.Plan, r.State))
		}
	}
	return created, terminated, left
}
