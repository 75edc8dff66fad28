package api

import (
	"fmt"
	"net/http"
	"net/url"
)

// RedirectError is a 3xx answer, which the client never follows: neither
// API redirects, and following one would turn a DELETE, PATCH or POST into
// a GET (301, 302, 303) whose 2xx answer would pass for success, or carry
// the key and the body to a place the caller did not name. Nothing was sent
// to the new location. The client's typed status error of a 3xx answer
// unwraps to it; it answers no fleet error class by itself and is not
// retried.
type RedirectError struct {
	Provider     string // "vultr", "hotaisle"
	Method, Path string // the request, path relative to the base URL
	Status       int    // the 3xx status code
	// Location is the Location header resolved against the request URL,
	// with the API key cut out; "" when the answer named none.
	Location string
	// From and To are the origins ("https://api.example.com") of the
	// request and of Location (To is "" without a Location).
	From, To string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("%s: %s %s: %d: %s", e.Provider, e.Method, e.Path, e.Status, e.Reason())
}

// Reason says what happened without naming the call: "redirect to
// <location> not followed (the API does not redirect: check the base URL)".
func (e *RedirectError) Reason() string {
	to := "redirect without a location"
	if e.Location != "" {
		to = "redirect to " + e.Location
	}
	return to + " not followed (the API does not redirect: check the base URL)"
}

// IsRedirect reports whether status is a 3xx status.
func IsRedirect(status int) bool { return status >= 300 && status <= 399 }

// noRedirects returns a copy of hc (hc itself is not changed) that never
// follows a redirect: the 3xx answer itself is returned, so no request is
// re-sent as a GET or carries the key elsewhere. hc's own CheckRedirect is
// not asked.
func noRedirects(hc *http.Client) *http.Client {
	c := *hc
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// redirectOf describes the 3xx answer hresp to req, the key cut out of its
// location.
func (c *Client) redirectOf(req Request, hresp *http.Response) *RedirectError {
	keys := c.secrets()
	e := &RedirectError{Provider: c.cfg.Provider, Method: req.Method, Path: RedactString(req.Path, keys),
		Status: hresp.StatusCode, From: originOf(c.cfg.BaseURL)}
	loc, err := hresp.Location()
	if err == nil {
		loc.User = nil
		e.Location = RedactString(loc.String(), keys)
		e.To = RedactString(loc.Scheme+"://"+loc.Host, keys)
	} else if raw := hresp.Header.Get("Location"); raw != "" {
		e.Location = RedactString(raw, keys)
	}
	return e
}

// originOf is the scheme and host of a URL string, "" when it does not parse.
func originOf(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
