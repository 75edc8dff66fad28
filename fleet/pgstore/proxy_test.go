package pgstore_test

import (
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// cutProxy forwards TCP connections to the database until cut: then it
// closes every connection and stops listening, so that new connections
// are refused (a database briefly unreachable: a restart, a failover),
// until restore listens again on the same address. hang instead keeps
// every connection open and forwards nothing (a network that drops
// packets), until restore.
type cutProxy struct {
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
	hung   chan struct{} // set while hung, closed by restore
	wg     sync.WaitGroup
	closed chan struct{}
}

func newCutProxy(t *testing.T, dsn string) (*cutProxy, string) {
	t.Helper()
	u, err := url.Parse(dsn)
	require.NoError(t, err)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &cutProxy{addr: ln.Addr().String(), target: u.Host, conns: map[net.Conn]bool{}, closed: make(chan struct{})}
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
		p.mu.Lock()
		p.conns[c] = true
		p.mu.Unlock()
		p.wg.Add(1)
		go p.forward(c)
	}
}

// forward dials the database for c once forwarding is on, then pipes.
func (p *cutProxy) forward(c net.Conn) {
	defer p.wg.Done()
	if !p.wait() {
		c.Close()
		return
	}
	d, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[d] = true
	p.mu.Unlock()
	p.wg.Add(2)
	go p.pipe(c, d)
	go p.pipe(d, c)
}

// wait blocks while the proxy hangs; false once it is closed.
func (p *cutProxy) wait() bool {
	p.mu.Lock()
	hung := p.hung
	p.mu.Unlock()
	if hung == nil {
		return true
	}
	select {
	case <-hung:
		return true
	case <-p.closed:
		return false
	}
}

func (p *cutProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && (!p.wait() || writeAll(dst, buf[:n]) != nil) {
			return
		}
		if err != nil {
			return
		}
	}
}

func writeAll(c net.Conn, b []byte) error {
	_, err := c.Write(b)
	return err
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

// hang stops forwarding without closing anything.
func (p *cutProxy) hang() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hung == nil {
		p.hung = make(chan struct{})
	}
}

// restore forwards again (after hang), listening again on the same
// address (after cut).
func (p *cutProxy) restore(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.hung != nil {
		close(p.hung)
		p.hung = nil
	}
	if p.ln == nil {
		ln, err := net.Listen("tcp", p.addr)
		require.NoError(t, err)
		p.start(ln)
	}
}

func (p *cutProxy) close() {
	p.cut()
	p.mu.Lock()
	select {
	case <-p.closed:
	default:
		close(p.closed)
	}
	p.mu.Unlock()
	p.wg.Wait()
}
