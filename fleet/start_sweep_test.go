package fleet_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hidesUntil hides the instances in ids from its lists and gets until
// until (Hot Aisle lists give no creation time to hide by age).
type hidesUntil struct {
	fleet.Provider
	ids   map[string]bool
	until time.Time
}

func (h hidesUntil) List(ctx context.Context) ([]fleet.Instance, error) {
	list, err := h.Provider.List(ctx)
	return slices.DeleteFunc(list, func(i fleet.Instance) bool { return h.ids[i.ID] && time.Now().Before(h.until) }), err
}

func (h hidesUntil) Get(ctx context.Context, id string) (fleet.Instance, error) {
	if h.ids[id] && time.Now().Before(h.until) {
		return fleet.Instance{}, fleet.ErrNotFound
	}
	return h.Provider.Get(ctx, id)
}

// A Hot Aisle VM provisioned at the instant of a crash (its label never
// written) and hidden from lists longer than VisibilityGrace plus the
// rescan's 30 s is still found by the restarted process, although its fleet
// is deleted before any instance of it is due for a listing: every provider
// is swept for an hour after start. With the Store the VM is the crashed
// create's and is released; without it, it is reported (it could be anyone's).
func TestVMHiddenPastTheRescanAfterACrashIsFound(t *testing.T) {
	for _, keepStore := range []bool{true, false} {
		name := map[bool]string{true: "store kept", false: "store lost"}[keepStore]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
				c := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(e.hot.Client()))
				e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{crashBeforeLabel{e.hp, c}}, Owner: testOwner, Store: e.store})
				require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, hotType("vm-mi300x-1"))))
				ctx, cancel := context.WithCancel(t.Context())
				go func() { _ = e.m.Reconcile(ctx) }()
				time.Sleep(time.Second)
				e.m.Close() // the crash, right after the provision
				cancel()

				hp := hidesUntil{Provider: e.hp, ids: map[string]bool{}, until: time.Now().Add(5 * time.Minute)}
				for _, r := range e.hot.Resources() {
					hp.ids[r.ID] = true
				}
				require.Len(t, hp.ids, 1, "the crashed create's VM")
				cfg := fleet.Config{Providers: []fleet.Provider{e.vp, hp}, Owner: testOwner}
				if keepStore {
					cfg.Store = e.store
				}
				e.m = e.managerWith(cfg)
				e.run(time.Minute)
				if keepStore {
					require.NoError(t, e.m.Delete(t.Context(), "f"))
				}
				e.run(2 * time.Hour)
				if keepStore {
					assert.Zero(t, e.liveServers(), "the crashed create's VM is found and released")
					return
				}
				assert.Equal(t, 1, e.count(fleet.EventUnlabelledFound), "the unlabelled VM is reported")
			})
		})
	}
}
