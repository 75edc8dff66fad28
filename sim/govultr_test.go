package sim_test

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vultr/govultr/v3"
	"golang.org/x/crypto/ssh"

	"github.com/gpufleet/gpufleet/sim"
)

// Conformance: the third-party client github.com/vultr/govultr/v3 drives
// sim.Vultr and every decoded value is checked. govultr retries 429 and 5xx
// with sub-second sleeps, which take no time inside the bubble.

// bearer adds the Vultr API key to every request, as govultr's users do
// with an oauth2 transport.
type bearer struct {
	rt  http.RoundTripper
	key string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.rt.RoundTrip(r)
}

func newGovultr(t *testing.T, v *sim.Vultr) *govultr.Client {
	t.Helper()
	c := govultr.NewClient(&http.Client{Transport: bearer{rt: v.Client().Transport, key: sim.DefaultAPIKey}})
	require.NoError(t, c.SetBaseURL("https://api.vultr.example"))
	return c
}

func TestGovultrCatalog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		c := newGovultr(t, sim.NewVultr())
		cat := sim.DefaultVultrCatalog()

		var plans []govultr.Plan
		opts := &govultr.ListOptions{PerPage: 5}
		for pages := 1; ; pages++ {
			page, meta, _, err := c.Plan.List(ctx, "", opts)
			require.NoError(t, err)
			require.LessOrEqual(t, len(page), 5)
			assert.Equal(t, len(cat.Plans), meta.Total)
			plans = append(plans, page...)
			if meta.Links.Next == "" {
				assert.Equal(t, 4, pages)
				break
			}
			opts.Cursor = meta.Links.Next
		}
		require.Len(t, plans, len(cat.Plans))
		for i, p := range plans {
			w := cat.Plans[i]
			assert.Equal(t, w.ID, p.ID)
			assert.Equal(t, w.VCPUCount, p.VCPUCount)
			assert.Equal(t, w.RAM, p.RAM)
			assert.Equal(t, w.Disk, p.Disk)
			assert.Equal(t, w.DiskCount, p.DiskCount)
			assert.Equal(t, w.Bandwidth, p.Bandwidth)
			assert.InDelta(t, w.MonthlyCost, float64(p.MonthlyCost), 0.01)
			assert.Equal(t, w.Type, p.Type)
			assert.Equal(t, w.GPUVRAM, p.GPUVRAM)
			assert.Equal(t, w.GPUType, p.GPUType)
			assert.Equal(t, w.Locations, p.Locations)
		}

		gpu, _, _, err := c.Plan.List(ctx, "vcg", nil)
		require.NoError(t, err)
		i := slices.IndexFunc(gpu, func(p govultr.Plan) bool { return p.ID == "vcg-a100-1c-6g-4vram" })
		require.GreaterOrEqual(t, i, 0)
		assert.Equal(t, 4, gpu[i].GPUVRAM)
		assert.Equal(t, "NVIDIA_A100", gpu[i].GPUType)

		var metal []govultr.BareMetalPlan
		mopts := &govultr.ListOptions{PerPage: 2}
		for {
			page, meta, _, err := c.Plan.ListBareMetal(ctx, mopts)
			require.NoError(t, err)
			metal = append(metal, page...)
			if meta.Links.Next == "" {
				break
			}
			mopts.Cursor = meta.Links.Next
		}
		require.Len(t, metal, len(cat.MetalPlans))
		mi := metal[slices.IndexFunc(metal, func(p govultr.BareMetalPlan) bool { return p.ID == "vbm-256c-2048gb-8-mi300x-gpu" })]
		assert.Equal(t, 128, mi.CPUCount)
		assert.Equal(t, 256, mi.CPUThreads)
		assert.Equal(t, "AMD EPYC 9534", mi.CPUModel)
		assert.Equal(t, 2097152, mi.RAM)
		assert.Equal(t, 3576, mi.Disk)
		assert.Equal(t, 8, mi.DiskCount)
		assert.InDelta(t, 11773.44, float64(mi.MonthlyCost), 0.01)
		assert.Equal(t, "NVMe", mi.Type)

		regions, meta, _, err := c.Region.List(ctx, &govultr.ListOptions{PerPage: 3})
		require.NoError(t, err)
		assert.Len(t, regions, 3)
		assert.Equal(t, len(cat.Regions), meta.Total)
		assert.Equal(t, "ewr", regions[0].ID)
		assert.Equal(t, "New Jersey", regions[0].City)
		assert.Equal(t, "North America", regions[0].Continent)
		assert.Contains(t, regions[0].Connectivity, "public_ip")
		av, _, err := c.Region.Availability(ctx, "ord", "vbm")
		require.NoError(t, err)
		assert.Contains(t, av.AvailablePlans, "vbm-256c-2048gb-8-mi300x-gpu")
	})
}

func TestGovultrLifecycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		v := sim.NewVultr()
		c := newGovultr(t, v)
		start := time.Now()

		key := govultrKey(t)
		sk, _, err := c.SSHKey.Create(ctx, &govultr.SSHKeyReq{Name: "fleet", SSHKey: key})
		require.NoError(t, err)
		assert.Equal(t, "fleet", sk.Name)
		assert.Equal(t, key, sk.SSHKey)

		vpc, _, err := c.VPC.Create(ctx, &govultr.VPCReq{Region: "ewr", Description: "gv"})
		require.NoError(t, err)
		assert.Equal(t, "ewr", vpc.Region)
		assert.Equal(t, "gv", vpc.Description)
		assert.NotEmpty(t, vpc.V4Subnet)
		assert.Equal(t, 20, vpc.V4SubnetMask)

		ud := base64.StdEncoding.EncodeToString([]byte("#cloud-config\nssh_authorized_keys:\n  - " + key + "\n"))
		inst, _, err := c.Instance.Create(ctx, &govultr.InstanceCreateReq{Region: "ewr", Plan: "vcg-a100-1c-6g-4vram",
			Label: "gv-0", OsID: 1743, Tags: []string{"fleet-a"}, AttachVPC: []string{vpc.ID}, UserData: ud,
			SSHKeys: []string{sk.ID}})
		require.NoError(t, err)
		assert.Equal(t, "pending", inst.Status)
		assert.Equal(t, "running", inst.PowerStatus)
		assert.Equal(t, "none", inst.ServerStatus)
		assert.Equal(t, "0.0.0.0", inst.MainIP)
		assert.Equal(t, "gv-0", inst.Label)
		assert.Equal(t, []string{"fleet-a"}, inst.Tags)
		assert.Equal(t, "vcg-a100-1c-6g-4vram", inst.Plan)
		assert.Equal(t, 6144, inst.RAM)
		assert.Equal(t, 1, inst.VCPUCount)
		assert.Equal(t, "Ubuntu 22.04 LTS x64", inst.Os)
		assert.NotEmpty(t, inst.DefaultPassword)
		created, err := time.Parse(time.RFC3339, inst.DateCreated)
		require.NoError(t, err)
		assert.True(t, created.Equal(start))

		bm, _, err := c.BareMetalServer.Create(ctx, &govultr.BareMetalCreate{Region: "ord",
			Plan: "vbm-256c-2048gb-8-mi300x-gpu", ImageID: "docker", Label: "gv-bm"})
		require.NoError(t, err)
		assert.Equal(t, "pending", bm.Status)
		assert.Equal(t, "2097152 MB", bm.RAM)
		assert.Equal(t, "8x 3576 GB NVMe", bm.Disk)
		assert.Equal(t, 128, bm.CPUCount)
		assert.Equal(t, "gv-bm", bm.Label)

		// Wait for the VM, as a poller would.
		for inst.Status != "active" || inst.ServerStatus != "ok" {
			time.Sleep(10 * time.Second)
			inst, _, err = c.Instance.Get(ctx, inst.ID)
			require.NoError(t, err)
		}
		assert.Equal(t, 150*time.Second, time.Since(start))
		assert.NotEqual(t, "0.0.0.0", inst.MainIP)
		assert.Equal(t, 70, inst.Disk)
		infos, _, _, err := c.Instance.ListVPCInfo(ctx, inst.ID, nil)
		require.NoError(t, err)
		require.Len(t, infos, 1)
		assert.Equal(t, vpc.ID, infos[0].ID)
		assert.Equal(t, infos[0].IPAddress, inst.InternalIP)
		subnet := netip.PrefixFrom(netip.MustParseAddr(vpc.V4Subnet), vpc.V4SubnetMask)
		assert.True(t, subnet.Contains(netip.MustParseAddr(inst.InternalIP)), "%s in %s", inst.InternalIP, subnet)

		// Locked for 5 min after active: govultr's three quick retries are not enough.
		err = c.Instance.Delete(ctx, inst.ID)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "gave up after 4 attempts")
		assert.Contains(t, err.Error(), "Server is currently locked")

		for bm.Status != "active" {
			time.Sleep(time.Minute)
			bm, _, err = c.BareMetalServer.Get(ctx, bm.ID)
			require.NoError(t, err)
		}
		assert.GreaterOrEqual(t, time.Since(start), 40*time.Minute)
		assert.Less(t, time.Since(start), 41*time.Minute)
		assert.NotEmpty(t, bm.MainIP)
		assert.Positive(t, bm.MacAddress)
		assert.Equal(t, "running", bm.PowerStatus)

		govultrVPCs(t, c, inst.ID, bm.ID)

		// Long past the lock, the VM deletes; then it is gone.
		require.NoError(t, c.Instance.Delete(ctx, inst.ID))
		require.NoError(t, c.BareMetalServer.Delete(ctx, bm.ID))
		time.Sleep(time.Minute)
		_, _, err = c.Instance.Get(ctx, inst.ID)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Invalid instance-id.")
		_, _, err = c.BareMetalServer.Get(ctx, bm.ID)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Invalid server")
		list, meta, _, err := c.Instance.List(ctx, &govultr.ListOptions{Label: "gv-0"})
		require.NoError(t, err)
		assert.Empty(t, list)
		assert.Equal(t, 0, meta.Total)
		require.NoError(t, c.VPC.Delete(ctx, vpc.ID))
		require.NoError(t, c.SSHKey.Delete(ctx, sk.ID))

		l := v.Ledger()
		require.Len(t, l.Charges, 2)
		assert.Equal(t, 0.12, l.Charges[0].USD, "the VM ran under an hour: 0.123, in cents")
		assert.Equal(t, 17.52, l.Charges[1].USD, "the bare metal ran under an hour")
	})
}

// govultrVPCs attaches, lists, detaches and deletes VPCs with govultr, the
// VM long active and the bare metal just active (so locked at first).
func govultrVPCs(t *testing.T, c *govultr.Client, instID, bmID string) {
	ctx := context.Background()
	vpc2, _, err := c.VPC.Create(ctx, &govultr.VPCReq{Region: "ewr", Description: "gv-2"})
	require.NoError(t, err)
	require.NoError(t, c.Instance.AttachVPC(ctx, instID, vpc2.ID))
	infos, _, _, err := c.Instance.ListVPCInfo(ctx, instID, nil)
	require.NoError(t, err)
	assert.Len(t, infos, 2)

	vpcs, meta, _, err := c.VPC.List(ctx, &govultr.ListOptions{PerPage: 1})
	require.NoError(t, err)
	assert.Len(t, vpcs, 1)
	assert.Equal(t, 2, meta.Total)
	assert.NotEmpty(t, meta.Links.Next)

	err = c.VPC.Delete(ctx, vpc2.ID)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "attached to this VPC network")
	require.NoError(t, c.Instance.DetachVPC(ctx, instID, vpc2.ID))
	infos, _, _, err = c.Instance.ListVPCInfo(ctx, instID, nil)
	require.NoError(t, err)
	assert.Len(t, infos, 1)
	require.NoError(t, c.VPC.Delete(ctx, vpc2.ID))

	vpcORD, _, err := c.VPC.Create(ctx, &govultr.VPCReq{Region: "ord"})
	require.NoError(t, err)
	err = c.BareMetalServer.AttachVPC(ctx, bmID, vpcORD.ID)
	require.Error(t, err, "the bare metal has just become active: locked")
	assert.Contains(t, err.Error(), "Server is currently locked")
	time.Sleep(5 * time.Minute)
	require.NoError(t, c.BareMetalServer.AttachVPC(ctx, bmID, vpcORD.ID))
	bmInfos, _, err := c.BareMetalServer.ListVPCInfo(ctx, bmID)
	require.NoError(t, err)
	require.Len(t, bmInfos, 1)
	assert.Equal(t, vpcORD.ID, bmInfos[0].ID)
	require.NoError(t, c.BareMetalServer.DetachVPC(ctx, bmID, vpcORD.ID))
	require.NoError(t, c.VPC.Delete(ctx, vpcORD.ID))
}

func govultrKey(t *testing.T) string {
	priv := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub, err := ssh.NewPublicKey(priv.Public())
	require.NoError(t, err)
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
}

// The drift and power routes, the one-filter rule and internal_ip with two
// VPCs, through govultr.
func TestGovultrDriftAndRules(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		v := sim.NewVultr()
		c := newGovultr(t, v)
		vm, err := v.SeedServer(sim.VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr", Label: "gv", Tags: []string{"t"}, Age: time.Hour})
		require.NoError(t, err)
		bm, err := v.SeedServer(sim.VultrSeed{Plan: "vbm-24c-256gb-amd", Region: "ewr", Age: 2 * time.Hour})
		require.NoError(t, err)

		require.NoError(t, c.Instance.Halt(ctx, vm))
		inst, _, err := c.Instance.Get(ctx, vm)
		require.NoError(t, err)
		assert.Equal(t, "stopped", inst.PowerStatus)
		require.NoError(t, c.Instance.Start(ctx, vm))
		require.NoError(t, c.Instance.Reboot(ctx, vm))
		inst, _, err = c.Instance.Get(ctx, vm)
		require.NoError(t, err)
		assert.Equal(t, "running", inst.PowerStatus)
		require.NoError(t, c.BareMetalServer.Halt(ctx, bm))
		b, _, err := c.BareMetalServer.Get(ctx, bm)
		require.NoError(t, err)
		assert.Equal(t, "stopped", b.PowerStatus)
		require.NoError(t, c.BareMetalServer.Start(ctx, bm))
		require.NoError(t, c.BareMetalServer.Reboot(ctx, bm))

		// Out of band, as a console user.
		require.NoError(t, v.HaltOutOfBand(vm))
		require.NoError(t, v.RelabelOutOfBand(vm, "renamed", nil))
		inst, _, err = c.Instance.Get(ctx, vm)
		require.NoError(t, err)
		assert.Equal(t, "stopped", inst.PowerStatus)
		assert.Equal(t, "renamed", inst.Label)

		_, _, _, err = c.Instance.List(ctx, &govultr.ListOptions{Tag: "t", Region: "ewr"})
		require.Error(t, err)
		assert.Contains(t, err.Error(), "Only one filter per request is allowed.")
		list, _, _, err := c.Instance.List(ctx, &govultr.ListOptions{Tag: "t"})
		require.NoError(t, err)
		assert.Len(t, list, 1)

		a, _, err := c.VPC.Create(ctx, &govultr.VPCReq{Region: "ewr"})
		require.NoError(t, err)
		b2, _, err := c.VPC.Create(ctx, &govultr.VPCReq{Region: "ewr"})
		require.NoError(t, err)
		require.NoError(t, c.Instance.AttachVPC(ctx, vm, a.ID))
		inst, _, err = c.Instance.Get(ctx, vm)
		require.NoError(t, err)
		assert.NotEmpty(t, inst.InternalIP)
		require.NoError(t, c.Instance.AttachVPC(ctx, vm, b2.ID))
		inst, _, err = c.Instance.Get(ctx, vm)
		require.NoError(t, err)
		assert.Empty(t, inst.InternalIP, "two private networks")

		require.NoError(t, v.DestroyOutOfBand(vm, sim.VultrGoneInvalidID))
		_, _, err = c.Instance.Get(ctx, vm)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "invalid instance ID")
		require.NoError(t, v.DestroyOutOfBand(bm))
		_, _, err = c.BareMetalServer.Get(ctx, bm)
		assert.ErrorContains(t, err, "Invalid server.")
	})
}

// With a visibility lag, govultr does not see a new server at once.
func TestGovultrVisibilityLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		v := sim.NewVultr(sim.WithVisibilityLag(20 * time.Second))
		c := newGovultr(t, v)
		inst, _, err := c.Instance.Create(ctx, &govultr.InstanceCreateReq{Region: "ewr", Plan: "vc2-1c-1gb",
			Label: "lag", OsID: 1743})
		require.NoError(t, err)
		_, _, err = c.Instance.Get(ctx, inst.ID)
		assert.ErrorContains(t, err, "Invalid instance-id.")
		list, meta, _, err := c.Instance.List(ctx, &govultr.ListOptions{Label: "lag"})
		require.NoError(t, err)
		assert.Empty(t, list)
		assert.Equal(t, 0, meta.Total)
		time.Sleep(20 * time.Second)
		got, _, err := c.Instance.Get(ctx, inst.ID)
		require.NoError(t, err)
		assert.Equal(t, "lag", got.Label)
	})
}
