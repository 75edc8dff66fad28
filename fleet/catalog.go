package fleet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
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

func (e *ProviderError) Error() string {
	msg := e.Err.Error()
	if strings.HasPrefix(msg, e.Provider+":") { // the client already names itself
		return msg
	}
	return e.Provider + ": " + msg
}
func (e *ProviderError) Unwrap() error { return e.Err }

// Catalog fetches the offers of several providers concurrently, caches each
// provider's list for a TTL, and collapses concurrent fetches of one provider
// into a single call (a hand-rolled singleflight, so that Close can wait for
// the fetch). Safe for concurrent use.
type Catalog struct {
	providers []Provider
	ttl       time.Duration

	mu       sync.Mutex
	cache    map[string]cachedOffers
	inflight map[string]*fetch
	gen      map[string]int // provider → its invalidations (a fetch started before one is not cached)
	wg       sync.WaitGroup // fetches under way
	base     context.Context
	stop     context.CancelFunc
	now      func() time.Time
}

type cachedOffers struct {
	offers  []Offer
	fetched time.Time
}

// NewCatalog returns a catalog over providers; ttl <= 0 means
// DefaultCatalogTTL, measured on the process clock.
func NewCatalog(providers []Provider, ttl time.Duration) *Catalog {
	return newCatalog(providers, ttl, time.Now)
}

// newCatalog is NewCatalog on a given clock (the Manager's Config.Clock).
func newCatalog(providers []Provider, ttl time.Duration, now func() time.Time) *Catalog {
	if ttl <= 0 {
		ttl = DefaultCatalogTTL
	}
	base, stop := context.WithCancel(context.Background())
	return &Catalog{providers: providers, ttl: ttl, cache: map[string]cachedOffers{}, inflight: map[string]*fetch{},
		gen: map[string]int{}, base: base, stop: stop, now: now}
}

// Close cancels the fetches under way and waits for them to end. Offers
// still works after Close, without reusing fetches.
func (c *Catalog) Close() {
	c.stop()
	c.wg.Wait()
}

// Offers returns the offers of every provider that matches r, cheapest first.
// A provider that fails does not hide the others: its failure comes back as a
// *ProviderError inside the returned error (errors.Join), beside the offers
// of the providers that answered. ctx bounds the wait. Requirements that
// Validate refuses (a negative or NaN size or price) answer an error that
// errors.Is ErrInvalidSpec, and no offers.
func (c *Catalog) Offers(ctx context.Context, r Requirements) ([]Offer, error) {
	if err := r.Validate(); err != nil {
		return nil, invalidSpec(err)
	}
	results := make([][]Offer, len(c.providers))
	errs := make([]error, len(c.providers))
	var g errgroup.Group
	for i, p := range c.providers {
		if len(r.Providers) > 0 && !containsFold(r.Providers, p.Name()) {
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

// peek returns the cached offers matching r (stale ones included) without
// any call; fresh is false when a provider r may use has no fresh entry.
func (c *Catalog) peek(r Requirements) (offers []Offer, fresh bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var all []Offer
	fresh = true
	for _, p := range c.providers {
		if len(r.Providers) > 0 && !containsFold(r.Providers, p.Name()) {
			continue
		}
		hit, ok := c.cache[p.Name()]
		if !ok || c.now().Sub(hit.fetched) >= c.ttl {
			fresh = false
		}
		all = append(all, hit.offers...)
	}
	return Filter(all, r), fresh
}

// mayOffer reports whether provider's cached catalog (of any age) has an
// offer matching r, sold out or not; true when it has none cached yet.
func (c *Catalog) mayOffer(provider string, r Requirements) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	hit, ok := c.cache[provider]
	if !ok {
		return true
	}
	r.Providers, r.IncludeSoldOut = []string{provider}, true
	return len(Filter(hit.offers, r)) > 0
}

// Invalidate drops the cached offers so the next call fetches anew.
func (c *Catalog) Invalidate() {
	c.mu.Lock()
	c.cache = map[string]cachedOffers{}
	c.mu.Unlock()
}

// invalidate drops provider's cached offers, and its fetch under way (which
// may have been answered before what made them stale): the next call
// fetches anew, and the fetch under way is not cached.
func (c *Catalog) invalidate(provider string) {
	c.mu.Lock()
	delete(c.cache, provider)
	delete(c.inflight, provider)
	c.gen[provider]++
	c.mu.Unlock()
}

func (c *Catalog) providerOffers(ctx context.Context, p Provider) ([]Offer, error) {
	name := p.Name()
	c.mu.Lock()
	if hit, ok := c.cache[name]; ok && c.now().Sub(hit.fetched) < c.ttl {
		c.mu.Unlock()
		return hit.offers, nil
	}
	f, ok := c.inflight[name]
	if !ok { // the first caller starts the one fetch; later callers wait for it
		f = &fetch{done: make(chan struct{}), gen: c.gen[name]}
		c.inflight[name] = f
		c.wg.Add(1)
		go c.fetch(p, f)
	}
	c.mu.Unlock()
	select {
	case <-f.done:
		return f.offers, f.err
	case <-ctx.Done():
		return nil, fmt.Errorf("offers of %s: %w", name, ctx.Err())
	}
}

// fetch runs one provider's offer fetch, shared by every caller waiting on
// f, bounded by the catalog (Close) and catalogFetchTimeout, not by a caller.
func (c *Catalog) fetch(p Provider, f *fetch) {
	defer c.wg.Done()
	ctx, cancel := context.WithTimeout(c.base, catalogFetchTimeout)
	defer cancel()
	offers, err := p.Offers(ctx)
	c.mu.Lock()
	if err == nil && f.gen == c.gen[p.Name()] {
		c.cache[p.Name()] = cachedOffers{offers: offers, fetched: c.now()}
	}
	if c.inflight[p.Name()] == f {
		delete(c.inflight, p.Name())
	}
	c.mu.Unlock()
	f.offers, f.err = offers, err
	close(f.done)
}

// fetch is one offer fetch under way.
type fetch struct {
	done   chan struct{}
	gen    int // the provider's invalidations when it started
	offers []Offer
	err    error
}

func containsFold(list []string, s string) bool {
	for _, v := range list {
		if strings.EqualFold(v, s) {
			return true
		}
	}
	return false
}
