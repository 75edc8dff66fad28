package sim

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
)

// BenchmarkVultrVsCanned compares the Vultr fake with a canned-response
// handler through the same in-memory transport: the canned handler answers
// the bytes the fake answered to the same request, so the difference is the
// fake's own work (routing, auth, faults, state, JSON). Run:
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
		for _, h := range []struct {
			name string
			c    *http.Client
		}{
			{"canned", &http.Client{Transport: &memTransport{h: canned}}},
			{"fake", v.Client()},
		} {
			b.Run(op.name+"/"+h.name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					benchRoundTrip(b, h.c, op.method, url, op.body)
				}
				v.ResetCalls()
			})
		}
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
