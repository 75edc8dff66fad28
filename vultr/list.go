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
	items() []T
	meta() *Meta
}

// list returns an iterator over every item of a paginated GET of path: it
// sends per_page (the client's page size) and, after the first page, cursor
// set to meta.links.next, until next is "" or meta is absent. A request error
// is yielded once and ends the iteration; so does a cursor seen before
// (ErrRepeatedCursor). Each page is fetched only when the previous one has
// been consumed, and breaking out of the loop fetches nothing more.
func list[T any, P interface {
	*E
	pager[T]
}, E any](ctx context.Context, c *Client, path string, q url.Values) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		seen := map[string]bool{}
		cursor := ""
		for {
			query := url.Values{}
			for k, v := range q {
				query[k] = v
			}
			query.Set("per_page", strconv.Itoa(c.perPage))
			if cursor != "" {
				query.Set("cursor", cursor)
			}
			page := P(new(E))
			if err := c.do(ctx, "GET", path, query, nil, page); err != nil {
				yield(zero, err)
				return
			}
			for _, it := range page.items() {
				if !yield(it, nil) {
					return
				}
			}
			m := page.meta()
			if m == nil || m.Links.Next == "" {
				return
			}
			cursor = m.Links.Next
			if seen[cursor] {
				yield(zero, fmt.Errorf("GET %s: cursor %q: %w", path, cursor, ErrRepeatedCursor))
				return
			}
			seen[cursor] = true
		}
	}
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
