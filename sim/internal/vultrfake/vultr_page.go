package vultrfake

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// Vultr cursor pagination (vultr.md §1): per_page (default 100, max 500) and
// an opaque base64 cursor; lists carry meta.total and meta.links.next/prev,
// next == "" on the last page. A cursor names the position key of the first
// item of the page it leads to ("next__<key>", "prev__<key>"), so deleting
// items between pages never skips the rest.
const (
	vultrPerPageDefault = 100
	vultrPerPageMax     = 500
)

type vultrMeta struct {
	Total int            `json:"total"`
	Links vultrMetaLinks `json:"links"`
}

type vultrMetaLinks struct {
	Next string `json:"next"`
	Prev string `json:"prev"`
}

type vultrPageReq struct {
	perPage int
	start   uint64
	hasPos  bool
}

// parseVultrPage reads per_page and cursor. A per_page over the maximum is
// clamped; a non-number, a negative per_page or a foreign cursor is refused.
func parseVultrPage(q url.Values) (vultrPageReq, string) {
	p := vultrPageReq{perPage: vultrPerPageDefault}
	if s := q.Get("per_page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return p, "Invalid per_page: must be a number from 1 to 500."
		}
		if n > 0 {
			p.perPage = min(n, vultrPerPageMax)
		}
	}
	if c := q.Get("cursor"); c != "" {
		raw, err := base64.StdEncoding.DecodeString(c)
		if err != nil {
			return p, "Invalid cursor."
		}
		_, key, ok := strings.Cut(string(raw), "__")
		n, err := strconv.ParseUint(key, 10, 64)
		if !ok || err != nil {
			return p, "Invalid cursor."
		}
		p.start, p.hasPos = n, true
	}
	return p, ""
}

func vultrCursor(dir string, key uint64) string {
	return base64.StdEncoding.EncodeToString([]byte(dir + "__" + strconv.FormatUint(key, 10)))
}

// vultrPaginate bounds the page of n items (sorted by key) the request asks
// for and answers its meta: a binary search finds the cursor's position.
func vultrPaginate(p vultrPageReq, n int, key func(i int) uint64) (lo, hi int, meta vultrMeta) {
	meta.Total = n
	if p.hasPos {
		lo = sort.Search(n, func(i int) bool { return key(i) >= p.start })
	}
	hi = min(lo+p.perPage, n)
	if hi < n {
		meta.Links.Next = vultrCursor("next", key(hi))
	}
	if lo > 0 {
		meta.Links.Prev = vultrCursor("prev", key(max(0, lo-p.perPage)))
	}
	return lo, hi, meta
}

// vultrListJSON is the body of a paginated list: the items under name
// (written by MarshalJSON) and meta.
type vultrListJSON[T any] struct {
	name  string
	items []T
	meta  vultrMeta
}

// vultrPage renders the page of a list the request asks for: n items
// sorted by key, render(i) giving item i (called for the page's items
// only). A bad per_page or cursor is answered 400 and reported false.
// Callers rendering shared state hold v.mu.
func vultrPage[T any](w http.ResponseWriter, r *http.Request, name string, n int, key func(int) uint64,
	render func(int) T) (vultrListJSON[T], bool) {
	p, msg := parseVultrPage(r.URL.Query())
	if msg != "" {
		writeVultrError(w, http.StatusBadRequest, msg)
		return vultrListJSON[T]{}, false
	}
	if key == nil {
		key = func(i int) uint64 { return uint64(i) }
	}
	lo, hi, meta := vultrPaginate(p, n, key)
	page := make([]T, 0, hi-lo)
	for i := lo; i < hi; i++ {
		page = append(page, render(i))
	}
	return vultrListJSON[T]{name: name, items: page, meta: meta}, true
}

// vultrServePage answers a paginated list of items (position key: the
// index), or a 400 for a bad per_page or cursor.
func vultrServePage[T any](w http.ResponseWriter, r *http.Request, name string, items []T) {
	if l, ok := vultrPage(w, r, name, len(items), nil, func(i int) T { return items[i] }); ok {
		core.WriteJSON(w, http.StatusOK, l)
	}
}
