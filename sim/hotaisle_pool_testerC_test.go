package sim_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hot Aisle bare metal is a pool of physical servers: "pool (Quantity in
// /bare_metal/available/) → POST (201) → assigned → DELETE (204 …) → pool"
// (the API's state machine for bare metal). With one server of the type in
// the pool, the server reserved after a release is the one released, under
// its name (a server's name is its host name, enc1-gpu012), reinstalled. The
// fake names every reservation anew (enc1-gpu000, enc1-gpu001, …), so a
// consumer's test never meets a re-rented server whose name (the fleet's
// instance id) is known from an earlier rental while its SSH host key is new:
// what a host-key pin keyed by instance id (shim.TrustOnFirstUse) refuses.
// Expected: one server in the pool, the same name twice.
func TestTesterCHotAisleReleasedServerReturnsToThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		require.NoError(t, x.h.SetQuantity("bm-mi300x-8", 1))
		a := x.reserve("first rental")
		x.ok("DELETE", haTeamPath+"bare_metal/"+a.Name+"/?force=true", nil, 204, nil)
		var rows []haRow
		x.ok("GET", haTeamPath+"bare_metal/available/", nil, 200, &rows)
		require.Len(t, rows, 1)
		require.Equal(t, int64(1), rows[0].Quantity, "the released server is back in the pool")
		b := x.reserve("second rental")
		assert.Equal(t, a.Name, b.Name,
			"the pool held one server: the second reservation is the released server, under its name")
	})
}
