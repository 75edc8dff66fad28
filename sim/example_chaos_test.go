package sim_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/gpufleet/gpufleet/sim"
)

// Chaos mode is how a consumer tests an orchestrator against a misbehaving
// cloud without scripting each fault: give the fake a seed and a profile,
// run the orchestrator, then check invariants from the fake's own state
// (LiveResources, Ledger) and read what fired (Faults). A failing seed
// replays exactly. Run it inside a testing/synctest bubble so that slow
// answers and waits cost no wall time; this example turns slow answers off
// instead, since examples cannot run in a bubble.
func ExampleWithChaos() {
	profile := sim.ChaosBadDay()
	profile.Slow = 0
	v := sim.NewVultr(sim.WithChaos(2, profile), sim.WithVultrRateLimit(0, 0))

	// The orchestrator under test: make sure 25 labelled servers exist.
	c := v.Client()
	for i := range 25 {
		ensure(c, fmt.Sprintf("node-%d", i))
	}

	// Invariant: one server per label, whatever the cloud did.
	labels := map[string]int{}
	for _, r := range v.LiveResources(sim.KindInstance) {
		labels[r.Label]++
	}
	fmt.Println("labels:", len(labels), "servers:", len(v.LiveResources(sim.KindInstance)))

	kinds := map[sim.FaultKind]int{}
	for _, f := range v.Faults() {
		kinds[f.Kind]++
	}
	var names []string
	for k, n := range kinds {
		names = append(names, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(names)
	fmt.Println("faults met:", strings.Join(names, " "))
	// Output:
	// labels: 25 servers: 25
	// faults met: lag=1 status=3
}

// ensure creates the server labelled label unless a list finds it; after
// any failure it lists again before creating (a create can fail after it
// took effect).
func ensure(c *http.Client, label string) {
	for range 10 {
		status, body := vultrCall(c, "GET", "/v2/instances?label="+label, "")
		var list struct{ Instances []json.RawMessage }
		if status != http.StatusOK || json.Unmarshal(body, &list) != nil {
			continue // a failed or garbled read: read again
		}
		if len(list.Instances) > 0 {
			return
		}
		status, _ = vultrCall(c, "POST", "/v2/instances",
			`{"region":"ewr","plan":"vc2-1c-1gb","os_id":2284,"label":"`+label+`"}`)
		if status == http.StatusAccepted {
			return
		}
	}
}

// vultrCall sends one request; status 0 means the transport failed.
func vultrCall(c *http.Client, method, path, body string) (int, []byte) {
	req, err := http.NewRequest(method, "https://api.vultr.com"+path, strings.NewReader(body))
	if err != nil {
		return 0, nil
	}
	req.Header.Set("Authorization", "Bearer "+sim.DefaultAPIKey)
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil
	}
	return resp.StatusCode, data
}
