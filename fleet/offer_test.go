package fleet

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func bareMetalMI300X() Offer {
	nvme := make([]LocalDisk, 0, 8)
	for _, n := range []int{0, 1, 2, 3, 5, 6, 7, 8} {
		nvme = append(nvme, LocalDisk{Type: "NVMe", SizeBytes: 15360000000000,
			MountPath: "/mnt/nvme" + string(rune('0'+n)) + "n1p1"})
	}
	return Offer{Provider: ProviderHotAisle, Region: "us-michigan-1", InstanceType: "bm-mi300x-8",
		BareMetal: true, CPUArch: "x86", VCPUs: 104, MemoryGiB: 2048, DiskGiB: 447, LocalDisks: nvme,
		GPU: GPU{Vendor: "AMD", Model: "MI300X", Count: 8, MemoryGiB: 192}, PricePerHour: 27.12,
		MinimumReservation: 8 * time.Hour, BillingGranularity: time.Minute, Available: true, Quantity: 1}
}

func TestWriteOffersMatchesTheDocumentedTable(t *testing.T) {
	vm := Offer{Provider: ProviderVultr, Region: "ord", InstanceType: "vcg-a100-1c-6g-4vram", CPUArch: "x86",
		VCPUs: 1, MemoryGiB: 6, DiskGiB: 70, GPU: GPU{Vendor: "NVIDIA", Model: "A100", Count: 1, MemoryGiB: 4},
		PricePerHour: 0.123, Available: true}
	var buf bytes.Buffer
	require.NoError(t, WriteOffers(&buf, []Offer{bareMetalMI300X(), vm}))
	want := strings.Join([]string{
		" #  PROVIDER                  RESOURCES                          INSTANCE TYPE         PRICE",
		" 1  vultr (ord)               cpu=x86:1 mem=6GB disk=70GB        vcg-a100-1c-6g-4vram  $0.12",
		"                              gpu=A100:4GB:1",
		" 2  hotaisle (us-michigan-1)  cpu=x86:104 mem=2048GB disk=447GB  bm-mi300x-8           $27.12",
		"                              gpu=MI300X:192GB:8 nvme=8x15.36TB",
		""}, "\n")
	assert.Equal(t, want, buf.String())
}

func TestRequirementsMatchEachField(t *testing.T) {
	o := bareMetalMI300X()
	cases := map[string]struct {
		r    Requirements
		want bool
	}{
		"zero matches":        {Requirements{}, true},
		"provider":            {Requirements{Providers: []string{"vultr"}}, false},
		"region":              {Requirements{Regions: []string{"us-michigan-1"}}, true},
		"instance type":       {Requirements{InstanceTypes: []string{"vm-mi300x-1"}}, false},
		"vendor ignores case": {Requirements{GPUVendor: "amd"}, true},
		"model":               {Requirements{GPUModel: "H100"}, false},
		"count exact":         {Requirements{GPUCount: 4}, false},
		"gpu memory":          {Requirements{MinGPUMemoryGiB: 193}, false},
		"vcpus":               {Requirements{MinVCPUs: 104}, true},
		"memory":              {Requirements{MinMemoryGiB: 4096}, false},
		"disk":                {Requirements{MinDiskGiB: 500}, false},
		"vm only":             {Requirements{BareMetal: No}, false},
		"bare metal only":     {Requirements{BareMetal: Yes}, true},
		"max price":           {Requirements{MaxPricePerHour: 27}, false},
		"cluster needs VPC":   {Requirements{Cluster: true}, false},
	}
	for name, c := range cases {
		assert.Equal(t, c.want, c.r.Match(o), name)
	}
	o.Available = false
	assert.False(t, Requirements{}.Match(o), "sold out is excluded by default")
	assert.True(t, Requirements{IncludeSoldOut: true}.Match(o))
}

func TestFilterSortsByPriceThenKey(t *testing.T) {
	a := Offer{Provider: "vultr", Region: "ord", InstanceType: "b", PricePerHour: 2, Available: true}
	b := Offer{Provider: "vultr", Region: "ewr", InstanceType: "b", PricePerHour: 2, Available: true}
	c := Offer{Provider: "hotaisle", Region: "x", InstanceType: "c", PricePerHour: 1, Available: true}
	got := Filter([]Offer{a, b, c}, Requirements{})
	assert.Equal(t, []string{c.Key(), b.Key(), a.Key()}, []string{got[0].Key(), got[1].Key(), got[2].Key()})
}

func TestLabelRoundTripAndRejection(t *testing.T) {
	l := Label{Fleet: "train-a", RequestID: NewRequestID()}
	got, ok := ParseLabel(l.String())
	require.True(t, ok)
	assert.Equal(t, l, got)
	assert.LessOrEqual(t, len(Label{Fleet: strings.Repeat("a", 40), RequestID: "0123456789ab"}.String()), 64)
	for _, s := range []string{"", "my-server", "gpufleet.x", "gpufleet.Bad.0123456789ab", "gpufleet.ok.xyz", "other.ok.0123456789ab"} {
		_, ok := ParseLabel(s)
		assert.False(t, ok, s)
	}
	assert.Error(t, ValidateFleetName("-x"))
	assert.NoError(t, ValidateFleetName("x"))
}

type countingProvider struct {
	name   string
	calls  atomic.Int32
	offers []Offer
	err    error
	gate   chan struct{}
}

func (p *countingProvider) Name() string { return p.name }
func (p *countingProvider) Offers(ctx context.Context) ([]Offer, error) {
	p.calls.Add(1)
	if p.gate != nil {
		<-p.gate
	}
	return p.offers, p.err
}
func (p *countingProvider) Create(context.Context, CreateRequest) (Instance, error) {
	return Instance{}, nil
}
func (p *countingProvider) Get(context.Context, string) (Instance, error)       { return Instance{}, nil }
func (p *countingProvider) List(context.Context) ([]Instance, error)            { return nil, nil }
func (p *countingProvider) Delete(context.Context, string, DeleteOptions) error { return nil }

func TestCatalogCachesCollapsesAndReportsFailuresBesideOffers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		good := &countingProvider{name: "hotaisle", offers: []Offer{bareMetalMI300X()}, gate: make(chan struct{})}
		bad := &countingProvider{name: "vultr", err: errors.New("boom")}
		c := NewCatalog([]Provider{good, bad}, time.Minute)
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				offers, err := c.Offers(t.Context(), Requirements{})
				assert.Len(t, offers, 1)
				var pe *ProviderError
				if assert.ErrorAs(t, err, &pe) {
					assert.Equal(t, "vultr", pe.Provider)
				}
			})
		}
		synctest.Wait()
		close(good.gate)
		wg.Wait()
		assert.EqualValues(t, 1, good.calls.Load(), "concurrent fetches collapse into one")
		_, _ = c.Offers(t.Context(), Requirements{})
		assert.EqualValues(t, 1, good.calls.Load(), "cached within the TTL")
		time.Sleep(time.Minute)
		_, _ = c.Offers(t.Context(), Requirements{Providers: []string{"hotaisle"}})
		assert.EqualValues(t, 2, good.calls.Load(), "fetched again after the TTL")
	})
}
