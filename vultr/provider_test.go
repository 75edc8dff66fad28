package vultr_test

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// authorizedKey is a real ed25519 public key line (ssh-keygen output).
const authorizedKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIwOslqNgbA9THQ3Kp0UFIO9AFk4FfpiROSE12zs4tfz test@gpufleet"

var update = flag.Bool("update", false, "rewrite the golden files")

func simProvider(t *testing.T) (*sim.Vultr, *vultr.Provider) {
	t.Helper()
	v := sim.NewVultr()
	return v, vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(v.Client())))
}

func offerByKey(t *testing.T, offers []fleet.Offer, key string) fleet.Offer {
	t.Helper()
	for _, o := range offers {
		if o.Key() == key {
			return o
		}
	}
	t.Fatalf("no offer %s", key)
	return fleet.Offer{}
}

// TestOffersGoldenDefaultCatalog pins every offer built from the sim's
// default Vultr catalog (testdata/offers_golden.json, reviewed by hand; run
// with -update to rewrite it), and states the S15 rules explicitly.
func TestOffersGoldenDefaultCatalog(t *testing.T) {
	_, p := simProvider(t)
	offers, err := p.Offers(t.Context())
	require.NoError(t, err)
	fleet.SortByPrice(offers)
	got, err := json.MarshalIndent(offers, "", " ")
	require.NoError(t, err)
	golden := filepath.Join("testdata", "offers_golden.json")
	if *update {
		require.NoError(t, os.WriteFile(golden, append(got, '\n'), 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))

	mi := offerByKey(t, offers, "vultr/ord/vbm-256c-2048gb-8-mi300x-gpu")
	assert.Equal(t, fleet.GPU{Vendor: "AMD", Model: "MI300X", Count: 8, MemoryGiB: 192}, mi.GPU, "GPUs from the plan id")
	assert.Equal(t, 256, mi.VCPUs, "threads")
	assert.Equal(t, 128, mi.CPUCores, "physical cores")
	assert.Equal(t, 17.52, mi.PricePerHour, "hourly_cost, not monthly/730")
	assert.Equal(t, 11773.44, mi.MonthlyCap, "monthly_cost: 672 h of a bare-metal plan")
	assert.True(t, mi.BareMetal)
	assert.True(t, mi.SupportsVPC)
	assert.True(t, mi.SlowProvisioning)
	assert.Equal(t, 55*time.Minute, mi.ProvisionTimeout)
	assert.Equal(t, time.Hour, mi.BillingGranularity)

	frac := offerByKey(t, offers, "vultr/ewr/vcg-a100-1c-6g-4vram")
	assert.Equal(t, fleet.GPU{Vendor: "NVIDIA", Model: "A100", Count: 1, MemoryGiB: 4}, frac.GPU, "a fractional plan is one GPU with its share")
	full := offerByKey(t, offers, "vultr/ewr/vcg-a100-12c-120g-80vram")
	assert.Equal(t, fleet.GPU{Vendor: "NVIDIA", Model: "A100", Count: 1, MemoryGiB: 80}, full.GPU)
	assert.Equal(t, 120.0, full.MemoryGiB)
	assert.Equal(t, 1750.0, full.MonthlyCap, "monthly_cost: 730 h of a Cloud GPU")

	small := offerByKey(t, offers, "vultr/ewr/vbm-4c-32gb")
	assert.False(t, small.SupportsVPC, "no private networking")
	assert.Empty(t, fleet.Filter([]fleet.Offer{small}, fleet.Requirements{Cluster: true}))
}

func TestOffersMarkSoldOutPlansUnavailable(t *testing.T) {
	v, p := simProvider(t)
	require.NoError(t, v.SoldOut("vbm-256c-2048gb-8-mi300x-gpu", "ord"))
	offers, err := p.Offers(t.Context())
	require.NoError(t, err)
	assert.False(t, offerByKey(t, offers, "vultr/ord/vbm-256c-2048gb-8-mi300x-gpu").Available)
	assert.True(t, offerByKey(t, offers, "vultr/atl/vbm-256c-2048gb-8-mi300x-gpu").Available)
}

func TestProviderLifecycleOnSim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, p := simProvider(t)
		offers, err := p.Offers(t.Context())
		require.NoError(t, err)
		o := offerByKey(t, offers, "vultr/ewr/vcg-a100-3c-30g-20vram")
		label := fleet.Label{Fleet: "gpu", RequestID: "0123456789ab"}
		inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: label, SSHKeys: []string{authorizedKey}})
		require.NoError(t, err)
		assert.Equal(t, fleet.StatusProvisioning, inst.Status)
		assert.Equal(t, label.RequestID, inst.RequestID)
		res := v.Resources()
		require.Len(t, res, 1)
		assert.Equal(t, label.String(), res[0].Label)
		assert.Contains(t, res[0].Tags, vultr.TagFleet)

		assert.ErrorIs(t, p.Delete(t.Context(), inst.ID, fleet.DeleteOptions{}), fleet.ErrNotActive)
		time.Sleep(2 * time.Minute)
		got, err := p.Get(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.True(t, got.Running())
		assert.Equal(t, "root", got.SSH.User)
		assert.NotEmpty(t, got.SSH.Host)
		assert.ErrorIs(t, p.Delete(t.Context(), inst.ID, fleet.DeleteOptions{}), fleet.ErrLocked)
		time.Sleep(5 * time.Minute)
		require.NoError(t, p.Delete(t.Context(), inst.ID, fleet.DeleteOptions{}))
		time.Sleep(time.Minute)
		_, err = p.Get(t.Context(), inst.ID)
		assert.ErrorIs(t, err, fleet.ErrNotFound)
		assert.ErrorIs(t, p.Delete(t.Context(), inst.ID, fleet.DeleteOptions{}), fleet.ErrNotFound)
	})
}

func TestProviderVPCAttachListDelete(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, p := simProvider(t)
		offers, err := p.Offers(t.Context())
		require.NoError(t, err)
		o := offerByKey(t, offers, "vultr/ord/vbm-256c-2048gb-8-mi300x-gpu")
		inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: fleet.Label{Fleet: "c", RequestID: "0123456789ab"}})
		require.NoError(t, err)
		vpc, err := p.CreateVPC(t.Context(), "ord", fleet.Label{Fleet: "c", RequestID: "ba9876543210"})
		require.NoError(t, err)
		assert.Equal(t, "c", vpc.Fleet)
		time.Sleep(46 * time.Minute) // bare metal: pending 40 min, then locked 5 min
		require.NoError(t, v.FlakyAttach(1))
		assert.ErrorIs(t, p.AttachVPC(t.Context(), inst.ID, vpc.ID), fleet.ErrAttachFailed)
		require.NoError(t, p.AttachVPC(t.Context(), inst.ID, vpc.ID))
		ids, err := p.InstanceVPCs(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.Equal(t, []string{vpc.ID}, ids)
		vpcs, err := p.ListVPCs(t.Context())
		require.NoError(t, err)
		require.Len(t, vpcs, 1)
		assert.Equal(t, "c", vpcs[0].Fleet)
		assert.ErrorIs(t, p.DeleteVPC(t.Context(), vpc.ID), fleet.ErrVPCInUse)
	})
}

// A server whose label was edited in the console is still known by the
// tags written at create: the label tag gives owner, fleet and request id;
// the older owner and fleet tags give owner and fleet when they read one way
// only (a fleet may be named "owner-…"); either way LabelError asks for the
// label to be written again. Tags that say too little say nothing.
func TestProviderReadsOwnerAndFleetFromTagsWhenTheLabelIsNotOurs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		v, p := simProvider(t)
		offers, err := p.Offers(t.Context())
		require.NoError(t, err)
		o := offerByKey(t, offers, "vultr/ewr/vcg-a100-3c-30g-20vram")
		label := fleet.Label{Owner: "t1", Fleet: "owner-x", RequestID: "0123456789ab"}
		inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: label})
		require.NoError(t, err)
		who := func(tags []string) [3]string {
			t.Helper()
			require.NoError(t, v.RelabelOutOfBand(inst.ID, "renamed in the console", tags))
			got, err := p.Get(t.Context(), inst.ID)
			require.NoError(t, err)
			if got.Owner != "" {
				assert.NotEmpty(t, got.LabelError, "the label is to be written again")
			}
			return [3]string{got.Owner, got.Fleet, got.RequestID}
		}
		tag := func(s string) string { return vultr.TagFleet + "-" + s }
		assert.Equal(t, [3]string{"t1", "owner-x", "0123456789ab"}, who(nil), "the label tag, kept from create")
		assert.Equal(t, [3]string{"t1", "train", ""}, who([]string{vultr.TagFleet, tag("train"), tag("owner-t1")}), "older tags")
		assert.Equal(t, [3]string{"", "", ""}, who([]string{vultr.TagFleet, tag("owner-x"), tag("owner-t1")}),
			"fleet owner-x of t1, or fleet owner-t1 of x: two readings, none taken")
		assert.Equal(t, [3]string{"", "", ""}, who([]string{vultr.TagFleet, tag("train")}), "no owner tag: not ours")
	})
}
