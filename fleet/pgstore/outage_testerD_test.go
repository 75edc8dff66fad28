package pgstore_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/fleet/storetest"
	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutProxy forwards TCP connections to the database until cut: then it
// closes every connection and stops listening, so that new connections
// are refused (a database briefly unreachable: a restart, a failover),
// until restore listens again on the same address.
type cutProxy struct {
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newCutProxy(t *testing.T, dsn string) (*cutProxy, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{addr: ln.Addr().String(), target: u.Host, conns: map[net.Conn]bool{}}
	p.start(ln)
	t.Cleanup(p.close)
	u.Host = p.addr
	return p, u.String()
}

func (p *cutProxy) start(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go p.serve(ln)
}

func (p *cutProxy) serve(ln net.Listener) {
	defer p.wg.Done()
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		d, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[d] = true, true
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(c, d)
		go p.pipe(d, c)
	}
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}

// cut closes every connection and the listener.
func (p *cutProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// restore listens again on the same address.
func (p *cutProxy) restore(t *testing.T) {
	t.Helper()
	ln, err := net.Listen("tcp", p.addr)
	require.NoError(t, err)
	p.mu.Lock()
	p.start(ln)
	p.mu.Unlock()
}

func (p *cutProxy) close() {
	p.cut()
	p.wg.Wait()
}

// While the database cannot be reached, every Store call fails within its
// timeout with an error answering pgstore.ErrUnreachable, so that an
// orchestrator can tell "the database is down, retry" from "your write
// was stale" or "your lease was taken" (the brief of issue 14's testers:
// "the database briefly unreachable (typed errors: pgstore.ErrUnreachable)").
// Today only Open and New wrap it; every other call returns an untyped
// "pgstore: reading fleet records: ..." error. Once the database is back,
// the same Store works again without being reopened.
func TestStoreCallsWhileUnreachableTesterD(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	p, pdsn := newCutProxy(t, dsn)
	s, err := pgstore.Open(t.Context(), pdsn, pgstore.WithSchema(schema), pgstore.WithTimeout(2*time.Second))
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, s.PutFleet(t.Context(), storetest.Fleet("u")))
	l, err := s.AcquireLease(t.Context(), fleet.FleetLease("u"), "r", time.Minute)
	require.NoError(t, err)

	p.cut()
	calls := map[string]func(ctx context.Context) error{
		"Fleets":    func(ctx context.Context) error { _, err := s.Fleets(ctx); return err },
		"Instances": func(ctx context.Context) error { _, err := s.Instances(ctx); return err },
		"PutFleet": func(ctx context.Context) error {
			f := storetest.Fleet("u")
			f.Version = 1
			return s.PutFleet(fleet.WithLease(ctx, l), f)
		},
		"PutInstance": func(ctx context.Context) error {
			return s.PutInstance(ctx, storetest.Instance("u", "req1", time.Now()))
		},
		"DeleteInstance": func(ctx context.Context) error { return s.DeleteInstance(ctx, "req1") },
		"AcquireLease": func(ctx context.Context) error {
			_, err := s.AcquireLease(ctx, "other", "r", time.Minute)
			return err
		},
		"RenewLease": func(ctx context.Context) error { _, err := s.RenewLease(ctx, l); return err },
		"Leases":     func(ctx context.Context) error { _, err := s.Leases(ctx); return err },
		"PutIntent": func(ctx context.Context) error {
			_, err := s.PutIntent(ctx, fleet.Intent{Fleet: "u", Kind: fleet.IntentDelete})
			return err
		},
		"Intents":    func(ctx context.Context) error { _, err := s.Intents(ctx, ""); return err },
		"AckIntents": func(ctx context.Context) error { return s.AckIntents(fleet.WithLease(ctx, l), "u", 1) },
		"Meta":       func(ctx context.Context) error { _, _, err := s.Meta(ctx, "k"); return err },
	}
	for name, call := range calls {
		start := time.Now()
		err := call(context.Background())
		took := time.Since(start)
		require.Error(t, err, name)
		assert.Less(t, took, 5*time.Second, "%s: bounded by the Store's timeout", name)
		assert.ErrorIs(t, err, pgstore.ErrUnreachable, "%s while the database is unreachable: %v", name, err)
		assert.False(t, errors.Is(err, fleet.ErrStaleWrite) || errors.Is(err, fleet.ErrFenced) ||
			errors.Is(err, fleet.ErrLeaseLost), "%s: an outage is not a stale write, a fence or a lost lease: %v", name, err)
	}

	p.restore(t)
	fs, err := s.Fleets(t.Context())
	require.NoError(t, err, "the same Store works again once the database is back")
	require.Len(t, fs, 1)
	_, err = s.RenewLease(t.Context(), l)
	require.NoError(t, err, "the lease outlived a short outage")
}
