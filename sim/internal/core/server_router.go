package core

import (
	"net/http"
	"net/url"
	"sort"
	"strings"
)

// serverRoute is one served route: a method and a path pattern whose
// segments are literals or {name} wildcards (one whole, non-empty segment,
// unescaped before it is handed to the handler). A pattern ending in "/"
// matches only paths ending in "/".
type serverRoute struct {
	method  string
	segs    []string // the pattern's path split at "/", the leading "" dropped
	display string   // "GET /v2/instances/{id}": the name faults and the call log use
	public  bool     // needs no API key
	read    bool     // GET: a read that visibility lag applies to
	h       http.HandlerFunc
	hash    uint64 // of display: salts the route's seeded fault draws
	seen    uint64 // calls that reached the fault stage (guarded by server.mu)
}

// serverRouter finds the route of a request in one pass over its path.
// Routes are grouped by method and number of segments, so a lookup compares
// a handful of candidates.
type serverRouter struct {
	byShape map[routeShape][]*serverRoute
	byName  map[string]*serverRoute
}

type routeShape struct {
	method string
	segs   int
}

func newServerRouter() *serverRouter {
	return &serverRouter{byShape: map[routeShape][]*serverRoute{}, byName: map[string]*serverRoute{}}
}

// add registers a route for pattern ("METHOD /path/{id}"). It panics on a
// pattern without a method or registered twice (a programming error).
func (rt *serverRouter) add(pattern string, public bool, h http.HandlerFunc) *serverRoute {
	method, p, ok := strings.Cut(pattern, " ")
	if !ok || !strings.HasPrefix(p, "/") {
		panic("sim: bad route pattern " + pattern)
	}
	if rt.byName[pattern] != nil {
		panic("sim: route registered twice: " + pattern)
	}
	r := &serverRoute{method: method, segs: strings.Split(p[1:], "/"), display: pattern, public: public,
		read: method == http.MethodGet, h: h, hash: fnv64(pattern)}
	k := routeShape{method, len(r.segs)}
	rt.byShape[k] = append(rt.byShape[k], r)
	rt.byName[pattern] = r
	return r
}

// names lists the display patterns, sorted.
func (rt *serverRouter) names() []string {
	out := make([]string, 0, len(rt.byName))
	for n := range rt.byName {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// match finds the route of r and fills r's path values from the escaped
// path (so "%2F" stays inside one segment). It returns nil when no route
// matches.
func (rt *serverRouter) match(r *http.Request) *serverRoute {
	p := r.URL.EscapedPath()
	if !strings.HasPrefix(p, "/") {
		return nil
	}
	p = p[1:]
	cands := rt.byShape[routeShape{r.Method, strings.Count(p, "/") + 1}]
	for _, c := range cands {
		if c.matches(p) {
			c.fill(r, p)
			return c
		}
	}
	return nil
}

// matches compares the escaped path (without its leading "/") segment by
// segment, without allocating.
func (c *serverRoute) matches(p string) bool {
	for i, seg := range c.segs {
		var part string
		if i == len(c.segs)-1 {
			part = p
		} else {
			j := strings.IndexByte(p, '/')
			part, p = p[:j], p[j+1:]
		}
		if isWildcard(seg) {
			if part == "" {
				return false
			}
		} else if part != seg {
			return false
		}
	}
	return true
}

// fill sets the wildcards' values, unescaped.
func (c *serverRoute) fill(r *http.Request, p string) {
	for i, seg := range c.segs {
		var part string
		if i == len(c.segs)-1 {
			part = p
		} else {
			j := strings.IndexByte(p, '/')
			part, p = p[:j], p[j+1:]
		}
		if isWildcard(seg) {
			if v, err := url.PathUnescape(part); err == nil {
				part = v
			}
			r.SetPathValue(seg[1:len(seg)-1], part)
		}
	}
}

func isWildcard(seg string) bool { return len(seg) > 2 && seg[0] == '{' && seg[len(seg)-1] == '}' }
