package sshhost

import (
	"io"
	"net"
	"os"
	"sync"
	"time"
)

// A stream is one direction of an in-memory TCP connection. Unlike net.Pipe
// it is buffered like a socket (a write never waits for the reader), which
// SSH needs: both ends send their version line before reading.
type stream struct {
	mu      sync.Mutex
	buf     []byte
	eof     bool          // the writer closed: reads drain buf, then io.EOF
	gone    bool          // the reader closed: writes fail
	readyCh chan struct{} // capacity 1: data or EOF arrived
}

func newStream() *stream { return &stream{readyCh: make(chan struct{}, 1)} }

func (s *stream) signal() {
	select {
	case s.readyCh <- struct{}{}:
	default:
	}
}

// pipeConn is one end of an in-memory TCP connection. Readers block only on
// channels and timers created in the caller's goroutine, so a synctest bubble
// sees them as durably blocked.
type pipeConn struct {
	rd, wr        *stream
	local, remote net.Addr
	closeOnce     sync.Once
	closed        chan struct{}
	readDL        deadline
	writeDL       deadline
	onClose       func()
}

// newPipe returns the two ends of a connection: the client's (local a,
// remote b) and the server's.
func newPipe(a, b net.Addr) (client, server *pipeConn) {
	ab, ba := newStream(), newStream()
	client = &pipeConn{rd: ba, wr: ab, local: a, remote: b, closed: make(chan struct{})}
	server = &pipeConn{rd: ab, wr: ba, local: b, remote: a, closed: make(chan struct{})}
	client.readDL.init()
	client.writeDL.init()
	server.readDL.init()
	server.writeDL.init()
	return client, server
}

func (c *pipeConn) opErr(op string, err error) error {
	return &net.OpError{Op: op, Net: "tcp", Source: c.local, Addr: c.remote, Err: err}
}

// Read reads buffered bytes, waiting for some; io.EOF once the peer closed
// and the buffer is drained.
func (c *pipeConn) Read(p []byte) (int, error) {
	for {
		select {
		case <-c.closed:
			return 0, c.opErr("read", net.ErrClosed)
		default:
		}
		if c.readDL.expired() {
			return 0, c.opErr("read", os.ErrDeadlineExceeded)
		}
		s := c.rd
		s.mu.Lock()
		if len(s.buf) > 0 {
			n := copy(p, s.buf)
			s.buf = s.buf[n:]
			if len(s.buf) > 0 {
				s.signal()
			}
			s.mu.Unlock()
			return n, nil
		}
		eof := s.eof
		s.mu.Unlock()
		if eof {
			return 0, io.EOF
		}
		select {
		case <-s.readyCh:
		case <-c.closed:
		case <-c.readDL.wait():
		}
	}
}

// Write appends p to the peer's buffer; it fails once this end closed.
// Once the peer closed, bytes are dropped (as they would go unread on TCP);
// the peer's close shows as EOF on Read.
func (c *pipeConn) Write(p []byte) (int, error) {
	select {
	case <-c.closed:
		return 0, c.opErr("write", net.ErrClosed)
	default:
	}
	if c.writeDL.expired() {
		return 0, c.opErr("write", os.ErrDeadlineExceeded)
	}
	s := c.wr
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return len(p), nil
	}
	s.buf = append(s.buf, p...)
	s.signal()
	return len(p), nil
}

// Close closes both directions: the peer reads EOF after the buffered
// bytes, and its writes fail.
func (c *pipeConn) Close() error {
	first := false
	c.closeOnce.Do(func() {
		first = true
		close(c.closed)
		c.wr.mu.Lock()
		c.wr.eof = true
		c.wr.signal()
		c.wr.mu.Unlock()
		c.rd.mu.Lock()
		c.rd.gone = true
		c.rd.buf = nil
		c.rd.mu.Unlock()
		if c.onClose != nil {
			c.onClose()
		}
	})
	if !first {
		return c.opErr("close", net.ErrClosed)
	}
	return nil
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

func (c *pipeConn) SetDeadline(t time.Time) error {
	c.readDL.set(t)
	c.writeDL.set(t)
	return nil
}

func (c *pipeConn) SetReadDeadline(t time.Time) error  { c.readDL.set(t); return nil }
func (c *pipeConn) SetWriteDeadline(t time.Time) error { c.writeDL.set(t); return nil }

// deadline is a net.Conn deadline: a channel closed when it passes. Like
// net.Pipe, it uses the time package (the bubble's clock inside synctest),
// since callers compute deadlines from time.Now.
type deadline struct {
	mu     sync.Mutex
	timer  *time.Timer
	cancel chan struct{}
}

func (d *deadline) init() { d.cancel = make(chan struct{}) }

func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil && !d.timer.Stop() {
		<-d.cancel // the timer fired and closed cancel
	}
	d.timer = nil
	closed := isClosedChan(d.cancel)
	if t.IsZero() {
		if closed {
			d.cancel = make(chan struct{})
		}
		return
	}
	if dur := time.Until(t); dur > 0 {
		if closed {
			d.cancel = make(chan struct{})
		}
		cancel := d.cancel
		d.timer = time.AfterFunc(dur, func() { close(cancel) })
		return
	}
	if !closed {
		close(d.cancel)
	}
}

func (d *deadline) wait() chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.cancel
}

func (d *deadline) expired() bool { return isClosedChan(d.wait()) }

func isClosedChan(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
