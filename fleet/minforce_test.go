package fleet

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A release the provider refuses because the minimum reservation is not
// over, for an adopted instance whose start it could not know, waits for
// the minimum — but never past the latest it can end (first seen plus the
// minimum, less MinuteReleaseMargin): here first seen an hour ago, so that
// bound has passed and the release is forced at once, not retried unforced
// by backoff: the minimum is charged whole either way.
func TestReleaseRefusedInsideTheMinimumIsForced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("hotaisle", vmOffer("hotaisle", 2.99, 30*time.Minute))
		m, log := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 5*time.Minute)
		insts := m.Instances("f")
		require.Len(t, insts, 1)
		m.mu.Lock()
		r := m.insts[insts[0].RequestID]
		r.CreatedUnknown = true // its start unknown: first seen taken as its start, the window as over
		r.Instance.Created = r.Instance.Created.Add(-time.Hour)
		m.mu.Unlock()
		p.mu.Lock()
		p.deleteErr = []error{fmt.Errorf("400 minimum usage period not met: %w", ErrMinReservation)}
		p.mu.Unlock()
		_, err := m.Release(t.Context(), insts[0].ID)
		require.NoError(t, err)
		passes(t, m, 30*time.Second)
		p.mu.Lock()
		forced := append([]bool(nil), p.forced...)
		gone := p.insts[insts[0].ID].deleted
		p.mu.Unlock()
		assert.Equal(t, []bool{false, true}, forced, "refused unforced, then forced at once")
		assert.True(t, gone, "released")
		assert.Positive(t, log.count(EventReleaseForced))
	})
}
