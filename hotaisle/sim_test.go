package hotaisle_test

import (
	"crypto/ed25519"
	"net/http"
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

// simClient returns a fake Hot Aisle and a client on its in-memory transport,
// left on the real base URL.
func simClient(t *testing.T, opts ...sim.Option) (*sim.HotAisle, *hotaisle.Client) {
	t.Helper()
	h := sim.NewHotAisle(opts...)
	return h, hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client()))
}

func simVMRow(t *testing.T, rows []hotaisle.VMType, gpus uint64) hotaisle.VMType {
	t.Helper()
	for _, r := range rows {
		if r.Quantity > 0 && len(r.Specs.GPUs) == 1 && r.Specs.GPUs[0].Count == gpus {
			return r
		}
	}
	t.Fatalf("no %dx row with stock", gpus)
	return hotaisle.VMType{}
}

func TestSimVMLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, c := simClient(t)
		ctx := t.Context()
		team, err := c.Check(ctx, hotaisle.RoleOperator)
		require.NoError(t, err)
		assert.Equal(t, sim.DefaultTeam, team.Handle)

		rows, err := c.ListVMTypes(ctx)
		require.NoError(t, err)
		row := simVMRow(t, rows, 2)
		assert.Equal(t, int64(60), row.MinimumReservationMinutes)
		assert.Equal(t, int64(598), row.OnDemandPrice, "US cents per hour for the whole 2x VM")

		vm, err := c.ProvisionVM(ctx, hotaisle.VMProvisionRequest{VMSpecs: row.Specs})
		require.NoError(t, err)
		assert.Equal(t, row.Specs, vm.VMSpecs)
		assert.NotEmpty(t, vm.IPAddress)
		st, err := c.GetVMState(ctx, vm.Name)
		require.NoError(t, err)
		assert.Equal(t, hotaisle.VMRunning, st.State)

		require.NoError(t, c.UpdateVM(ctx, vm.Name, hotaisle.VMUpdate{Description: "fleet=ci req=1"}))
		got, err := c.GetVM(ctx, vm.Name)
		require.NoError(t, err)
		assert.Equal(t, "fleet=ci req=1", got.Description)
		list, err := c.ListVMs(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, vm.Name, list[0].Name)

		// Before the 60-minute minimum a plain DELETE is refused.
		time.Sleep(5 * time.Minute)
		err = c.DeleteVM(ctx, vm.Name, false)
		assert.ErrorIs(t, err, fleet.ErrMinReservation)

		// After it, the DELETE blocks while the VM is reset, then it is gone.
		time.Sleep(time.Hour)
		start := time.Now()
		require.NoError(t, c.DeleteVM(ctx, vm.Name, false))
		assert.Equal(t, sim.DefaultHotAisleDeleteDelay, time.Since(start))
		_, err = c.GetVM(ctx, vm.Name)
		assert.ErrorIs(t, err, fleet.ErrNotFound)
		assert.ErrorIs(t, c.DeleteVM(ctx, vm.Name, true), fleet.ErrNotFound, "a repeated DELETE says gone")
		assert.Empty(t, liveResources(h))
	})
}

func TestSimForceDeleteBeforeMinimum(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, c := simClient(t)
		ctx := t.Context()
		vm, err := c.ProvisionVM(ctx, hotaisle.VMProvisionRequest{VMSpecs: hotaisle.VMSpecs{
			GPUs: []hotaisle.GPU{{Count: 1, Manufacturer: "AMD", Model: "MI300X"}}}})
		require.NoError(t, err, "a partial spec is enough")
		assert.Equal(t, uint64(1), vm.GPUs[0].Count)
		time.Sleep(time.Minute)
		require.NoError(t, c.DeleteVM(ctx, vm.Name, true))
		assert.Empty(t, liveResources(h))
		ledger := h.Ledger()
		require.Len(t, ledger.Charges, 1)
		assert.Greater(t, ledger.Charges[0].Unrefunded, 0.0, "the minimum is charged, not refunded")
	})
}

func TestSimProvisionRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, c := simClient(t)
		ctx := t.Context()
		eightX := hotaisle.VMProvisionRequest{VMSpecs: hotaisle.VMSpecs{GPUs: []hotaisle.GPU{{Count: 8}}}}
		require.NoError(t, h.SoldOut("vm-mi300x-8"))
		_, err := c.ProvisionVM(ctx, eightX)
		assert.ErrorIs(t, err, fleet.ErrNoCapacity)

		h.SetVMLimit(0)
		_, err = c.ProvisionVM(ctx, hotaisle.VMProvisionRequest{VMSpecs: hotaisle.VMSpecs{CPUCores: 13}})
		assert.ErrorIs(t, err, fleet.ErrQuotaExceeded)

		h.SetVMLimit(10)
		h.InsufficientBalance()
		_, err = c.ProvisionVM(ctx, hotaisle.VMProvisionRequest{VMSpecs: hotaisle.VMSpecs{CPUCores: 13}})
		assert.ErrorIs(t, err, fleet.ErrInsufficientBalance)
		_, err = c.ReserveBareMetal(ctx, hotaisle.BareMetalReservation{Specs: hotaisle.BareMetalSpecs{CPUCores: 104}})
		assert.ErrorIs(t, err, fleet.ErrInsufficientBalance)
		assert.Empty(t, liveResources(h))
	})
}

func TestSimBareMetalReserveAndRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, c := simClient(t)
		ctx := t.Context()
		rows, err := c.ListBareMetalTypes(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, rows)
		row := rows[0]
		assert.Equal(t, int64(480), row.MinimumReservationMinutes)
		require.Len(t, row.Specs.Disks, 2)

		bm, err := c.ReserveBareMetal(ctx, hotaisle.BareMetalReservation{Description: "training node", Specs: row.Specs})
		require.NoError(t, err)
		assert.Equal(t, "training node", bm.Description)
		assert.Equal(t, row.Specs.CPUs, bm.CPUs)
		require.NotNil(t, bm.SSHAccess, "bare metal is reached through its SSH front")
		assert.NotEqual(t, bm.IPAddress+":22", bm.SSHAddr())

		power, err := c.GetBareMetalPower(ctx, bm.Name)
		require.NoError(t, err)
		assert.Equal(t, hotaisle.PowerOn, power)
		time.Sleep(sim.DefaultHotAisleInstallTime + time.Minute)
		got, err := c.GetBareMetal(ctx, bm.Name)
		require.NoError(t, err)
		require.NotNil(t, got.OSStatus)
		assert.Equal(t, hotaisle.OSInstalled, got.OSStatus.OSInstallStatus)
		assert.False(t, got.OSStatus.LastImagingUpdate.IsZero())

		require.NoError(t, c.UpdateBareMetal(ctx, bm.Name, hotaisle.BareMetalUpdate{Description: "renamed"}))
		list, err := c.ListBareMetal(ctx)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, "renamed", list[0].Description)

		assert.ErrorIs(t, c.ReleaseBareMetal(ctx, bm.Name, false), fleet.ErrMinReservation)
		require.NoError(t, c.ReleaseBareMetal(ctx, bm.Name, true))
		_, err = c.GetBareMetal(ctx, bm.Name)
		assert.ErrorIs(t, err, fleet.ErrNotFound)
		assert.ErrorIs(t, c.ReleaseBareMetal(ctx, bm.Name, true), fleet.ErrNotFound)
		assert.Empty(t, liveResources(h))

		h.SetBareMetalLimit(0)
		_, err = c.ReserveBareMetal(ctx, hotaisle.BareMetalReservation{Specs: row.Specs})
		assert.ErrorIs(t, err, fleet.ErrQuotaExceeded)
	})
}

// slashKey returns an authorized key whose fingerprint holds a "/" or "+",
// so that the path escaping is exercised.
func slashKey(t *testing.T) (line, fingerprint string) {
	t.Helper()
	for i := range 256 {
		seed := make([]byte, ed25519.SeedSize)
		seed[0] = byte(i)
		pk, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(seed).Public())
		require.NoError(t, err)
		if fp := ssh.FingerprintSHA256(pk); strings.ContainsAny(fp, "/+") {
			return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pk))) + " ci@build", fp
		}
	}
	t.Fatal("no key with / or + in its fingerprint")
	return "", ""
}

func TestSimSSHKeys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		_, c := simClient(t)
		ctx := t.Context()
		line, fp := slashKey(t)
		key, existed, err := c.AddSSHKey(ctx, line)
		require.NoError(t, err)
		assert.False(t, existed)
		assert.Equal(t, fp, key.Fingerprint)

		again, existed, err := c.AddSSHKey(ctx, line)
		require.NoError(t, err, "409 is success")
		assert.True(t, existed)
		assert.Equal(t, fp, again.Fingerprint)

		keys, err := c.ListSSHKeys(ctx)
		require.NoError(t, err)
		require.Len(t, keys, 1)
		assert.Equal(t, "ci@build", keys[0].Comment)

		require.NoError(t, c.DeleteSSHKey(ctx, fp))
		assert.ErrorIs(t, c.DeleteSSHKey(ctx, fp), fleet.ErrNotFound)
		keys, err = c.ListSSHKeys(ctx)
		require.NoError(t, err)
		assert.Empty(t, keys)
	})
}

func TestSimCheckBadKeyUnknownTeamNoPermission(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle()
		badKey := hotaisle.New("wrong-key", sim.DefaultTeam, hotaisle.WithHTTPClient(h.Client()))
		_, err := badKey.Check(t.Context())
		assert.ErrorIs(t, err, fleet.ErrUnauthorized)

		badTeam := hotaisle.New(sim.DefaultAPIKey, "nope", hotaisle.WithHTTPClient(h.Client()))
		_, err = badTeam.Check(t.Context())
		var ute *hotaisle.UnknownTeamError
		require.ErrorAs(t, err, &ute)
		assert.Equal(t, []string{sim.DefaultTeam}, ute.Known)
		_, err = badTeam.ListVMs(t.Context())
		assert.ErrorIs(t, err, fleet.ErrNotFound)

		ro := sim.NewHotAisle(sim.WithHotAisleUserRoleOnly())
		c := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(ro.Client()))
		_, err = c.Check(t.Context(), hotaisle.RoleOperator)
		assert.ErrorIs(t, err, fleet.ErrForbidden)
		_, err = c.ProvisionVM(t.Context(), hotaisle.VMProvisionRequest{VMSpecs: hotaisle.VMSpecs{CPUCores: 13}})
		assert.ErrorIs(t, err, fleet.ErrForbidden)
		_, err = c.ListVMs(t.Context())
		assert.NoError(t, err, "reads work with the user role")
	})
}

func TestSimOutageIsRetriedForReadsOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, c := simClient(t)
		ctx := t.Context()
		h.Outage(2 * time.Second)
		_, err := c.ProvisionVM(ctx, hotaisle.VMProvisionRequest{VMSpecs: hotaisle.VMSpecs{CPUCores: 13}})
		assert.ErrorIs(t, err, fleet.ErrUnavailable, "a POST is not retried")
		_, err = c.ListVMs(ctx)
		require.NoError(t, err, "a GET is retried through the outage")
		var posts int
		for _, call := range h.Calls() {
			if call.Method == "POST" {
				posts++
			}
		}
		assert.Equal(t, 1, posts)
	})
}

func liveResources(h *sim.HotAisle) []sim.Resource {
	var live []sim.Resource
	for _, r := range h.Resources() {
		if r.Live() && r.Kind != "ssh_key" {
			live = append(live, r)
		}
	}
	return live
}

func TestSimTimedOutDeleteIsSafeToRepeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := sim.NewHotAisle()
		// A client whose HTTP timeout (5 s) is shorter than the VM reset (20 s):
		// attempts time out and are retried until the reset is over.
		c := hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam, hotaisle.WithHTTPClient(
			&http.Client{Timeout: 5 * time.Second, Transport: h.Client().Transport}))
		vm, err := c.ProvisionVM(t.Context(), hotaisle.VMProvisionRequest{VMSpecs: hotaisle.VMSpecs{CPUCores: 13}})
		require.NoError(t, err)
		err = c.DeleteVM(t.Context(), vm.Name, true)
		if err != nil {
			assert.ErrorIs(t, err, fleet.ErrNotFound, "a repeat after the reset says gone")
		}
		assert.Empty(t, liveResources(h))
		var deletes int
		for _, call := range h.Calls() {
			if call.Method == http.MethodDelete {
				deletes++
			}
		}
		assert.Greater(t, deletes, 1, "the first DELETE timed out and was repeated")
	})
}
