package sim

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fake's server host is made, and its key derived, only when first used;
// the OnAddHost hooks run then, before anyone can reach it.
func TestNetworkHostsAreLazy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		hooks := 0
		h.v.Network().OnAddHost(func(*Host) { hooks++ })
		id := h.v.mustSeed(t, VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Age: time.Hour})
		addr := h.get(id, false)["main_ip"].(string) + ":22"
		n := h.v.Network()
		n.mu.Lock()
		_, lazy := n.lazy[addr]
		made := n.hosts[addr]
		n.mu.Unlock()
		assert.True(t, lazy, "registered")
		assert.Nil(t, made, "not made at create")
		assert.Zero(t, hooks)

		host := n.Host(addr)
		require.NotNil(t, host)
		assert.Equal(t, 1, hooks)
		host.mu.Lock()
		assert.Nil(t, host.signer, "no key before it is needed")
		host.mu.Unlock()
		want := deriveHostKey(n.seed, addr, id, 0).PublicKey().Marshal()
		assert.Equal(t, want, host.PublicKey().Marshal())
		assert.Same(t, host, n.Host(addr))
		assert.Equal(t, 1, hooks)
	})
}
