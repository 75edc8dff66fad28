package core

import "net/http"

// statusWriter records the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer (Flush).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statusOverride sends status whatever status the handler writes (a 2xx
// carrying an error body).
type statusOverride struct {
	http.ResponseWriter
	status int
}

func (w *statusOverride) WriteHeader(int) { w.ResponseWriter.WriteHeader(w.status) }

// discardWriter swallows a handler's answer (for AfterCommit faults).
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// bufferWriter keeps a handler's whole answer (for cut bodies).
type bufferWriter struct {
	h      http.Header
	status int
	body   []byte
}

func (b *bufferWriter) Header() http.Header { return b.h }

func (b *bufferWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	b.body = append(b.body, p...)
	return len(p), nil
}

func (b *bufferWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}

func (b *bufferWriter) code() int {
	if b.status == 0 {
		return http.StatusOK
	}
	return b.status
}

// callLog is the call log in blocks, so that a long log grows without
// copying what it holds.
type callLog struct {
	blocks [][]Call
	n      int
}

const callBlock = 1024

func (l *callLog) add(c Call) {
	if len(l.blocks) == 0 || len(l.blocks[len(l.blocks)-1]) == callBlock {
		l.blocks = append(l.blocks, make([]Call, 0, callBlock))
	}
	last := &l.blocks[len(l.blocks)-1]
	*last = append(*last, c)
	l.n++
}

func (l *callLog) all() []Call {
	out := make([]Call, 0, l.n)
	for _, b := range l.blocks {
		out = append(out, b...)
	}
	return out
}
