package hotaislefake

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reserveForTest assigns a bare-metal server of the default row and adds
// its hosts, as a reservation does.
func reserveForTest(t *testing.T, h *HotAisle) *haServer {
	t.Helper()
	h.mu.Lock()
	s, status, msg := h.st.assignBareMetal(h.st.bmTypes[0].Specs, h.clock.Now())
	h.mu.Unlock()
	require.NotNil(t, s, "%d %s", status, msg)
	h.addBareMetalHosts(s)
	return s
}

// A late host registration of an earlier rental (a handler still holding
// the released server) leaves the next rental's hosts at the same
// addresses alone.
func TestLateHostsOfAnEarlierRentalLeaveTheNextOneAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New(DefaultConfig())
		defer h.Network().Close()
		require.NoError(t, h.SetQuantity(h.st.bmTypes[0].Plan, 1))
		first := reserveForTest(t, h)
		h.removeHosts(first)
		h.finishDelete(first)
		second := reserveForTest(t, h)
		require.Equal(t, first.name, second.name)
		addr := second.ip + ":22"
		key := h.Network().Host(addr).PublicKey().Marshal()

		h.addBareMetalHosts(first)
		got := h.Network().Host(addr)
		require.NotNil(t, got, "the second rental's host is still there")
		assert.Equal(t, key, got.PublicKey().Marshal(), "and it is the second rental's")
	})
}
