package hotaisle

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
)

// The API's 2xx answers are checked for what each endpoint promises: a JSON
// array for a list (not null, not an object or a message), and for an
// object, the field that identifies it (a VM's or server's name, a key's
// fingerprint, a state). Anything else is a *DecodeError, so that a hollow
// success (an empty body, {}, an error message sent with 200) is never taken
// for an empty list or a nameless VM.

// object sends a request whose 2xx answer is one object, decoded into out,
// and checks with has that it carries its identifying field (named by what).
func (c *Client) object(ctx context.Context, method, path string, q url.Values, body, out any,
	what string, has func() bool) error {
	if err := c.do(ctx, method, path, q, body, out); err != nil {
		return err
	}
	if !has() {
		return c.api.DecodeError(method, path, fmt.Errorf("the answer has no %s", what))
	}
	return nil
}

// list GETs path, whose 2xx answer is a JSON array, and checks with id (when
// not nil) that every item carries its identifying field (named by what).
func list[T any](ctx context.Context, c *Client, path, what string, id func(*T) string) ([]T, error) {
	var out *[]T
	if err := c.do(ctx, http.MethodGet, path, nil, nil, &out); err != nil {
		return nil, err
	}
	if out == nil {
		return nil, c.api.DecodeError(http.MethodGet, path, fmt.Errorf("the answer is null, not a list"))
	}
	for i := range *out {
		if id != nil && id(&(*out)[i]) == "" {
			return nil, c.api.DecodeError(http.MethodGet, path, fmt.Errorf("item %d has no %s", i, what))
		}
	}
	return *out, nil
}

func vmName(v *VM) string            { return v.Name }
func serverName(b *BareMetal) string { return b.Name }
