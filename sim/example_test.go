package sim_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/sim"
)

// A consumer's test with a fault: the create answers 500 although it
// created the server (Vultr does this), and the code under test must find
// the server by its label instead of creating a second one, then delete it
// through the refusals of a fresh server. The test asserts what matters to
// whoever pays: nothing left live in the fake, and the bill in its ledger.
// Any HTTP client works; a Go program would use package vultr, whose
// client takes the fake's Client as its HTTP client.
func Example() {
	// A clock 6000 times faster than the wall: the 90 s of "pending" and
	// the lock after boot pass in milliseconds. In a testing/synctest
	// bubble the default clock needs no speed-up at all.
	fake := sim.NewVultr(sim.WithClock(sim.ScaledClock(6000)))
	err := fake.Inject(sim.Fault{Route: "POST /v2/instances", Times: 1, Status: 500, AfterCommit: true})
	if err != nil {
		log.Fatal(err)
	}
	c := fake.Client() // calls the fake in memory
	call := func(method, path, body string) (int, string) {
		req, err := http.NewRequest(method, "https://api.vultr.com/v2"+path, strings.NewReader(body))
		if err != nil {
			log.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+sim.DefaultAPIKey)
		resp, err := c.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			log.Fatal(err)
		}
		return resp.StatusCode, string(b)
	}

	// The code under test, in short.
	status, _ := call("POST", "/instances", `{"region":"ewr","plan":"vc2-1c-1gb","os_id":1743,"label":"batch-1"}`)
	fmt.Println("create answered", status)
	_, body := call("GET", "/instances?label=batch-1", "")
	var list struct {
		Instances []struct{ ID string } `json:"instances"`
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		log.Fatal(err)
	}
	fmt.Println("found by label:", len(list.Instances))
	refusals := 0
	for id := list.Instances[0].ID; ; refusals++ {
		status, _ := call("DELETE", "/instances/"+id, "")
		if status == http.StatusNoContent {
			break
		}
		time.Sleep(5 * time.Millisecond) // "not currently active", then "locked": retry
	}
	fmt.Println("delete refused at first:", refusals > 0)

	// The test's assertions: nothing live, one hour billed.
	live := 0
	for _, r := range fake.Resources() {
		if r.Live() {
			live++
		}
	}
	fmt.Printf("live: %d, billed: %s, $%.3f\n", live, fake.Ledger().Charges[0].Billed, fake.Ledger().TotalUSD)
	// Output:
	// create answered 500
	// found by label: 1
	// delete refused at first: true
	// live: 0, billed: 1h0m0s, $0.010
}

// An outage of Hot Aisle's API for 20 minutes of cloud time: calls
// alternate between a dropped connection and 503 in the API's own dialect
// until it ends or is cleared.
func ExampleHotAisle_Outage() {
	fake := sim.NewHotAisle()
	get := func(path string) (int, string) {
		req, err := http.NewRequest("GET", "https://admin.hotaisle.app/api"+path, nil)
		if err != nil {
			log.Fatal(err)
		}
		req.Header.Set("Authorization", "Token "+sim.DefaultAPIKey)
		resp, err := fake.Client().Do(req)
		if err != nil {
			return 0, "connection reset"
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			log.Fatal(err)
		}
		return resp.StatusCode, strings.TrimSpace(string(b))
	}
	fake.Outage(20 * time.Minute)
	fmt.Println(get("/user/"))
	fmt.Println(get("/user/"))
	fake.ClearFaults()
	status, _ := get("/user/")
	fmt.Println(status)
	fmt.Println(get("/user")) // every path ends in "/"
	// Output:
	// 0 connection reset
	// 503 "Service Unavailable"
	// 200
	// 404 "Not Found: Resource not found"
}
