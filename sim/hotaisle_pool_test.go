package sim_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/sim"
)

// Hot Aisle bare metal is a pool of physical servers: "pool (Quantity in
// /bare_metal/available/) → POST (201) → assigned → DELETE (204 …) → pool".
// With one server of the type in the pool, the server reserved after a
// release is the one released, under its name (its host name).
func TestHotAisleReleasedServerReturnsToThePool(t *testing.T) {
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

// A server reserved again keeps its name, private address and front-host
// port, and is reinstalled: the OS install starts over, the SSH host key is
// new, nothing of the first rental is left on it, and its reservation (and
// its minimum charge) starts anew.
func TestHotAisleReRentedServerIsReinstalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		require.NoError(t, x.h.SetQuantity("bm-mi300x-8", 1))
		a := x.reserve("first rental")
		time.Sleep(sim.DefaultHotAisleInstallTime)
		first := x.h.Network().Host(a.IPAddress + ":22")
		firstKey := first.PublicKey().Marshal()
		first.WriteFile("/tmp/left-behind", []byte("x"), false)
		x.ok("DELETE", haTeamPath+"bare_metal/"+a.Name+"/?force=true", nil, 204, nil)
		time.Sleep(time.Hour)

		b := x.reserve("second rental")
		require.Equal(t, a.Name, b.Name)
		assert.Equal(t, a.IPAddress, b.IPAddress, "the same physical server")
		assert.Equal(t, a.SSHAccess, b.SSHAccess, "the same port on the front host")
		assert.Equal(t, "second rental", b.Description)
		assert.Equal(t, "first_boot", b.OSStatus.OSInstallStatus, "reinstalled")
		second := x.h.Network().Host(b.IPAddress + ":22")
		require.NotNil(t, second)
		assert.NotEqual(t, firstKey, second.PublicKey().Marshal(), "a reinstalled server has a new host key")
		_, left := second.ReadFile("/tmp/left-behind")
		assert.False(t, left, "nothing of the first rental is left")

		var charges []sim.Charge
		for _, c := range x.h.Ledger().Charges {
			if c.ResourceID == a.Name {
				charges = append(charges, c)
			}
		}
		require.Len(t, charges, 2, "one charge per reservation")
		assert.False(t, charges[0].Live)
		assert.True(t, charges[1].Live)
		assert.Equal(t, 8*time.Hour, charges[0].Billed, "the first minimum, released early")
		assert.Equal(t, 8*time.Hour, charges[1].Billed, "the minimum is charged again")
		assert.True(t, charges[1].From.After(charges[0].To), "the second reservation starts anew")
		var states []string
		for _, r := range x.h.Resources() {
			if r.ID == a.Name {
				states = append(states, r.State)
			}
		}
		assert.Equal(t, []string{"deleted", "first_boot"}, states, "one resource per reservation")
	})
}

// A reservation takes the lowest-numbered server released back to the pool
// before a server never rented; with none released, a new name.
func TestHotAisleReservationTakesLowestReleasedServerFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		require.NoError(t, x.h.SetQuantity("bm-mi300x-8", 4))
		a, b, c := x.reserve("a"), x.reserve("b"), x.reserve("c")
		require.Less(t, a.Name, b.Name)
		require.Less(t, b.Name, c.Name)
		x.ok("DELETE", haTeamPath+"bare_metal/"+c.Name+"/?force=true", nil, 204, nil)
		x.ok("DELETE", haTeamPath+"bare_metal/"+a.Name+"/?force=true", nil, 204, nil)
		assert.Equal(t, a.Name, x.reserve("again").Name, "the lowest-numbered released server")
		assert.Equal(t, c.Name, x.reserve("again").Name, "then the next released one")
		d := x.reserve("new")
		assert.Less(t, c.Name, d.Name, "no released server left: one never rented")
		assert.NotEqual(t, a.IPAddress, d.IPAddress)
		x.fail("POST", haTeamPath+"bare_metal/", map[string]any{"specs": map[string]any{
			"gpus": []map[string]any{{"count": 8, "model": "MI300X"}}}}, 404,
			"no available servers matching specifications")
	})
}

// A server destroyed out of band goes back to the pool too, and the one
// reserved after it is the same server with a new host key.
func TestHotAisleDestroyedServerReturnsToThePool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := haNew(t)
		require.NoError(t, x.h.SetQuantity("bm-mi300x-8", 1))
		a := x.reserve("first rental")
		key := x.h.Network().Host(a.IPAddress + ":22").PublicKey().Marshal()
		require.NoError(t, x.h.DestroyOutOfBand(a.Name))
		b := x.reserve("second rental")
		assert.Equal(t, a.Name, b.Name)
		assert.NotEqual(t, key, x.h.Network().Host(b.IPAddress+":22").PublicKey().Marshal())
	})
}

// The same seed and calls give the same names and host keys, rental after
// rental, and every rental of a server has a key of its own.
func TestHotAislePoolIsDeterministicForASeed(t *testing.T) {
	run := func(t *testing.T) (names []string, keys []string) {
		x := haNew(t, sim.WithSeed(42))
		require.NoError(t, x.h.SetQuantity("bm-mi300x-8", 2))
		for i := range 3 {
			a, b := x.reserve("a"), x.reserve("b")
			for _, s := range []haBM{a, b} {
				names = append(names, s.Name)
				keys = append(keys, string(x.h.Network().Host(s.IPAddress+":22").PublicKey().Marshal()))
			}
			victim := []haBM{a, b}[i%2]
			x.ok("DELETE", haTeamPath+"bare_metal/"+victim.Name+"/?force=true", nil, 204, nil)
			other := []haBM{a, b}[1-i%2]
			x.ok("DELETE", haTeamPath+"bare_metal/"+other.Name+"/?force=true", nil, 204, nil)
		}
		return names, keys
	}
	synctest.Test(t, func(t *testing.T) {
		names1, keys1 := run(t)
		names2, keys2 := run(t)
		assert.Equal(t, names1, names2)
		assert.Equal(t, keys1, keys2)
		assert.Equal(t, names1[:2], names1[2:4], "two servers in the pool, rented three times")
		assert.Equal(t, names1[:2], names1[4:])
		seen := map[string]bool{}
		for _, k := range keys1 {
			assert.False(t, seen[k], "every rental has a host key of its own")
			seen[k] = true
		}
	})
}
