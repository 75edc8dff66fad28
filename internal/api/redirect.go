package api

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// maxRedirects is how many redirects one request follows (net/http's default).
const maxRedirects = 10

// RedirectError is a redirect the client refused to follow: from https to
// plain http, where the API key and the body would travel in clear. Nothing
// was sent to the new location. It answers no fleet error class and is not
// retried.
type RedirectError struct {
	Provider     string // "vultr", "hotaisle"
	Method, Path string // the request, path relative to the base URL
	From, To     string // origins ("https://api.example.com", "http://...")
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("%s: %s %s: refused a redirect from %s to %s (https to http)",
		e.Provider, e.Method, e.Path, e.From, e.To)
}

// errDowngrade is what CheckRedirect returns; once turns it into a
// *RedirectError with the request's names.
var errDowngrade = errors.New("redirect from https to http")

// secureRedirects returns a copy of hc (hc itself is not changed) whose
// redirects never carry the API key to another origin: Authorization is
// dropped on a redirect that changes the scheme, host or port of the first
// request (net/http drops it only when the host name changes), and a
// redirect from https to http is refused. hc's own CheckRedirect, if any, is
// then asked as usual; without one, at most maxRedirects are followed.
func secureRedirects(hc *http.Client) *http.Client {
	c := *hc
	next := hc.CheckRedirect
	c.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) > 0 {
			if via[len(via)-1].URL.Scheme == "https" && req.URL.Scheme != "https" {
				return errDowngrade
			}
			if origin(req.URL) != origin(via[0].URL) {
				req.Header.Del("Authorization")
			}
		}
		if next != nil {
			return next(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &c
}

// origin is "scheme://host:port" with the default port made explicit.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "https":
			port = "443"
		case "http":
			port = "80"
		}
	}
	return scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

// originOf is origin of a URL string, "" when it does not parse.
func originOf(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
