package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/gpufleet/gpufleet/sim"
)

// AdminPrefix is the path prefix of the admin API, one no real API uses.
const AdminPrefix = "/_sim/"

// fake is what both sim fakes offer the admin API.
type fake interface {
	http.Handler
	Inject(sim.Fault) error
	ClearFaults()
	ArmedFaults() []sim.Fault
	Faults() []sim.FiredFault
	StartChaos(seed uint64, p sim.ChaosProfile) error
	StopChaos()
	Chaos() (uint64, sim.ChaosProfile, bool)
	Routes() []string
	Calls() []sim.Call
	Resources() []sim.Resource
	Ledger() sim.Ledger
	Snapshot() sim.Snapshot
	Reset()
	HaltOutOfBand(id string) error
	ReuseReleasedIPs(on bool)
}

// adminEndpoints is the admin API, listed by GET /_sim/.
var adminEndpoints = []string{
	"GET    /_sim/                        this list",
	"GET    /_sim/snapshot                time, resources, calls and ledger at one moment",
	"GET    /_sim/resources[?kind=&live=] resources (kind: instance, bare_metal, virtual_machine, vpc, ssh_key; live=true: live only)",
	"GET    /_sim/calls                   the call log",
	"GET    /_sim/ledger                  the bill in USD",
	"GET    /_sim/routes                  the route patterns a fault's \"route\" may name",
	"GET    /_sim/faults                  armed faults, faults fired so far, chaos mode",
	"POST   /_sim/faults                  arm a fault (see the README) -> 201",
	"DELETE /_sim/faults                  disarm every fault -> 204",
	"POST   /_sim/chaos                   {\"profile\": \"bad-day\", \"seed\": 7}: chaos mode on -> 201",
	"DELETE /_sim/chaos                   chaos mode off -> 204",
	"POST   /_sim/servers/{id}/halt       power a server off out of band -> 204 (404: no such server)",
	"POST   /_sim/servers/{id}/destroy    delete it out of band; Vultr: {\"answer\": \"not-found\" | \"invalid-id\"} -> 204",
	"POST   /_sim/servers/{id}/relabel    Vultr {\"label\", \"tags\"}, Hot Aisle {\"description\"} out of band -> 204",
	"POST   /_sim/ip-reuse                {\"on\": true}: new servers take released addresses -> 204",
	"POST   /_sim/reset                   back to the start state -> 204",
}

// withAdmin serves the admin API under AdminPrefix (adminEndpoints) and
// passes every other request to the fake. Admin errors are
// {"error": "<message>"}; the admin API needs no key. Durations are Go
// duration strings ("90s", "20m") in and out; a time that has not come
// (a live resource's "Deleted") is null.
func withAdmin(f fake) http.Handler {
	mux := http.NewServeMux()
	get := func(path string, v func(r *http.Request) (any, error)) {
		mux.HandleFunc("GET "+AdminPrefix+path, func(w http.ResponseWriter, r *http.Request) {
			out, err := v(r)
			if err != nil {
				adminError(w, http.StatusBadRequest, err)
				return
			}
			adminJSON(w, http.StatusOK, out)
		})
	}
	get("{$}", func(*http.Request) (any, error) { return adminEndpoints, nil })
	get("snapshot", func(*http.Request) (any, error) { return f.Snapshot(), nil })
	get("resources", func(r *http.Request) (any, error) { return adminResources(f, r) })
	get("calls", func(*http.Request) (any, error) { return f.Calls(), nil })
	get("ledger", func(*http.Request) (any, error) { return f.Ledger(), nil })
	get("routes", func(*http.Request) (any, error) { return f.Routes(), nil })
	get("faults", func(*http.Request) (any, error) { return adminFaultsOf(f), nil })
	mux.HandleFunc("POST "+AdminPrefix+"faults", func(w http.ResponseWriter, r *http.Request) { armFault(w, r, f) })
	mux.HandleFunc("DELETE "+AdminPrefix+"faults", func(w http.ResponseWriter, r *http.Request) {
		f.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+AdminPrefix+"chaos", func(w http.ResponseWriter, r *http.Request) { startChaos(w, r, f) })
	mux.HandleFunc("DELETE "+AdminPrefix+"chaos", func(w http.ResponseWriter, r *http.Request) {
		f.StopChaos()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+AdminPrefix+"servers/{id}/{op}", func(w http.ResponseWriter, r *http.Request) {
		adminDone(w, serverOp(f, r))
	})
	mux.HandleFunc("POST "+AdminPrefix+"ip-reuse", func(w http.ResponseWriter, r *http.Request) {
		var req struct{ On bool }
		err := adminDecode(r.Body, &req)
		if err == nil {
			f.ReuseReleasedIPs(req.On)
		}
		adminDone(w, err)
	})
	mux.HandleFunc("POST "+AdminPrefix+"reset", func(w http.ResponseWriter, r *http.Request) {
		f.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc(AdminPrefix, func(w http.ResponseWriter, r *http.Request) {
		adminError(w, http.StatusNotFound, fmt.Errorf("no admin endpoint %s %s; GET %s lists them",
			r.Method, r.URL.Path, AdminPrefix))
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, AdminPrefix) {
			mux.ServeHTTP(w, r)
			return
		}
		f.ServeHTTP(w, r)
	})
}

// resourceKinds are the kinds of sim.Resource the fakes report.
var resourceKinds = []string{"instance", "bare_metal", "virtual_machine", "vpc", "ssh_key"}

// adminResources serves GET /_sim/resources?kind=…&live=true; an unknown
// kind is refused (a misspelt kind would list nothing and pass a leak check).
func adminResources(f fake, r *http.Request) (any, error) {
	q := r.URL.Query()
	if k := q.Get("kind"); k != "" && !slices.Contains(resourceKinds, k) {
		return nil, fmt.Errorf("kind=%q: want one of %s", k, strings.Join(resourceKinds, ", "))
	}
	rs := f.Resources()
	switch q.Get("live") {
	case "", "false":
		if k := q.Get("kind"); k != "" {
			var out []sim.Resource
			for _, x := range rs {
				if x.Kind == k {
					out = append(out, x)
				}
			}
			rs = out
		}
	case "true":
		rs = sim.LiveOf(rs, q.Get("kind"))
	default:
		return nil, fmt.Errorf("live=%q: want true or false", q.Get("live"))
	}
	if rs == nil {
		rs = []sim.Resource{}
	}
	return rs, nil
}

// serverOp serves POST /_sim/servers/{id}/{halt,destroy,relabel}.
func serverOp(f fake, r *http.Request) error {
	id := r.PathValue("id")
	switch op := r.PathValue("op"); op {
	case "halt":
		return f.HaltOutOfBand(id)
	case "destroy":
		return destroyOp(f, id, r.Body)
	case "relabel":
		return relabelOp(f, id, r.Body)
	default:
		return fmt.Errorf("no server operation %q: halt, destroy or relabel", op)
	}
}

func destroyOp(f fake, id string, body io.Reader) error {
	var req struct{ Answer string }
	if err := adminDecodeOptional(body, &req); err != nil {
		return err
	}
	switch x := f.(type) {
	case *sim.Vultr:
		switch req.Answer {
		case "", "not-found":
			return x.DestroyOutOfBand(id, sim.VultrGoneNotFound)
		case "invalid-id":
			return x.DestroyOutOfBand(id, sim.VultrGoneInvalidID)
		}
		return fmt.Errorf(`"answer" %q: want "not-found" (404) or "invalid-id" (400 "invalid instance ID")`, req.Answer)
	case *sim.HotAisle:
		if req.Answer != "" && req.Answer != "not-found" {
			return errors.New(`Hot Aisle answers a deleted server with 404 only: "answer" must be "not-found" or absent`)
		}
		return x.DestroyOutOfBand(id)
	}
	return errors.New("this fake cannot destroy servers out of band")
}

func relabelOp(f fake, id string, body io.Reader) error {
	switch x := f.(type) {
	case *sim.Vultr:
		var req struct {
			Label string
			Tags  []string
		}
		if err := adminDecode(body, &req); err != nil {
			return err
		}
		return x.RelabelOutOfBand(id, req.Label, req.Tags)
	case *sim.HotAisle:
		var req struct{ Description string }
		if err := adminDecode(body, &req); err != nil {
			return err
		}
		return x.RelabelOutOfBand(id, req.Description)
	}
	return errors.New("this fake cannot relabel servers out of band")
}

// adminDone answers 204, 404 when err says the server does not exist, or
// 400 with err.
func adminDone(w http.ResponseWriter, err error) {
	if errors.Is(err, sim.ErrNoServer) {
		adminError(w, http.StatusNotFound, err)
		return
	}
	if err != nil {
		adminError(w, http.StatusBadRequest, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func adminError(w http.ResponseWriter, status int, err error) {
	adminJSON(w, status, map[string]string{"error": err.Error()})
}

func adminJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// adminDecode reads a JSON object into v (keys matched case-insensitively,
// unknown keys refused).
func adminDecode(body io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("bad JSON body: %w", err)
	}
	if dec.More() {
		return errors.New("bad JSON body: one JSON object expected, more follows it")
	}
	return nil
}

// adminDecodeOptional is adminDecode, an empty body leaving v as it is.
func adminDecodeOptional(body io.Reader, v any) error {
	data, err := io.ReadAll(io.LimitReader(body, 1<<20))
	if err != nil || strings.TrimSpace(string(data)) == "" {
		return err
	}
	return adminDecode(strings.NewReader(string(data)), v)
}
