package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// interrupter is the run's output; it cancels the run (Ctrl+C) once n
// lines holding all of marks were written.
type interrupter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marks  []string
	n      int
	cancel context.CancelFunc
}

func (w *interrupter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range strings.Split(string(p), "\n") {
		if all(line, w.marks) {
			if w.n--; w.n == 0 {
				w.cancel()
			}
		}
	}
	return w.buf.Write(p)
}

func all(s string, subs []string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// The Hot Aisle VMs' releases wait for the end of their 30-minute minimum
// (ReleaseDeferred) when the run is interrupted: the teardown forces both
// (ReleaseNow), so the minimum's unused minutes are charged, not refunded.
// The report counts them as forced early, with the USD the ledger shows
// unrefunded, and not among the releases held for a reservation window.
func TestReportCountsForcedReleasesAsForcedNotHeld(t *testing.T) {
	w := &interrupter{marks: []string{"ReleaseDeferred", "hotaisle"}, n: 2}
	var rep *report
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		w.cancel = cancel
		cfg, err := parseFlags([]string{"-plain", "-nodes", "0"}, io.Discard)
		require.NoError(t, err)
		rep, err = quickstart(ctx, cfg, noEnv, w)
		require.NoError(t, err)
	})
	out := w.buf.String()
	require.NotNil(t, rep)
	require.Contains(t, out, "Tearing down (interrupted)")
	assert.Empty(t, rep.leaked)
	assert.Zero(t, rep.deferred[fleet.ProviderHotAisle], "no release held to the window's end")
	require.Equal(t, 2, rep.forced[fleet.ProviderHotAisle].count, "both releases forced")
	var unrefunded micros
	for _, c := range rep.charges {
		unrefunded += toMicros(c.unrefunded)
	}
	require.Positive(t, unrefunded)
	assert.Equal(t, unrefunded.usd(), rep.forced[fleet.ProviderHotAisle].usd, "the ledger's unrefunded minimum")
	assert.Contains(t, out, "\nreleases forced early (the unused minimum charged, not refunded): hotaisle 2 ($"+unrefunded.String()+")\n")
	assert.NotContains(t, out, "releases held for a reservation window")
	t.Logf("forced: %+v; report tail:\n%s", rep.forced, out[max(0, strings.Index(out, "=== report ===")):])
}

// Without a ledger (the real clouds), a forced release's unused minimum is
// what its ReleaseForced said; a release held and then forced is forced,
// not held; one held and carried out is held.
func TestReleasesOfSplitsHeldAndForced(t *testing.T) {
	h, v := fleet.ProviderHotAisle, fleet.ProviderVultr
	events := []fleet.Event{
		{Type: fleet.EventReleaseDeferred, Provider: h, InstanceID: "a"},
		{Type: fleet.EventReleaseDeferred, Provider: h, InstanceID: "b"},
		{Type: fleet.EventReleaseForced, Provider: h, InstanceID: "b", USD: 0.9},
		{Type: fleet.EventReleaseForced, Provider: h, InstanceID: "c", USD: 0.91}, // never held
		{Type: fleet.EventReleaseDeferred, Provider: v, InstanceID: "d"},
	}
	held, forced := releasesOf(events, []charge{{provider: h, id: "b", usd: 1.5}}) // estimated: no ledger
	assert.Equal(t, map[string]int{h: 1, v: 1}, held)
	assert.Equal(t, map[string]forcedEarly{h: {count: 2, usd: 1.81}}, forced)
	var out bytes.Buffer
	(&report{deferred: held, forced: forced}).printReleases(&out)
	assert.Equal(t, "releases held for a reservation window (paid anyway): hotaisle 1, vultr 1\n"+
		"releases forced early (the unused minimum charged, not refunded): hotaisle 2 ($1.81)\n", out.String())
}
