package vultr

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Decoding the largest lists the API returns (500 items, the per_page
// maximum): plans and instances, alone and through the whole client path.

func bigPage(key, obj string, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{%q:[`, key)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.Replace(obj, `"id":"`, fmt.Sprintf(`"id":"%d-`, i), 1))
	}
	fmt.Fprintf(&b, `],"meta":{"total":%d,"links":{"next":"","prev":""}}}`, n)
	return b.Bytes()
}

const benchPlan = `{"id":"vcg-a100-3c-30g-20vram","vcpu_count":3,"ram":30720,"disk":700,"disk_count":1,"bandwidth":6144,
  "monthly_cost":437.5,"hourly_cost":0.599,"type":"vcg","gpu_vram_gb":20,"gpu_type":"NVIDIA_A100","locations":["ewr","ord","sjc","ams"]}`

var (
	plans500     = bigPage("plans", benchPlan, 500)
	instances500 = bigPage("instances", fixtureActiveInstanceObj, 500)
)

func BenchmarkDecodePlans500(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(plans500)))
	for b.Loop() {
		var p plansPage
		if err := json.Unmarshal(plans500, &p); err != nil {
			b.Fatal(err)
		}
		if items, err := p.items(); err != nil || len(items) != 500 {
			b.Fatal(err, len(items))
		}
	}
}

func BenchmarkDecodeInstances500(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(instances500)))
	for b.Loop() {
		var p instancesPage
		if err := json.Unmarshal(instances500, &p); err != nil {
			b.Fatal(err)
		}
		if items, err := p.items(); err != nil || len(items) != 500 {
			b.Fatal(err, len(items))
		}
	}
}

type staticRT []byte

func (s staticRT) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(s))}, nil
}

func benchList[T any](b *testing.B, body []byte, list func(*Client) func(func(T, error) bool)) {
	c := New(testKey, WithHTTPClient(&http.Client{Transport: staticRT(body)}), WithRateLimit(0, 0))
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		n := 0
		for _, err := range list(c) {
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != 500 {
			b.Fatal(n)
		}
	}
}

func BenchmarkListPlans500(b *testing.B) {
	benchList(b, plans500, func(c *Client) func(func(Plan, error) bool) { return c.ListPlans(b.Context(), nil) })
}

func BenchmarkListInstances500(b *testing.B) {
	benchList(b, instances500, func(c *Client) func(func(Instance, error) bool) {
		return c.ListInstances(b.Context(), nil)
	})
}
