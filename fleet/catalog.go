package fleet

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"
)

// DefaultCatalogTTL is how long a provider's offers are reused (5 minutes).
const DefaultCatalogTTL = 5 * time.Minute

// catalogFetchTimeout bounds one provider's offer fetch, which is shared by
// every caller waiting on it.
const catalogFetchTimeout = 2 * time.Minute

// ProviderError is the failure of one provider while others answered.
type ProviderError struct {
	Provider string
	Err      error
}

func (e *ProviderError) Error() string { return e.Provider + ": " + e.Err.Error() }
func (e *ProviderError) Unwrap() error { return e.Err }

// Catalog fetches the offers of several providers concurrently, caches each
// provider's list for a TTL, and collapses concurrent fetches of one provider
// into a single call. Safe for concurrent use.
type Catalog struct {
	providers []Provider
	ttl       time.Duration

	mu    sync.Mutex
	cache map[string]cachedOffers
	sf    singleflight.Group
}

type cachedOffers struct {
	offers  []Offer
	fetched time.Time
}

// NewCatalog returns a catalog over providers; ttl <= 0 means DefaultCatalogTTL.
func NewCatalog(providers []Provider, ttl time.Duration) *Catalog {
	if ttl <= 0 {
		ttl = DefaultCatalogTTL
	}
	return &Catalog{providers: providers, ttl: ttl, cache: map[string]cachedOffers{}}
}

// Offers returns the offers of every provider that matches r, cheapest first.
// A provider that fails does not hide the others: its failure comes back as a
// *ProviderError inside the returned error (errors.Join), beside the offers
// of the providers that answered. ctx bounds the wait.
func (c *Catalog) Offers(ctx context.Context, r Requirements) ([]Offer, error) {
	results := make([][]Offer, len(c.providers))
	errs := make([]error, len(c.providers))
	var g errgroup.Group
	for i, p := range c.providers {
		if len(r.Providers) > 0 && !contains(r.Providers, p.Name()) {
			continue
		}
		g.Go(func() error {
			offers, err := c.providerOffers(ctx, p)
			if err != nil {
				errs[i] = &ProviderError{Provider: p.Name(), Err: err}
			}
			results[i] = offers
			return nil
		})
	}
	_ = g.Wait()
	var all []Offer
	for _, offers := range results {
		all = append(all, offers...)
	}
	return Filter(all, r), errors.Join(errs...)
}

// Invalidate drops the cached offers so the next call fetches anew.
func (c *Catalog) Invalidate() {
	c.mu.Lock()
	c.cache = map[string]cachedOffers{}
	c.mu.Unlock()
}

func (c *Catalog) providerOffers(ctx context.Context, p Provider) ([]Offer, error) {
	name := p.Name()
	c.mu.Lock()
	hit, ok := c.cache[name]
	c.mu.Unlock()
	if ok && time.Since(hit.fetched) < c.ttl {
		return hit.offers, nil
	}
	ch := c.sf.DoChan(name, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), catalogFetchTimeout)
		defer cancel()
		offers, err := p.Offers(fctx)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		c.cache[name] = cachedOffers{offers: offers, fetched: time.Now()}
		c.mu.Unlock()
		return offers, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.([]Offer), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("offers of %s: %w", name, ctx.Err())
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
