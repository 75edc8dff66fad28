package fleet_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/shim"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

// t9 is a world of both sims on one SSH network, the real shim as
// the Manager's agent.
type t9 struct {
	*env
	net  *sim.Network
	key  ed25519.PrivateKey
	auth string
}

func newT9(t *testing.T, pol fleet.Policy) *t9 {
	t.Helper()
	network := sim.NewNetwork(nil, 9)
	t.Cleanup(func() { network.Close() })
	e := newEnv(t, pol, sim.WithNetwork(network))
	seed := sha256.Sum256([]byte("agent9 key"))
	key := ed25519.NewKeyFromSeed(seed[:])
	signer, err := ssh.NewSignerFromKey(key)
	require.NoError(t, err)
	starter, err := shim.New(shim.DstackShim("0.19.41"), []ssh.Signer{signer}, shim.TrustOnFirstUse(shim.NewMemoryHostKeyStore()),
		shim.WithDial(network.Dial), shim.WithLogger(slog.New(slog.DiscardHandler)))
	require.NoError(t, err)
	e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Owner: testOwner, Agent: starter})
	return &t9{env: e, net: network, key: key,
		auth: strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))}
}

func (w *t9) apply(name string, nodes int, r fleet.Requirements) {
	w.t.Helper()
	require.NoError(w.t, w.m.Apply(w.t.Context(), fleet.Spec{Name: name, Nodes: nodes, Requirements: r,
		SSHKeys: []string{w.auth}, PrivateKey: fleet.NewPrivateKey(w.key)}))
}

func (w *t9) idle(name string) fleet.Instance {
	w.t.Helper()
	require.True(w.t, w.runUntil(time.Hour, func() bool {
		insts := w.m.Instances(name)
		return len(insts) > 0 && insts[0].Status == fleet.StatusIdle
	}), "instance of %s idle", name)
	return w.m.Instances(name)[0]
}

// liveOfKind counts both sims' live resources of a kind.
func (w *t9) liveOfKind(kind string) int {
	return live(append(w.vultr.Resources(), w.hot.Resources()...), kind)
}

func (w *t9) teardown(names ...string) {
	w.t.Helper()
	for _, n := range names {
		require.NoError(w.t, w.m.Delete(w.t.Context(), n))
	}
	require.True(w.t, w.runUntil(10*time.Hour, func() bool { return len(w.m.Fleets()) == 0 }), "fleets deleted")
	w.assertNothingLeft()
}

// An agent that never answers health on the first host: the machine is
// released at Policy.AgentTimeout (forced inside Hot Aisle's minimum, not
// kept to its end). With that offer the only match, the fleet then waits
// (the offer is skipped after a deadline miss); the NoOffers events must
// say why (the offer skipped after its deadline miss, and until when),
// not only "refused or are skipped for now".
func TestAgentNeverHealthyIsReleasedAndNoOffersSaysWhy(t *testing.T) {
	for name, r := range map[string]fleet.Requirements{"vultr": vultrVM("ewr"), "hotaisle": hotType("vm-mi300x-1")} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newT9(t, fleet.Policy{})
				first := true
				w.net.OnAddHost(func(h *sim.Host) {
					if first {
						first = false
						spec := sim.DefaultAgentSpec()
						spec.HealthStatus = 500
						h.SetAgent(spec)
					}
				})
				w.apply("f", 1, r)
				require.True(t, w.runUntil(time.Hour, func() bool { return w.count(fleet.EventDeadlineMissed) == 1 }))
				missed := time.Now()
				w.run(5 * time.Minute)
				var sick sim.Resource
				for _, res := range append(w.vultr.Resources(), w.hot.Resources()...) {
					if res.Kind != "ssh_key" && res.Kind != "vpc" {
						sick = res
					}
				}
				require.False(t, sick.Live(), "the sick machine was deleted")
				assert.Less(t, sick.Deleted.Sub(missed), 5*time.Minute, "deleted soon after its deadline")
				noOffers := w.eventsOf(fleet.EventNoOffers)
				require.NotEmpty(t, noOffers)
				last := noOffers[len(noOffers)-1]
				assert.True(t, strings.Contains(last.Message, "deadline") || last.Err != "",
					"NoOffers says why the only offer is skipped: %q err=%q", last.Message, last.Err)
				w.teardown("f")
			})
		})
	}
}

// A ready agent whose checks alternate healthy and unhealthy is restarted
// each time; the counter resets, the machine stays (documented "in a row").
// What this checks: every failure restarts it and events say so.
func TestFlappingAgentIsRestartedEachTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{AgentCheckInterval: time.Minute})
		w.apply("f", 1, vultrVM("ewr"))
		inst := w.idle("f")
		host := w.net.Host(inst.SSH.Addr())
		require.NotNil(t, host)
		for range 4 {
			host.KillAgent()
			require.True(t, w.runUntil(10*time.Minute, func() bool { return host.AgentRunning() }))
			w.run(3 * time.Minute)
		}
		assert.Equal(t, 4, w.count(fleet.EventAgentUnhealthy))
		assert.Equal(t, fleet.StatusIdle, w.only("f").Status)
		assert.Equal(t, inst.ID, w.only("f").ID)
		w.teardown("f")
	})
}

// A host reinstalled out of band (new SSH host key) after ready: checks
// fail with a host key mismatch, never "fixed" by a restart; the instance
// is released and replaced after AgentCheckFailures checks.
func TestHostKeyChangedAfterReadyIsReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		w.apply("f", 1, vultrVM("ewr"))
		inst := w.idle("f")
		w.net.Host(inst.SSH.Addr()).RotateHostKey()
		start := time.Now()
		require.True(t, w.runUntil(2*time.Hour, func() bool {
			for _, i := range w.m.Instances("f") {
				if i.ID != inst.ID && i.Status == fleet.StatusIdle {
					return true
				}
			}
			return false
		}), "replaced: %v", w.events)
		assert.Less(t, time.Since(start), 30*time.Minute)
		assert.True(t, errHas(w.eventsOf(fleet.EventAgentUnhealthy), "host key"), "events name the host key")
		w.teardown("f")
	})
}

// SSH refusing connections for 8 minutes after ready (a reboot): the agent
// comes back; the instance is not replaced.
func TestSSHRefusedForAWhileIsNotReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		w.apply("f", 1, vultrVM("ewr"))
		inst := w.idle("f")
		host := w.net.Host(inst.SSH.Addr())
		host.SetSchedule(sim.HostSchedule{RefuseUntil: time.Now().Add(8 * time.Minute)})
		w.run(time.Hour)
		assert.Equal(t, inst.ID, w.only("f").ID, "not replaced")
		assert.Equal(t, 1, w.liveOfKind("instance"))
		w.teardown("f")
	})
}

// Hot Aisle bare metal behind its shared ssh_access jump host: the jump
// host refusing connections for an hour is not the machine's fault. A
// replacement prepays another 8 hours (217 USD) behind the same jump host.
func TestJumpHostDownDoesNotBuyAnotherBareMetal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newT9(t, fleet.Policy{})
		w.apply("f", 1, hotType("bm-mi300x-8"))
		inst := w.idle("f")
		require.NotNil(t, inst.SSH.Jump)
		jumpAddr := inst.SSH.Jump.Addr()
		jump := w.net.Host(jumpAddr)
		require.NotNil(t, jump, "jump host %s", jumpAddr)
		jump.SetSchedule(sim.HostSchedule{RefuseUntil: time.Now().Add(time.Hour)})
		w.run(2 * time.Hour)
		assert.Equal(t, 1, len(w.hot.Resources())-live(w.hot.Resources(), "ssh_key"), "bare-metal servers reserved: %v", w.hot.Resources())
		assert.Equal(t, inst.ID, w.only("f").ID, "the same machine serves the fleet")
		w.teardown("f")
	})
}
