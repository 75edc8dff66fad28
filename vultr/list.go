package vultr

import (
	"context"
	"fmt"
	"iter"
	"net/url"
	"strconv"
)

// pager is implemented by the list envelopes ({"<key>":[...],"meta":{...}}).
type pager[T any] interface {
	// items returns the page's items, or why the page is not one: its list
	// is absent or not an array, or an item has no id.
	items() ([]T, error)
	meta() *Meta
}

// pageItems is items for an envelope whose list under key decoded into
// list (nil when the key was absent or null).
func pageItems[T any](list *[]T, key string, id func(*T) string) ([]T, error) {
	if list == nil {
		return nil, fmt.Errorf("the answer has no %q list", key)
	}
	for i := range *list {
		if id(&(*list)[i]) == "" {
			return nil, fmt.Errorf("item %d of %q has no id", i, key)
		}
	}
	return *list, nil
}

// MaxListPages is the most pages one list follows (ErrEndlessList beyond):
// 10,000 pages are 5 million items at the default page size, far above any
// account, and at 30 requests/s about six minutes of calls.
const MaxListPages = 10000

// maxListPages is MaxListPages, lowered by tests.
var maxListPages = MaxListPages

// list returns an iterator over every item of a paginated GET of path: it
// sends per_page (the client's page size) and, after the first page, cursor
// set to meta.links.next, until next is "" or meta is absent. A request error
// is yielded once and ends the iteration; so is a *DecodeError for a 2xx page
// without its list (an empty body, {}, an error object) or with an item
// without id: a page that does not say what it holds is never taken for the
// last one. Each page is fetched only when the
// previous one has been consumed, and breaking out of the loop fetches
// nothing more.
//
// A listing that would not end is cut short with an error (after the items
// already read): a cursor seen before (ErrRepeatedCursor, which also matches
// ErrEndlessList), and ErrEndlessList for an empty page that still names a
// next page, for more items than the largest meta.total seen plus one page
// (the slack lets servers created during the listing through; a meta.total of
// 0 is taken as unknown), and for a next cursor after MaxListPages pages.
func list[T any, P interface {
	*E
	pager[T]
}, E any](ctx context.Context, c *Client, path string, q url.Values) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		w := pageWalk{path: path, pageSize: c.perPage, seen: map[string]bool{}, redact: c.api.Redact}
		cursor := ""
		for {
			page := P(new(E))
			if err := c.do(ctx, "GET", path, pageQuery(q, c.perPage, cursor), nil, page); err != nil {
				yield(zero, err)
				return
			}
			items, err := page.items()
			if err != nil {
				yield(zero, c.api.DecodeError("GET", path, err))
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			m := page.meta()
			if m == nil || m.Links.Next == "" {
				return
			}
			cursor = m.Links.Next
			if err := w.next(len(items), m.Total, cursor); err != nil {
				yield(zero, err)
				return
			}
		}
	}
}

// pageQuery is q with per_page and, when not "", cursor.
func pageQuery(q url.Values, perPage int, cursor string) url.Values {
	query := url.Values{}
	for k, v := range q {
		query[k] = v
	}
	query.Set("per_page", strconv.Itoa(perPage))
	if cursor != "" {
		query.Set("cursor", cursor)
	}
	return query
}

// pageWalk tracks one listing to tell when following its cursors would not
// end (the rules of list).
type pageWalk struct {
	path     string
	pageSize int             // the largest of per_page and any page's length
	pages    int             // pages read
	items    int             // items read
	total    int             // the largest meta.total seen
	seen     map[string]bool // cursors followed
	redact   func(string) string
}

// next records a page of n items with meta.total total, and checks whether
// the next cursor may be followed.
func (w *pageWalk) next(n, total int, cursor string) error {
	w.pages++
	w.items += n
	w.total = max(w.total, total)
	w.pageSize = max(w.pageSize, n)
	switch {
	case w.seen[cursor]:
		return fmt.Errorf("%w: GET %s: cursor %s", ErrRepeatedCursor, w.path, w.quote(cursor))
	case n == 0:
		return fmt.Errorf("%w: GET %s: empty page %d with a next cursor", ErrEndlessList, w.path, w.pages)
	case w.total > 0 && w.items > w.total+w.pageSize:
		return fmt.Errorf("%w: GET %s: %d items read, meta.total %d", ErrEndlessList, w.path, w.items, w.total)
	case w.pages >= maxListPages:
		return fmt.Errorf("%w: GET %s: %d pages read", ErrEndlessList, w.path, w.pages)
	}
	w.seen[cursor] = true
	return nil
}

// quote is cursor quoted, any secret cut out (the cursor comes from the
// answer, which may echo the key).
func (w *pageWalk) quote(cursor string) string {
	q := strconv.Quote(cursor)
	if w.redact != nil {
		q = w.redact(q)
	}
	return q
}

// Collect drains a list iterator into a slice. It stops at the first error
// and returns it together with the items read before it.
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}
