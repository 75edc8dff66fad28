package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/sim"
)

// AdminPrefix is the path prefix of the admin API, one no real API uses.
const AdminPrefix = "/_sim/"

// fake is what both sim fakes offer the admin API.
type fake interface {
	http.Handler
	Inject(sim.Fault) error
	ClearFaults()
	Routes() []string
	Calls() []sim.Call
	Resources() []sim.Resource
	Ledger() sim.Ledger
	Snapshot() sim.Snapshot
	Reset()
}

// withAdmin serves the admin API under AdminPrefix and passes every other
// request to the fake:
//
//	GET    /_sim/snapshot   the sim.Snapshot (time, resources, calls, ledger)
//	GET    /_sim/resources  live and deleted resources
//	GET    /_sim/calls      the call log
//	GET    /_sim/ledger     the bill in USD
//	GET    /_sim/routes     the route patterns a fault may name
//	POST   /_sim/faults     arm a fault (body: adminFault) → 201
//	DELETE /_sim/faults     disarm every fault → 204
//	POST   /_sim/reset      back to the start state → 204
//
// Admin errors are {"error": "<message>"}; the admin API needs no key.
func withAdmin(f fake) http.Handler {
	mux := http.NewServeMux()
	get := func(path string, v func() any) {
		mux.HandleFunc("GET "+AdminPrefix+path, func(w http.ResponseWriter, r *http.Request) {
			adminJSON(w, http.StatusOK, v())
		})
	}
	get("snapshot", func() any { return f.Snapshot() })
	get("resources", func() any { return f.Resources() })
	get("calls", func() any { return f.Calls() })
	get("ledger", func() any { return f.Ledger() })
	get("routes", func() any { return f.Routes() })
	mux.HandleFunc("POST "+AdminPrefix+"faults", func(w http.ResponseWriter, r *http.Request) {
		af, err := decodeFault(r.Body)
		if err == nil {
			err = f.Inject(af.fault())
		}
		if err != nil {
			adminJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
			return
		}
		adminJSON(w, http.StatusCreated, af)
	})
	mux.HandleFunc("DELETE "+AdminPrefix+"faults", func(w http.ResponseWriter, r *http.Request) {
		f.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+AdminPrefix+"reset", func(w http.ResponseWriter, r *http.Request) {
		f.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc(AdminPrefix, func(w http.ResponseWriter, r *http.Request) {
		adminJSON(w, http.StatusNotFound, map[string]string{"error": "no admin endpoint " + r.Method + " " + r.URL.Path})
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, AdminPrefix) {
			mux.ServeHTTP(w, r)
			return
		}
		f.ServeHTTP(w, r)
	})
}

func adminJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// adminFault is the JSON of POST /_sim/faults: the fields of sim.Fault
// (keys matched case-insensitively: "route", "times", "status", "message",
// "aftercommit", "reset", "retryafter", "duration"); the durations are Go
// duration strings ("20m", "1s") or numbers of seconds.
type adminFault struct {
	Route       string
	Times       int
	Status      int
	Message     string
	AfterCommit bool
	Reset       bool
	RetryAfter  adminDuration
	Duration    adminDuration
}

// adminDuration decodes "20m" or a number of seconds.
type adminDuration time.Duration

// MarshalJSON writes the duration as a Go duration string ("20m0s").
func (d adminDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *adminDuration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = adminDuration(v)
		return nil
	}
	secs, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("duration %s: want a string like \"20m\" or a number of seconds", b)
	}
	*d = adminDuration(secs * float64(time.Second))
	return nil
}

func decodeFault(body io.Reader) (adminFault, error) {
	var af adminFault
	dec := json.NewDecoder(io.LimitReader(body, 1<<20))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&af); err != nil {
		return af, fmt.Errorf("bad fault JSON: %w", err)
	}
	if af.Route == "" {
		return af, errors.New(`bad fault: "route" is required (see GET /_sim/routes, or "*" for every route)`)
	}
	return af, nil
}

func (af adminFault) fault() sim.Fault {
	return sim.Fault{Route: af.Route, Times: af.Times, Status: af.Status, Message: af.Message,
		AfterCommit: af.AfterCommit, Reset: af.Reset, RetryAfter: time.Duration(af.RetryAfter),
		Duration: time.Duration(af.Duration)}
}
