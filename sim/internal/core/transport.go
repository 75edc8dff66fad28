package core

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"syscall"
)

// MemClient returns an *http.Client whose transport calls h in memory.
func MemClient(h http.Handler) *http.Client { return &http.Client{Transport: &memTransport{h: h}} }

// memTransport is an http.RoundTripper that serves requests by calling a
// handler in the caller's process: on the caller's goroutine when nothing
// can cancel the request, else on a goroutine of its own. A handler that
// aborts (http.ErrAbortHandler) looks to the caller like a connection reset
// (or, once the answer's head went out, like a body cut short); a cancelled
// request context returns at once while the handler finishes on its own, as
// a real server would.
type memTransport struct{ h http.Handler }

type roundTripResult struct {
	resp *http.Response
	err  error
}

func (t *memTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if err := ctx.Err(); err != nil {
		closeBody(req)
		return nil, err
	}
	sreq, err := serverRequest(req)
	if err != nil {
		return nil, err
	}
	if ctx.Done() == nil {
		// Nothing can cancel the request: serve it on the caller's goroutine,
		// whose stack has grown already, and skip a goroutine and a channel.
		res := serve(t.h, sreq)
		if res.resp != nil {
			res.resp.Request = req
		}
		return res.resp, res.err
	}
	done := make(chan roundTripResult, 1)
	go func() { done <- serve(t.h, sreq) }()
	select {
	case res := <-done:
		if res.resp != nil {
			res.resp.Request = req
		}
		return res.resp, res.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// serverRequest copies the client request into one a handler can read: body
// buffered, RemoteAddr and RequestURI set as a server would.
func serverRequest(req *http.Request) (*http.Request, error) {
	var body []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		closeBody(req)
		if err != nil {
			return nil, err
		}
		body = b
	}
	sreq := req.Clone(req.Context())
	sreq.Body = io.NopCloser(bytes.NewReader(body))
	sreq.ContentLength = int64(len(body))
	sreq.RemoteAddr = "127.0.0.1:1"
	sreq.RequestURI = req.URL.RequestURI()
	if sreq.Host == "" {
		sreq.Host = req.URL.Host
	}
	return sreq, nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

func serve(h http.Handler, req *http.Request) (res roundTripResult) {
	rec := httptest.NewRecorder()
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				panic(p)
			}
			res = aborted(rec)
		}
	}()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	resp.ContentLength = int64(rec.Body.Len())
	return roundTripResult{resp: resp}
}

// aborted is what the client of a handler that dropped the connection sees:
// a connection reset, or, when the answer's head was already sent (a cut
// body), the answer with a body that ends early in io.ErrUnexpectedEOF.
func aborted(rec *httptest.ResponseRecorder) roundTripResult {
	if !rec.Flushed {
		return roundTripResult{err: &net.OpError{Op: "read", Net: "tcp",
			Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	}
	resp := rec.Result()
	resp.ContentLength, _ = strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	resp.Body = &cutBody{r: bytes.NewReader(rec.Body.Bytes())}
	return roundTripResult{resp: resp}
}

// cutBody yields the bytes received, then io.ErrUnexpectedEOF, as
// net/http's client does for a body shorter than its Content-Length.
type cutBody struct{ r *bytes.Reader }

func (b *cutBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *cutBody) Close() error { return nil }
