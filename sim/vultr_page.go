package sim

import (
	"encoding/base64"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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
// for and answers its meta.
func vultrPaginate(p vultrPageReq, n int, key func(i int) uint64) (lo, hi int, meta vultrMeta) {
	meta.Total = n
	if p.hasPos {
		for lo < n && key(lo) < p.start {
			lo++
		}
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

// vultrServePage answers a paginated list under name ("plans", "instances",
// …), or a 400 for a bad per_page or cursor. key gives item i's position key
// (nil: its index).
func vultrServePage[T any](w http.ResponseWriter, r *http.Request, name string, items []T, key func(i int) uint64) {
	p, msg := parseVultrPage(r.URL.Query())
	if msg != "" {
		writeVultrError(w, http.StatusBadRequest, msg)
		return
	}
	if key == nil {
		key = func(i int) uint64 { return uint64(i) }
	}
	lo, hi, meta := vultrPaginate(p, len(items), key)
	page := append([]T{}, items[lo:hi]...)
	writeJSON(w, http.StatusOK, map[string]any{name: page, "meta": meta})
}
