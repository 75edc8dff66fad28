package sshhost

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fake's server host is made, and its key derived, only when first used;
// the OnAddHost hooks run then, before anyone can reach it.
func TestNetworkHostsAreLazy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := NewNetwork(nil, 7)
		defer n.Close()
		hooks := 0
		n.OnAddHost(func(*Host) { hooks++ })
		addr, id := "192.0.2.10:22", "server-1"
		AddLazy(n, &HostConfig{Addr: addr, InstanceID: id, User: "root"}, nil)
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
