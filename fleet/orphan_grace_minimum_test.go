package fleet

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An orphan whose start is known (the listing gives it) and whose
// per-minute minimum (30 min) ends inside its OrphanGrace (found at 22:00,
// grace 10 min): released, forced, at the minimum's last safe moment
// (29:00, the minimum's end less MinuteReleaseMargin), not at 32:00 when
// every minute after 30:00 is billed on top of the minimum.
func TestOrphanGraceEndsAtTheMinimumsLastSafeMoment(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("hotaisle", vmOffer("hotaisle", 3, 30*time.Minute))
		start := time.Now()
		_, err := p.Create(context.Background(), CreateRequest{Offer: p.offers[0], Label: Label{Owner: "t1", Fleet: "gone", RequestID: "0123456789ab"}})
		require.NoError(t, err)
		time.Sleep(22 * time.Minute)
		m, log := newTestManager(t, Config{Providers: []Provider{p}})
		passes(t, m, time.Minute)
		require.Equal(t, 1, log.count(EventOrphanFound))
		passes(t, m, time.Until(start.Add(28*time.Minute)))
		assert.Equal(t, 1, p.live(), "kept until the minimum's last safe moment")
		passes(t, m, time.Until(start.Add(29*time.Minute+20*time.Second)))
		assert.Zero(t, p.live(), "released by 29:20, inside the minimum")
		assert.Equal(t, []bool{true}, p.forced, "forced inside the minimum")
	})
}
