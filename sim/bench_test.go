package sim_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	neturl "net/url"
	"runtime"
	"strconv"
	"testing"

	"github.com/gpufleet/gpufleet/sim"
)

// Benchmarks of the fakes: API calls per second through the in-memory client
// and over loopback HTTP (httptest.Server, keep-alive), and the memory of
// 10,000 live servers. The fakes are set up so that every call succeeds:
// unlimited stock, limits, balance and rate, no minimum reservation, no
// blocking delete, Vultr servers active and unlocked at once. Run:
//
//	go test -run '^$' -bench SimAPI -benchtime 2000x ./sim/
//	go test -run '^$' -bench SimLiveResources -benchtime 10000x ./sim/

// benchFake is one fake and how to create, get and delete a server on it.
type benchFake struct {
	name    string
	handler http.Handler
	client  *http.Client // in memory
	base    string       // the base URL the in-memory client uses
	create  func(b *testing.B, c *http.Client, base string) string
	path    func(id string) string // GET/DELETE path of a server
	deleted int                    // DELETE's success status
	reset   func()                 // empties the call log
}

func benchHotAisle() benchFake {
	row := sim.DefaultHotAisleVMTypes()[0]
	row.Quantity, row.MinimumReservationMinutes = 1<<40, 0
	h := sim.NewHotAisle(sim.WithHotAisleCatalog([]sim.HotAisleVMType{row}, nil),
		sim.WithHotAisleLimits(1<<30, 0), sim.WithHotAisleBalance(1<<60), sim.WithHotAisleDeleteDelay(0))
	vms := "/api/teams/" + sim.DefaultTeam + "/virtual_machines/"
	return benchFake{name: "hotaisle", handler: h, client: h.Client(), base: "https://admin.hotaisle.app",
		create: func(b *testing.B, c *http.Client, base string) string {
			var vm struct{ Name string }
			benchCall(b, c, "POST", base+vms, `{"gpus":[{"count":1,"model":"MI300X"}]}`,
				"Token "+sim.DefaultAPIKey, 200, &vm)
			return vm.Name
		},
		path:    func(id string) string { return vms + id + "/" },
		deleted: 204, reset: h.ResetCalls,
	}
}

func benchVultr() benchFake {
	v := sim.NewVultr(sim.WithVultrRateLimit(0, 0), sim.WithVultrTiming("*", sim.VultrTiming{}))
	return benchFake{name: "vultr", handler: v, client: v.Client(), base: "https://api.vultr.com",
		create: func(b *testing.B, c *http.Client, base string) string {
			var out struct{ Instance struct{ ID string } }
			benchCall(b, c, "POST", base+"/v2/instances",
				`{"region":"ewr","plan":"vc2-1c-1gb","os_id":2284,"label":"bench"}`,
				"Bearer "+sim.DefaultAPIKey, 202, &out)
			return out.Instance.ID
		},
		path:    func(id string) string { return "/v2/instances/" + id },
		deleted: 204, reset: v.ResetCalls,
	}
}

// benchCall sends one request and fails the benchmark unless want answers.
func benchCall(b *testing.B, c *http.Client, method, url, body, auth string, want int, v any) {
	req, err := http.NewRequest(method, url, bytes.NewReader([]byte(body)))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Authorization", auth)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != want {
		b.Fatalf("%s %s: %d %s (%v)", method, url, resp.StatusCode, data, err)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			b.Fatal(err)
		}
	}
}

var benchFakes = []struct {
	name string
	mk   func() benchFake
}{{"hotaisle", benchHotAisle}, {"vultr", benchVultr}}

func BenchmarkSimAPI(b *testing.B) {
	for _, fake := range benchFakes {
		for _, transport := range []string{"memory", "loopback"} {
			for _, op := range []string{"create", "get", "delete"} {
				b.Run(fake.name+"/"+transport+"/"+op, func(b *testing.B) { benchOp(b, fake.mk(), transport, op) })
			}
		}
	}
}

func benchOp(b *testing.B, f benchFake, transport, op string) {
	c, base := f.client, f.base
	if transport == "loopback" {
		srv := httptest.NewServer(f.handler)
		defer srv.Close()
		c, base = srv.Client(), srv.URL
	}
	auth := "Token " + sim.DefaultAPIKey
	if f.name == "vultr" {
		auth = "Bearer " + sim.DefaultAPIKey
	}
	var ids []string
	switch op {
	case "get":
		ids = []string{f.create(b, c, base)}
	case "delete":
		for range b.N {
			ids = append(ids, f.create(b, c, base))
		}
	}
	f.reset()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		switch op {
		case "create":
			f.create(b, c, base)
		case "get":
			benchCall(b, c, "GET", base+f.path(ids[0]), "", auth, 200, nil)
		case "delete":
			benchCall(b, c, "DELETE", base+f.path(ids[i]), "", auth, f.deleted, nil)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkSimLiveResources measures the heap held per live server (state,
// SSH host registration, ledger entry; the call log emptied): each iteration
// adds one server, so run it with -benchtime 10000x for 10,000 live servers.
func BenchmarkSimLiveResources(b *testing.B) {
	for _, fake := range benchFakes {
		b.Run(fake.name, func(b *testing.B) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			f := fake.mk()
			b.ResetTimer()
			for range b.N {
				f.create(b, f.client, f.base)
			}
			b.StopTimer()
			f.reset()
			runtime.GC()
			runtime.ReadMemStats(&after)
			runtime.KeepAlive(f)
			b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "bytes/resource")
		})
	}
}

// BenchmarkSimVultrListPage reads one page of 100 instances from the middle
// of lists of 1,000 and 10,000 live servers, unfiltered and filtered by
// tag: a page costs the same whatever the list's length. Run:
//
//	go test -run '^$' -bench SimVultrListPage -benchmem ./sim/
func BenchmarkSimVultrListPage(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		v := sim.NewVultr(sim.WithVultrRateLimit(0, 0))
		for i := range n {
			if _, err := v.SeedServer(sim.VultrSeed{Plan: "vc2-1c-1gb", Region: "ewr",
				Tags: []string{"fleet", fmt.Sprintf("shard-%d", i%2)}}); err != nil {
				b.Fatal(err)
			}
		}
		c := v.Client()
		for _, filter := range []string{"", "&tag=fleet"} {
			name := fmt.Sprintf("servers=%d", n)
			if filter != "" {
				name += "/tag"
			}
			var first struct {
				Meta struct{ Links struct{ Next string } }
			}
			benchCall(b, c, "GET", "https://api.vultr.com/v2/instances?per_page="+strconv.Itoa(n/2)+filter, "",
				"Bearer "+sim.DefaultAPIKey, 200, &first)
			url := "https://api.vultr.com/v2/instances?per_page=100" + filter + "&cursor=" +
				neturl.QueryEscape(first.Meta.Links.Next)
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					benchCall(b, c, "GET", url, "", "Bearer "+sim.DefaultAPIKey, 200, nil)
				}
				v.ResetCalls()
			})
		}
	}
}
