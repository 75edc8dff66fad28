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

// TestAgentStartedOnEveryKindOfHost runs the Manager with the shim as its
// agent against both sims' SSH hosts: a Vultr VM (root, keys from
// cloud-config), a Hot Aisle VM (sshd up 90 s after "running") and Hot
// Aisle bare metal behind its ssh_access jump host. Each becomes idle only
// once its agent answers health, started once, detached.
func TestAgentStartedOnEveryKindOfHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		network := sim.NewNetwork(nil, 7)
		defer network.Close()
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow}, sim.WithNetwork(network))
		seed := sha256.Sum256([]byte("fleet key"))
		key := ed25519.NewKeyFromSeed(seed[:])
		signer, err := ssh.NewSignerFromKey(key)
		require.NoError(t, err)
		authorized := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey())))
		starter, err := shim.New(shim.DstackShim("0.19.41"), []ssh.Signer{signer}, shim.TrustOnFirstUse(shim.NewMemoryHostKeyStore()),
			shim.WithDial(network.Dial), shim.WithLogger(slog.New(slog.DiscardHandler)))
		require.NoError(t, err)
		m, err := fleet.NewManager(fleet.Config{Providers: []fleet.Provider{e.vp, e.hp}, Agent: starter, Policy: e.policy,
			OnEvent: func(ev fleet.Event) { e.mu.Lock(); e.events = append(e.events, ev); e.mu.Unlock() }})
		require.NoError(t, err)
		defer m.Close()
		e.m = m
		for name, r := range map[string]fleet.Requirements{
			"vul": vultrVM("ewr"), "hvm": hotType("vm-mi300x-1"), "hbm": hotType("bm-mi300x-8"),
		} {
			require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: name, Nodes: 1, Requirements: r,
				SSHKeys: []string{authorized}, PrivateKey: fleet.NewPrivateKey(key)}))
		}
		ready := func() bool {
			for _, f := range []string{"vul", "hvm", "hbm"} {
				if insts := m.Instances(f); len(insts) == 0 || insts[0].Status != fleet.StatusIdle {
					return false
				}
			}
			return true
		}
		require.True(t, e.runUntil(30*time.Minute, ready), "every agent healthy")
		for _, f := range []string{"vul", "hvm", "hbm"} {
			inst := m.Instances(f)[0]
			addr := inst.SSH.Addr()
			host := network.Host(addr)
			require.NotNil(t, host, "%s host %s", f, addr)
			assert.Equal(t, 1, host.AgentStarts(), f)
			assert.True(t, host.AgentDetached(), f)
			assert.False(t, inst.Ready.Before(inst.Created), f)
		}
		hvm := m.Instances("hvm")[0]
		assert.GreaterOrEqual(t, hvm.Ready.Sub(hvm.Created), 90*time.Second, "sshd comes up 90 s after running")
		assert.NotNil(t, m.Instances("hbm")[0].SSH.Jump)
		for _, f := range []string{"vul", "hvm", "hbm"} {
			require.NoError(t, m.Delete(t.Context(), f))
		}
		require.True(t, e.runUntil(2*time.Hour, func() bool { return e.count(fleet.EventFleetDeleted) == 3 }))
		e.assertNothingLeft()
	})
}
