package sim

import (
	"bytes"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// BenchmarkVultrVsCanned compares the Vultr fake with a canned-response
// handler through the same in-memory transport: the canned handler answers
// the bytes the fake answered to the same request, so the difference is the
// fake's own work (routing, auth, faults, state, JSON). The fake is reset
// (outside the timing) every 1,000 creates, so that the figure is the cost
// of a call at a steady state of at most 1,000 live servers rather than
// that of a heap growing with every iteration. Run:
//
//	go test -run '^$' -bench VultrVsCanned -benchmem ./sim/
func BenchmarkVultrVsCanned(b *testing.B) {
	const create = `{"region":"ewr","plan":"vc2-1c-1gb","os_id":2284,"label":"bench"}`
	for _, op := range []struct{ name, method, body string }{
		{"get", http.MethodGet, ""},
		{"post", http.MethodPost, create},
	} {
		v := NewVultr(WithVultrRateLimit(0, 0), WithVultrTiming("*", VultrTiming{}))
		id := benchVultrCreate(b, v.Client())
		url := "https://api.vultr.com/v2/instances"
		if op.method == http.MethodGet {
			url += "/" + id
		}
		status, hdr, body := benchRoundTrip(b, v.Client(), op.method, url, op.body)
		canned := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			for k, vs := range hdr {
				w.Header()[k] = vs
			}
			w.WriteHeader(status)
			_, _ = w.Write(body)
		})
		canC, fakeC := core.MemClient(canned), v.Client()
		for _, h := range []struct {
			name string
			c    *http.Client
		}{{"canned", canC}, {"fake", fakeC}} {
			b.Run(op.name+"/"+h.name, func(b *testing.B) {
				b.ReportAllocs()
				for i := 0; b.Loop(); i++ {
					if i%1000 == 999 && op.method == http.MethodPost {
						b.StopTimer()
						v.Reset()
						b.StartTimer()
					}
					benchRoundTrip(b, h.c, op.method, url, op.body)
				}
				v.ResetCalls()
			})
		}
		// Blocks: 500 canned calls, then 500 fake calls, each block timed and
		// followed by an untimed garbage collection (so that no block pays
		// for another's garbage), alternating until b.N calls of each; the
		// load of a shared machine weighs on both alike. x-canned is the
		// fake's rate as a fraction of the canned rate.
		b.Run(op.name+"/blocks", func(b *testing.B) {
			const block = 500
			var canNs, fakeNs time.Duration
			timed := func(c *http.Client, n int) time.Duration {
				runtime.GC()
				t0 := time.Now()
				for range n {
					benchRoundTrip(b, c, op.method, url, op.body)
				}
				return time.Since(t0)
			}
			for done := 0; done < b.N; done += block {
				n := min(block, b.N-done)
				if op.method == http.MethodPost && done%1000 == 0 {
					v.Reset()
				}
				canNs += timed(canC, n)
				fakeNs += timed(fakeC, n)
			}
			v.ResetCalls()
			b.ReportMetric(float64(canNs)/float64(b.N), "canned-ns/call")
			b.ReportMetric(float64(fakeNs)/float64(b.N), "fake-ns/call")
			b.ReportMetric(float64(canNs)/float64(fakeNs), "x-canned")
		})
	}
}

func benchVultrCreate(b *testing.B, c *http.Client) string {
	_, _, body := benchRoundTrip(b, c, http.MethodPost, "https://api.vultr.com/v2/instances",
		`{"region":"ewr","plan":"vc2-1c-1gb","os_id":2284,"label":"bench"}`)
	_, rest, _ := strings.Cut(string(body), `"id":"`)
	id, _, _ := strings.Cut(rest, `"`)
	return id
}

// benchRoundTrip sends one request the way a client does and reads the
// whole answer.
func benchRoundTrip(b *testing.B, c *http.Client, method, url, body string) (int, http.Header, []byte) {
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+DefaultAPIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode >= 300 {
		b.Fatalf("%s %s: %d %s (%v)", method, url, resp.StatusCode, data, err)
	}
	return resp.StatusCode, resp.Header, data
}
