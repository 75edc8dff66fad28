package fleet_test

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	routeVultrCreate = "POST /v2/instances"
	routeHotCreate   = "POST /api/teams/{team}/virtual_machines/"
)

// refusalCase is one account-level refusal armed on one cloud; stop ends it.
type refusalCase struct {
	name  string
	cloud string
	arm   func(e *env)
	stop  func(e *env)
}

func accountRefusals() []refusalCase {
	vultrFault := func(status int, msg string) (func(e *env), func(e *env)) {
		return func(e *env) {
				require.NoError(e.t, e.vultr.Inject(sim.Fault{Route: routeVultrCreate, Status: status, Message: msg}))
			}, func(e *env) {
				e.vultr.ClearFaults()
			}
	}
	var out []refusalCase
	for _, c := range []struct {
		name, msg string
		status    int
	}{
		{"vultr-401-bad-key", "Invalid API token.", http.StatusUnauthorized},
		{"vultr-403-allowlist", "Unauthorized IP address: 198.51.100.9", http.StatusForbidden},
		{"vultr-max-active", "You have reached the maximum number of active instances for this account.", http.StatusBadRequest},
		// Vultr's account spending cap, answered 400 (quoted in public
		// deploy scripts and client tests).
		{"vultr-400-monthly-fee-limit", "Server add failed: You have reached the maximum monthly fee limit for this account. To deploy additional services, please request a limit increase.", http.StatusBadRequest},
		{"vultr-max-active-500", "Server add failed: You have reached the maximum number of active virtual machines for this account.", http.StatusInternalServerError},
	} {
		arm, stop := vultrFault(c.status, c.msg)
		out = append(out, refusalCase{name: c.name, cloud: "vultr", arm: arm, stop: stop})
	}
	out = append(out,
		refusalCase{name: "hotaisle-401-max-vms", cloud: "hotaisle",
			arm: func(e *env) { e.hot.SetVMLimit(0) }, stop: func(e *env) { e.hot.SetVMLimit(100) }},
		refusalCase{name: "hotaisle-402-balance", cloud: "hotaisle",
			arm: func(e *env) { e.hot.InsufficientBalance() }, stop: func(e *env) { e.hot.SetBalance(1 << 40) }},
		refusalCase{name: "hotaisle-403-forbidden", cloud: "hotaisle",
			arm: func(e *env) {
				require.NoError(e.t, e.hot.Inject(sim.Fault{Route: routeHotCreate, Status: http.StatusForbidden, Message: "You do not have permission to perform this action."}))
			}, stop: func(e *env) { e.hot.ClearFaults() }},
		refusalCase{name: "hotaisle-401-unauthorized", cloud: "hotaisle",
			arm: func(e *env) {
				require.NoError(e.t, e.hot.Inject(sim.Fault{Route: routeHotCreate, Status: http.StatusUnauthorized, Message: "Unauthorized"}))
			}, stop: func(e *env) { e.hot.ClearFaults() }},
	)
	return out
}

// TestAccountRefusalLeavesOtherProviderServing: a fleet that may land on
// either cloud, one cloud refusing every create for the whole account. The
// other cloud must serve the whole fleet; the refusing cloud sees a handful
// of creates an hour and one CreatesRefused alert; once the refusal stops, a
// fleet that only that cloud can serve is served within the hour's backoff.
func TestAccountRefusalLeavesOtherProviderServing(t *testing.T) {
	for _, c := range accountRefusals() {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				c.arm(e)
				// Cheap Vultr VMs in two regions plus the Hot Aisle 1x VM: the
				// refusing cloud is tried first in one of the directions.
				req := fleet.Requirements{InstanceTypes: []string{vm, "vm-mi300x-1"}}
				if c.cloud == "hotaisle" {
					// Hot Aisle cheaper than the Vultr choice: it is tried first.
					req = fleet.Requirements{InstanceTypes: []string{mi300x, "vm-mi300x-1"}}
				}
				require.NoError(t, e.m.Apply(t.Context(), spec("both", 3, req)))
				e.run(time.Hour)
				refusing, route := e.vultr.Calls(), routeVultrCreate
				otherRes := e.hot.Resources()
				if c.cloud == "hotaisle" {
					refusing, route = e.hot.Calls(), routeHotCreate
					otherRes = e.vultr.Resources()
				}
				attempts := calls(refusing, route, 0)
				t.Logf("%s: refused creates in the hour: %d; alerts %d; live on the other cloud %d", c.name, attempts,
					e.count(fleet.EventCreatesRefused), live(otherRes, ""))
				assert.LessOrEqual(t, attempts, 6, "a handful of refused creates an hour")
				assert.Equal(t, 1, e.count(fleet.EventCreatesRefused), "one alert naming the refusal")
				assert.Len(t, activeOf(e.m.Instances("both")), 3, "the other cloud serves the whole fleet")

				// Recovery: the refusal ends; a fleet only the refusing cloud can
				// serve is created within the hold's backoff (at most an hour).
				c.stop(e)
				only := vultrVM("ewr")
				if c.cloud == "hotaisle" {
					only = hotType("vm-mi300x-1")
				}
				require.NoError(t, e.m.Apply(t.Context(), spec("only", 1, only)))
				assert.True(t, e.runUntil(70*time.Minute, func() bool { return len(activeOf(e.m.Instances("only"))) == 1 }),
					"served once the refusal stopped")
			})
		})
	}
}

// TestRegionRefusalSkipsOnlyThatOffer: a Vultr plan that turns out sold
// out in one region (after the catalog was read) is refused once; the other
// region of the same plan serves the fleet; no account-level alert.
func TestRegionRefusalSkipsOnlyThatOffer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.SoldOutAfterListing(vm, "ewr"))
		req := vultrType(vm)
		req.Regions = []string{"ewr", "ord"}
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 4, req)))
		e.run(10 * time.Minute)
		assert.Equal(t, 1, calls(e.vultr.Calls(), routeVultrCreate, http.StatusBadRequest), "refused once")
		assert.Len(t, activeOf(e.m.Instances("f")), 4)
		assert.Zero(t, e.count(fleet.EventCreatesRefused), "a region refusal is not an account refusal")
	})
}

// TestVultrFeeLimitFleetOfOne: Vultr's account spending cap ("maximum
// monthly fee limit", 400) refuses every plan in every region; a one-node
// Vultr fleet of a plan sold in many regions must make a handful of
// attempts an hour and raise one CreatesRefused alert.
func TestVultrFeeLimitFleetOfOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.vultr.Inject(sim.Fault{Route: routeVultrCreate, Status: http.StatusBadRequest,
			Message: "Server add failed: You have reached the maximum monthly fee limit for this account. To deploy additional services, please request a limit increase."}))
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, vultrType(vm))))
		e.run(time.Hour)
		attempts := calls(e.vultr.Calls(), routeVultrCreate, 0)
		t.Logf("refused creates in the hour: %d; alerts %d; offer skips %d", attempts, e.count(fleet.EventCreatesRefused), e.count(fleet.EventOfferSkipped))
		assert.LessOrEqual(t, attempts, 6, "a handful of refused creates an hour")
		assert.Equal(t, 1, e.count(fleet.EventCreatesRefused), "one alert naming the refusal")
	})
}
