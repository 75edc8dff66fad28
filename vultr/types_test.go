package vultr

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTimeDecodesBothFormatsAndEmpty(t *testing.T) {
	cases := map[string]time.Time{
		`"2024-12-02T10:19:45-05:00"`: time.Date(2024, 12, 2, 15, 19, 45, 0, time.UTC),
		`"2021-09-14T13:22:20+00:00"`: time.Date(2021, 9, 14, 13, 22, 20, 0, time.UTC),
		`"2013-12-19 14:45:41"`:       time.Date(2013, 12, 19, 14, 45, 41, 0, time.UTC),
		`"2025-01-20T09:13:02Z"`:      time.Date(2025, 1, 20, 9, 13, 2, 0, time.UTC),
		`""`:                          {},
		`null`:                        {},
	}
	for in, want := range cases {
		var v struct {
			D Time `json:"d"`
		}
		require.NoError(t, json.Unmarshal([]byte(`{"d":`+in+`}`), &v), in)
		assert.True(t, want.Equal(v.D.Time), "%s: got %v", in, v.D)
	}
	var v Time
	err := json.Unmarshal([]byte(`"yesterday"`), &v)
	assert.ErrorContains(t, err, "yesterday")
	assert.Error(t, json.Unmarshal([]byte(`12`), &v))

	b, err := json.Marshal(Time{time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)})
	require.NoError(t, err)
	assert.Equal(t, `"2025-01-02T03:04:05Z"`, string(b))
	b, _ = json.Marshal(Time{})
	assert.Equal(t, `""`, string(b))
}

func TestMACDecodesIntegerAndStrings(t *testing.T) {
	for in, want := range map[string]string{
		`2199756823533`:       "02:00:2b:b9:5b:ed",
		`"2199756823533"`:     "02:00:2b:b9:5b:ed",
		`"02:00:2b:b9:5b:ed"`: "02:00:2b:b9:5b:ed",
		`0`:                   "",
		`""`:                  "",
		`null`:                "",
	} {
		var m MAC
		require.NoError(t, json.Unmarshal([]byte(in), &m), in)
		assert.Equal(t, want, m.String(), in)
	}
	var m MAC
	assert.Error(t, json.Unmarshal([]byte(`"zz"`), &m))
	assert.Nil(t, MAC(0).HardwareAddr())
	b, _ := json.Marshal(MAC(2199756823533))
	assert.Equal(t, "2199756823533", string(b))
}

func TestFlexInt(t *testing.T) {
	for in, want := range map[string]FlexInt{`960`: 960, `"960"`: 960, `""`: 0, `null`: 0} {
		var n FlexInt
		require.NoError(t, json.Unmarshal([]byte(in), &n), in)
		assert.Equal(t, want, n, in)
	}
	var n FlexInt
	for _, in := range []string{`"lots"`, `"NaN"`, `"Inf"`, `"-Inf"`, `1e300`, `2.5`} {
		assert.Error(t, json.Unmarshal([]byte(in), &n), in)
	}
}

func TestSecretIsRedacted(t *testing.T) {
	s := Secret("Xq7!pR2#vL9m")
	inst := Instance{ID: "i", DefaultPassword: s}
	out := fmt.Sprintf("%v %+v %#v %s %q", s, inst, inst, s, s)
	assert.NotContains(t, out, "Xq7")
	assert.Contains(t, out, "[redacted]")
	assert.Equal(t, "Xq7!pR2#vL9m", string(s))
	assert.Equal(t, "", Secret("").String())
}

func TestParseRAMAndDisks(t *testing.T) {
	for in, want := range map[string]int{"2097152 MB": 2097152, "65536 MB": 65536, "2321924MB": 2321924,
		"512 GB": 524288, "2 TB": 2097152, "1024": 1024} {
		got, err := ParseRAM(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	_, err := ParseRAM("lots")
	assert.Error(t, err)

	cases := map[string][]DiskGroup{
		"2x 240 GB SSD":                  {{2, 240, "SSD"}},
		"8x 3576 GB NVMe":                {{8, 3576, "NVMe"}},
		"960 GB SSD":                     {{1, 960, "SSD"}},
		"2x 480 GB SSD, 8x 3.84 TB NVMe": {{2, 480, "SSD"}, {8, 3840, "NVMe"}},
		"1x 1920 gb":                     {{1, 1920, ""}},
		"":                               nil,
	}
	for in, want := range cases {
		got, err := ParseDisks(in)
		require.NoError(t, err, in)
		assert.InDeltaSlice(t, sizes(want), sizes(got), 1e-9, in)
		assert.Equal(t, len(want), len(got), in)
		for i := range want {
			assert.Equal(t, want[i].Count, got[i].Count, in)
			assert.Equal(t, want[i].Kind, got[i].Kind, in)
		}
	}
	_, err = ParseDisks("two disks")
	assert.Error(t, err)
}

func sizes(gs []DiskGroup) []float64 {
	out := make([]float64, len(gs))
	for i, g := range gs {
		out[i] = g.SizeGB
	}
	return out
}

func TestDecodeFixtures(t *testing.T) {
	var plans plansPage
	require.NoError(t, json.Unmarshal([]byte(fixturePlans2), &plans))
	assert.Equal(t, Plan{ID: "vcg-a100-3c-30g-20vram", VCPUCount: 3, RAM: 30720, Disk: 700, DiskCount: 1,
		Bandwidth: 6144, MonthlyCost: 437.5, HourlyCost: 0.599, Type: "vcg", GPUVRAMGB: 20,
		GPUType: "NVIDIA_A100", Locations: []string{"ewr", "ord"}}, (*plans.Plans)[0])
	assert.Equal(t, 14, plans.Meta.Total)

	var metal metalPlansPage
	require.NoError(t, json.Unmarshal([]byte(fixtureMetalPlans), &metal))
	mp := (*metal.Plans)[0]
	assert.Equal(t, 224, mp.CPUThreads)
	assert.Equal(t, 2097152, mp.RAM)
	assert.Equal(t, FlexInt(960), mp.Disk)
	assert.Equal(t, 23.92, mp.HourlyCost)
	assert.Equal(t, 16074.24, mp.MonthlyCost, "the month's cap: 672 h")
	assert.Equal(t, 12364.8, mp.MonthlyCostPreemptible)
	assert.Equal(t, 18.4, mp.HourlyCostPreemptible)

	var created instanceEnvelope
	require.NoError(t, json.Unmarshal([]byte(fixtureCreateInstance), &created))
	i := created.Instance
	assert.Equal(t, "pending", i.Status)
	assert.Equal(t, "0.0.0.0", i.MainIP)
	_, ok := i.PublicIP()
	assert.False(t, ok, "0.0.0.0 means no address yet")
	require.NotNil(t, i.InternalIP, `"internal_ip":"" is present`)
	_, ok = i.PrivateIP()
	assert.False(t, ok)
	assert.Equal(t, Secret("Xq7!pR2#vL9m"), i.DefaultPassword)
	assert.Equal(t, time.Date(2025, 1, 20, 9, 13, 2, 0, time.UTC), i.DateCreated.UTC())

	var active instanceEnvelope
	require.NoError(t, json.Unmarshal([]byte(fixtureActiveInstance), &active))
	ip, ok := active.Instance.PublicIP()
	assert.True(t, ok)
	assert.Equal(t, "149.28.40.17", ip)
	pip, ok := active.Instance.PrivateIP()
	assert.True(t, ok)
	assert.Equal(t, "10.6.96.3", pip)
	assert.Empty(t, active.Instance.DefaultPassword)

	var bm bareMetalEnvelope
	require.NoError(t, json.Unmarshal([]byte(fixtureCreateBareMetal), &bm))
	assert.Nil(t, bm.BareMetal.InternalIP, "bare metal without internal_ip: absent, not empty")
	_, ok = bm.BareMetal.PublicIP()
	assert.False(t, ok)
	ram, err := bm.BareMetal.RAMMB()
	require.NoError(t, err)
	assert.Equal(t, 2321924, ram)
	disks, err := bm.BareMetal.Disks()
	require.NoError(t, err)
	assert.Equal(t, []DiskGroup{{8, 3576, "NVMe"}}, disks)
	assert.Zero(t, bm.BareMetal.MACAddress)

	var bma bareMetalEnvelope
	require.NoError(t, json.Unmarshal([]byte(fixtureActiveBareMetal), &bma), "unknown fields are ignored")
	b := bma.BareMetal
	assert.Equal(t, "02:00:2b:b9:5b:ed", b.MACAddress.String())
	assert.Equal(t, time.Date(2025, 2, 1, 10, 0, 0, 0, time.UTC), b.DateCreated.Time, "legacy date format")
	pip, ok = b.PrivateIP()
	assert.True(t, ok)
	assert.Equal(t, "10.9.0.4", pip)
	assert.Equal(t, "running", b.PowerStatus)

	var vpcs vpcsPage
	require.NoError(t, json.Unmarshal([]byte(fixtureVPCList), &vpcs))
	assert.Equal(t, "10.6.96.0", (*vpcs.VPCs)[0].V4Subnet)
	var key sshKeyEnvelope
	require.NoError(t, json.Unmarshal([]byte(fixtureSSHKey), &key))
	assert.Equal(t, "fleet-key", key.SSHKey.Name)
}

func TestDecodeIsLenientAboutNullsAndAbsentFields(t *testing.T) {
	var v instanceEnvelope
	require.NoError(t, json.Unmarshal([]byte(`{"instance":{"id":"x","tags":null,"features":null,
		"date_created":null,"internal_ip":null,"main_ip":null,"v6_networks":[{"network":"2001:db8::"}]}}`), &v))
	assert.Equal(t, "x", v.Instance.ID)
	assert.Nil(t, v.Instance.InternalIP)
	assert.True(t, v.Instance.DateCreated.IsZero())

	var page instancesPage
	require.NoError(t, json.Unmarshal([]byte(`{"instances":[{"id":"a"}]}`), &page), "meta absent")
	assert.Nil(t, page.Meta)
}

// The answers' envelopes, to decode fixtures the way one() unwraps them.
type instanceEnvelope struct {
	Instance *Instance `json:"instance"`
}

type bareMetalEnvelope struct {
	BareMetal *BareMetal `json:"bare_metal"`
}

type sshKeyEnvelope struct {
	SSHKey *SSHKey `json:"ssh_key"`
}
