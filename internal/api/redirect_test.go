package api

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recorder is a server that answers 200 {} and keeps the Authorization
// header of every request it gets.
type recorder struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newRecorder(t *testing.T, tls bool, next func(w http.ResponseWriter, r *http.Request) bool) *recorder {
	rec := &recorder{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.mu.Lock()
		rec.auths = append(rec.auths, r.Header.Get("Authorization"))
		rec.mu.Unlock()
		if next != nil && next(w, r) {
			return
		}
		_, _ = w.Write([]byte(`{}`))
	})
	if tls {
		rec.Server = httptest.NewTLSServer(h)
	} else {
		rec.Server = httptest.NewServer(h)
	}
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}

func redirectTo(target string) func(w http.ResponseWriter, r *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/start" {
			http.Redirect(w, r, target, http.StatusFound)
			return true
		}
		return false
	}
}

func keyClient(base string, hc *http.Client) *Client {
	return New(Config{Provider: "test", BaseURL: base, HTTPClient: hc, Secrets: Secrets("secret-key"),
		Authorize:  func(h http.Header) { h.Set("Authorization", "Bearer secret-key") },
		ParseError: func(r *Response) error { return &testErr{status: r.Status, redirect: r.Redirect} }})
}

var redirectCodes = []int{http.StatusMultipleChoices, http.StatusMovedPermanently, http.StatusFound,
	http.StatusSeeOther, http.StatusNotModified, http.StatusTemporaryRedirect, http.StatusPermanentRedirect}

// No redirect is followed, whatever the method and the 3xx status: the
// answer is the client's status error (ParseError gets Response.Redirect),
// the target gets nothing, and a GET or DELETE is not retried.
func TestRedirectIsNeverFollowed(t *testing.T) {
	for _, method := range []string{"GET", "DELETE", "POST", "PATCH", "PUT"} {
		for _, code := range redirectCodes {
			t.Run(fmt.Sprintf("%s %d", method, code), func(t *testing.T) {
				var a *recorder
				a = newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) bool {
					if r.URL.Path != "/start" {
						return false
					}
					w.Header().Set("Location", a.URL+"/landing")
					w.WriteHeader(code)
					return true
				})
				hc := &http.Client{}
				defer hc.CloseIdleConnections()
				var out map[string]any
				req := Request{Method: method, Path: "/start"}
				if method != "GET" && method != "DELETE" {
					req.Body = map[string]string{"a": "b"}
				}
				_, err := keyClient(a.URL, hc).Do(context.Background(), req, &out)
				var te *testErr
				require.ErrorAs(t, err, &te)
				assert.Equal(t, code, te.status)
				require.NotNil(t, te.redirect)
				assert.Equal(t, code, te.redirect.Status)
				assert.Equal(t, method, te.redirect.Method)
				assert.Equal(t, a.URL+"/landing", te.redirect.Location)
				assert.Equal(t, a.URL, te.redirect.From)
				assert.Equal(t, a.URL, te.redirect.To)
				assert.Nil(t, out)
				assert.Equal(t, []string{"Bearer secret-key"}, a.got(), "one request, to /start only")
			})
		}
	}
}

// A redirect to another origin (another port of the same host: net/http
// would keep the key) sends nothing there.
func TestRedirectToAnotherOriginSendsNothingThere(t *testing.T) {
	b := newRecorder(t, false, nil)
	a := newRecorder(t, false, redirectTo(b.URL+"/landing"))
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	_, err := keyClient(a.URL, hc).Do(context.Background(), Request{Method: "GET", Path: "/start"}, nil)
	var te *testErr
	require.ErrorAs(t, err, &te)
	assert.Equal(t, b.URL, te.redirect.To)
	assert.Equal(t, []string{"Bearer secret-key"}, a.got())
	assert.Empty(t, b.got(), "server B got nothing")
	assert.Nil(t, hc.CheckRedirect, "the caller's http.Client is not changed")
}

// https → http: nothing is sent to the http server, and the answer is not
// retried.
func TestRedirectFromHTTPSToHTTPSendsNothing(t *testing.T) {
	b := newRecorder(t, false, nil)
	a := newRecorder(t, true, redirectTo(b.URL+"/landing"))
	hc := a.Client()
	defer hc.CloseIdleConnections()
	_, err := keyClient(a.URL, hc).Do(context.Background(), Request{Method: "GET", Path: "/start"}, nil)
	var te *testErr
	require.ErrorAs(t, err, &te)
	re := te.redirect
	assert.Equal(t, b.URL, re.To)
	assert.Equal(t, a.URL, re.From)
	assert.Equal(t, "test: GET /start: 302: redirect to "+b.URL+"/landing not followed (the API does not redirect: check the base URL)", re.Error())
	assert.False(t, Transient(err))
	assert.Len(t, a.got(), 1, "not retried")
	assert.Empty(t, b.got(), "nothing reached the http server")
}

// The caller's own redirect policy is neither asked nor changed.
func TestRedirectIgnoresTheCallersPolicy(t *testing.T) {
	b := newRecorder(t, false, nil)
	a := newRecorder(t, false, redirectTo(b.URL+"/landing"))
	asked := 0
	policy := func(*http.Request, []*http.Request) error { asked++; return nil }
	hc := &http.Client{CheckRedirect: policy}
	defer hc.CloseIdleConnections()
	_, err := keyClient(a.URL, hc).Do(context.Background(), Request{Method: "GET", Path: "/start"}, nil)
	var te *testErr
	require.ErrorAs(t, err, &te)
	assert.Equal(t, http.StatusFound, te.status)
	assert.Zero(t, asked)
	assert.NotNil(t, hc.CheckRedirect)
	assert.Empty(t, b.got())
}

// A location that echoes the key has it cut out; one without a Location
// header says so.
func TestRedirectLocationIsRedacted(t *testing.T) {
	a := newRecorder(t, false, func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == "/bare" {
			w.WriteHeader(http.StatusMovedPermanently)
			return true
		}
		http.Redirect(w, r, "/landing?k="+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "), http.StatusFound)
		return true
	})
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	c := keyClient(a.URL, hc)
	_, err := c.Do(context.Background(), Request{Method: "DELETE", Path: "/start"}, nil)
	var te *testErr
	require.ErrorAs(t, err, &te)
	assert.Equal(t, a.URL+"/landing?k="+Redacted, te.redirect.Location)
	assert.NotContains(t, te.redirect.Error(), "secret-key")
	_, err = c.Do(context.Background(), Request{Method: "DELETE", Path: "/bare"}, nil)
	require.ErrorAs(t, err, &te)
	assert.Empty(t, te.redirect.Location)
	assert.Empty(t, te.redirect.To)
	assert.Contains(t, te.redirect.Reason(), "redirect without a location not followed")
}
