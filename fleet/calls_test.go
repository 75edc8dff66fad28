package fleet_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lifecycleCalls runs one fleet's whole lifecycle under Run — apply, all
// ready, delete, confirmed gone, an idle hour — and returns the calls both
// fakes received for it per instance (the Manager's start, two listings of
// every provider, is left out: it happens once per process).
func lifecycleCalls(t *testing.T, req fleet.Requirements, n int, policy fleet.Policy) float64 {
	t.Helper()
	var perInstance float64
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, policy)
		e.hot.SetVMLimit(1000)
		require.NoError(t, e.hot.SetQuantity("vm-mi300x-1", 1000))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- e.m.Run(ctx) }()
		time.Sleep(70 * time.Minute) // the Manager's start: its listings of the first hour
		before := len(e.vultr.Calls()) + len(e.hot.Calls())
		require.NoError(t, e.m.Apply(t.Context(), spec("f", n, req)))
		ready := func() bool {
			insts := e.m.Instances("f")
			if len(insts) != n {
				return false
			}
			for _, i := range insts {
				if i.Status != fleet.StatusIdle {
					return false
				}
			}
			return true
		}
		for deadline := time.Now().Add(3 * time.Hour); !ready(); time.Sleep(time.Minute) {
			require.True(t, time.Now().Before(deadline), "not ready")
		}
		require.NoError(t, e.m.Delete(t.Context(), "f"))
		for deadline := time.Now().Add(3 * time.Hour); len(e.m.Fleets()) > 0; time.Sleep(time.Minute) {
			require.True(t, time.Now().Before(deadline), "not deleted")
		}
		time.Sleep(time.Hour) // nothing left to do: no more calls
		cancel()
		<-done
		e.assertNothingLeft()
		perInstance = float64(len(e.vultr.Calls())+len(e.hot.Calls())-before) / float64(n)
	})
	return perInstance
}

func TestLifecycleCallBudgets(t *testing.T) {
	cases := []struct {
		name   string
		req    fleet.Requirements
		n      int
		budget float64
	}{
		{"vultr bare metal", vultrType(mi300x), 1, 30},
		{"100 vultr VMs", vultrVM("ewr"), 100, 8},
		{"100 hot aisle VMs", hotType("vm-mi300x-1"), 100, 6},
	}
	for _, c := range cases {
		for _, pol := range []fleet.ReleasePolicy{fleet.ReleaseAtReservationEnd, fleet.ReleaseNow} {
			t.Run(c.name+"/"+string(pol), func(t *testing.T) {
				got := lifecycleCalls(t, c.req, c.n, fleet.Policy{Release: pol})
				t.Logf("%s %s: %.1f calls per instance", c.name, pol, got)
				assert.LessOrEqual(t, got, c.budget)
			})
		}
	}
}
