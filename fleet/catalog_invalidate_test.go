package fleet

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A provider's catalog invalidated while its offers are being fetched (the
// Manager does so when a node it released for a waiting fleet is confirmed
// gone, see yieldGone): the fetch under way may have been answered before
// the stock came back, so its answer is not cached, and the next call
// starts a fetch of its own instead of joining it.
func TestCatalogInvalidateDropsTheFetchUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("x", Offer{Provider: "x", Region: "r", InstanceType: "t", PricePerHour: 1})
		p.offersDelay = 10 * time.Second
		c := newCatalog([]Provider{p}, time.Hour, time.Now)
		defer c.Close()
		r := Requirements{Providers: []string{"x"}}
		first := make(chan struct{})
		go func() {
			defer close(first)
			_, err := c.Offers(context.Background(), r)
			assert.NoError(t, err)
		}()
		synctest.Wait()
		c.invalidate("x")
		time.Sleep(5 * time.Second)
		second := make(chan struct{})
		go func() {
			defer close(second)
			_, err := c.Offers(context.Background(), r)
			assert.NoError(t, err)
		}()
		<-first
		synctest.Wait()
		_, fresh := c.peek(r)
		assert.False(t, fresh, "the fetch started before the invalidation was cached")
		<-second
		_, fresh = c.peek(r)
		assert.True(t, fresh, "the fetch started after the invalidation was not cached")
		require.Equal(t, 2, p.count("offers"), "the call after the invalidation joined the fetch started before it")
	})
}
