package fleet_test

import (
	"context"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/require"
)

// stormStats is what a storm test measured: calls in a window, 429s,
// peak goroutines, and the ledger's billed time per resource.
type stormStats struct {
	calls, refused429, peakG int
	billed                   []time.Duration
	usd                      float64
}

// runningStormEnv starts e.m.Run and samples goroutines every 10 s; stop
// cancels Run and returns the peak.
func runningStormEnv(t *testing.T, e *env) (stop func() int) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- e.m.Run(ctx) }()
	peak := 0
	sampDone := make(chan struct{})
	go func() {
		defer close(sampDone)
		for ctx.Err() == nil {
			peak = max(peak, runtime.NumGoroutine())
			select {
			case <-ctx.Done():
			case <-time.After(10 * time.Second):
			}
		}
	}()
	return func() int {
		cancel()
		<-done
		<-sampDone
		return peak
	}
}

// waitStormIdle waits (under Run) until fleet name has n idle nodes.
func waitStormIdle(t *testing.T, e *env, name string, n int) []fleet.Instance {
	for deadline := time.Now().Add(3 * time.Hour); ; time.Sleep(10 * time.Second) {
		a := activeOf(e.m.Instances(name))
		ok := len(a) == n
		for _, i := range a {
			ok = ok && i.Status == fleet.StatusIdle
		}
		if ok {
			return a
		}
		if !time.Now().Before(deadline) {
			for _, i := range e.m.Instances(name) {
				t.Logf("%s %s %s", i.ID, i.Status, i.LastError)
			}
		}
		require.True(t, time.Now().Before(deadline), "fleet %s not idle", name)
	}
}

func windowCalls(log []sim.Call, from, to time.Time) (n, r429 int) {
	for _, c := range log {
		if !c.Time.Before(from) && c.Time.Before(to) {
			n++
		}
		if c.Status == http.StatusTooManyRequests {
			r429++
		}
	}
	return n, r429
}

func ledgerOf(cs []sim.Charge) (billed []time.Duration, usd float64) {
	for _, c := range servers(cs) {
		billed = append(billed, c.Billed)
		usd += c.USD
	}
	return billed, usd
}
