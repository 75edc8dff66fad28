package hotaisle_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

func simProvider(t *testing.T, opts ...hotaisle.ProviderOption) (*sim.HotAisle, *hotaisle.Provider) {
	t.Helper()
	h := sim.NewHotAisle()
	c := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client()))
	return h, hotaisle.NewProvider(c, opts...)
}

func authorizedKey(t *testing.T) string {
	t.Helper()
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	sp, err := ssh.NewPublicKey(pub)
	require.NoError(t, err)
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(sp))) + " test@gpufleet"
}

func vmGolden(gpus int, cores int, minutes time.Duration, qty int) fleet.Offer {
	return fleet.Offer{Provider: "hotaisle", Region: "us-michigan-1", InstanceType: "vm-mi300x-" + itoa(gpus),
		CPUArch: "x86", VCPUs: cores, CPUModel: "Xeon Platinum 8470", MemoryGiB: float64(224 * gpus), DiskGiB: 12288,
		GPU:          fleet.GPU{Vendor: "AMD", Model: "MI300X", Count: gpus, MemoryGiB: 192},
		PricePerHour: 2.99 * float64(gpus), MinimumReservation: minutes * time.Minute, BillingGranularity: time.Minute,
		Available: true, Quantity: qty, LabelAfterCreate: true}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestOffersGoldenDefaultCatalog pins every field of the offers built from
// the sim's default Hot Aisle catalog (scenario S15): price from cents for
// the whole instance, the sold-out 8462Y+ row merged into vm-mi300x-1, GPU
// memory 192 GiB, bare metal's boot disk (not the total) and its NVMe drives.
func TestOffersGoldenDefaultCatalog(t *testing.T) {
	_, p := simProvider(t, hotaisle.WithBareMetal(true))
	offers, err := p.Offers(t.Context())
	require.NoError(t, err)
	nvme := make([]fleet.LocalDisk, 0, 8)
	for _, n := range []string{"0", "1", "2", "3", "5", "6", "7", "8"} {
		nvme = append(nvme, fleet.LocalDisk{Type: "NVMe", SizeBytes: 15360000000000, MountPath: "/mnt/nvme" + n + "n1p1"})
	}
	want := []fleet.Offer{
		vmGolden(1, 13, 30, 8), vmGolden(2, 26, 60, 4), vmGolden(4, 52, 60, 2), vmGolden(8, 104, 60, 1),
		{Provider: "hotaisle", Region: "us-michigan-1", InstanceType: "bm-mi300x-8", BareMetal: true,
			CPUArch: "x86", VCPUs: 104, CPUCores: 104, CPUModel: offers[len(offers)-1].CPUModel, MemoryGiB: 2048, DiskGiB: 447,
			LocalDisks: nvme, GPU: fleet.GPU{Vendor: "AMD", Model: "MI300X", Count: 8, MemoryGiB: 192},
			PricePerHour: 27.12, MinimumReservation: 8 * time.Hour, BillingGranularity: time.Minute, Available: true, Quantity: 2,
			TypicalBoot: 10 * time.Minute, ProvisionTimeout: 45 * time.Minute},
	}
	require.Len(t, offers, len(want))
	for i := range want {
		got := offers[i]
		assert.NotNil(t, got.ProviderData, got.InstanceType)
		got.ProviderData = nil
		assert.InDelta(t, want[i].PricePerHour, got.PricePerHour, 1e-9)
		got.PricePerHour = want[i].PricePerHour
		assert.Equal(t, want[i], got)
	}
	assert.NotEmpty(t, offers[4].CPUModel)

	_, vmOnly := simProvider(t)
	offers, err = vmOnly.Offers(t.Context())
	require.NoError(t, err)
	for _, o := range offers {
		assert.False(t, o.BareMetal, "bare metal is opt-in")
	}
}

func TestProviderVMLifecycleLabelsAndReleasePolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, p := simProvider(t)
		offers, err := p.Offers(t.Context())
		require.NoError(t, err)
		o := fleet.Filter(offers, fleet.Requirements{GPUCount: 2})[0]
		label := fleet.Label{Fleet: "train", RequestID: "0123456789ab"}
		inst, err := p.Create(t.Context(), fleet.CreateRequest{Offer: o, Label: label, SSHKeys: []string{authorizedKey(t)}})
		require.NoError(t, err)
		assert.Equal(t, "train", inst.Fleet)
		assert.Equal(t, "hotaisle", inst.SSH.User)
		assert.Equal(t, 22, inst.SSH.Port)
		assert.NotEmpty(t, inst.SSH.Host)
		assert.True(t, inst.Running())

		listed, err := p.List(t.Context())
		require.NoError(t, err)
		require.Len(t, listed, 1)
		assert.Equal(t, label.RequestID, listed[0].RequestID, "the label is found by listing")
		assert.Equal(t, label.String(), h.Resources()[0].Description)

		time.Sleep(5 * time.Minute)
		err = p.Delete(t.Context(), inst.ID, fleet.DeleteOptions{})
		assert.ErrorIs(t, err, fleet.ErrMinReservation)
		require.NoError(t, p.Delete(t.Context(), inst.ID, fleet.DeleteOptions{Force: true}))
		_, err = p.Get(t.Context(), inst.ID)
		assert.ErrorIs(t, err, fleet.ErrNotFound)
		assert.ErrorIs(t, p.Delete(t.Context(), inst.ID, fleet.DeleteOptions{}), fleet.ErrNotFound, "idempotent")
		assert.InDelta(t, 5.98, h.Ledger().TotalUSD, 0.01, "the 60-minute minimum is charged")
	})
}

func TestProviderBareMetalIsReachedThroughItsFrontHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, p := simProvider(t, hotaisle.WithBareMetal(true))
		inst := createBareMetal(t, p)
		assert.Equal(t, "bm", inst.Fleet, "the label is in the reservation")
		require.NotNil(t, inst.SSH.Jump)
		assert.Equal(t, "hotaisle", inst.SSH.Jump.User)
		assert.NotEqual(t, 22, inst.SSH.Jump.Port)
		assert.Equal(t, inst.PrivateIP, inst.SSH.Host)
		assert.False(t, inst.Running(), "the OS is still installing")
		time.Sleep(11 * time.Minute)
		got, err := p.Get(t.Context(), inst.ID)
		require.NoError(t, err)
		assert.True(t, got.Running())
		assert.ErrorIs(t, p.Delete(t.Context(), inst.ID, fleet.DeleteOptions{}), fleet.ErrMinReservation)
	})
}

func TestProviderRefusesBareMetalWhenNotEnabled(t *testing.T) {
	_, on := simProvider(t, hotaisle.WithBareMetal(true))
	offers, err := on.Offers(t.Context())
	require.NoError(t, err)
	bm := fleet.Filter(offers, fleet.Requirements{BareMetal: fleet.Yes})[0]
	_, off := simProvider(t)
	_, err = off.Create(t.Context(), fleet.CreateRequest{Offer: bm, Label: fleet.Label{Fleet: "x", RequestID: "0123456789ab"}})
	assert.ErrorIs(t, err, fleet.ErrInvalidRequest)
}

type cancelAfterProvision struct {
	rt     http.RoundTripper
	cancel context.CancelFunc
}

func (c cancelAfterProvision) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/virtual_machines/") {
		c.cancel() // the caller gives up right after the VM was assigned
	}
	return resp, err
}

// The label is written even when the caller's context ends between the
// provision and the PATCH: an unlabelled VM could never be found again.
func TestProviderLabelsTheVMEvenIfTheCallerCancels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle()
		ctx, cancel := context.WithCancel(t.Context())
		hc := &http.Client{Transport: cancelAfterProvision{rt: h.Client().Transport, cancel: cancel}}
		p := hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(hc)))
		offers, err := p.Offers(ctx)
		require.NoError(t, err)
		label := fleet.Label{Fleet: "c", RequestID: "0123456789ab"}
		_, err = p.Create(ctx, fleet.CreateRequest{Offer: fleet.Filter(offers, fleet.Requirements{GPUCount: 1})[0], Label: label})
		require.NoError(t, err)
		require.Error(t, ctx.Err())
		assert.Equal(t, label.String(), h.Resources()[0].Description)
	})
}
