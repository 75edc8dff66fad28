package api

import (
	"context"
	"errors"
	"net/http"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A 2xx with no body where out expects one is a *DecodeError, named after
// the provider; a body that is not JSON too.
func TestDoRefusesAnEmptyOrNonJSONSuccess(t *testing.T) {
	for _, body := range []string{"", "  \n", "<html>oops</html>", `{"n":`} {
		c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) { return answer(200, body), nil }), nil)
		var out struct{ N int }
		_, err := c.Do(context.Background(), Request{Method: "GET", Path: "/x"}, &out)
		var de *DecodeError
		require.True(t, errors.As(err, &de), "%q: %v", body, err)
		assert.Contains(t, err.Error(), "api: GET /x: decode response: ")
	}
}

// OptionalBody accepts an empty 2xx; without out the body is ignored.
func TestDoOptionalBodyAndNoOut(t *testing.T) {
	c := newTestClient(rtFunc(func(r *http.Request) (*http.Response, error) { return answer(202, ""), nil }), nil)
	var out struct{ N int }
	_, err := c.Do(context.Background(), Request{Method: "PATCH", Path: "/x", OptionalBody: true}, &out)
	require.NoError(t, err)
	_, err = c.Do(context.Background(), Request{Method: "DELETE", Path: "/x"}, nil)
	require.NoError(t, err)
}

func TestUserAgentFormat(t *testing.T) {
	assert.Regexp(t, `^gpufleet/(devel|v\S+) \(vultr\)$`, UserAgent("vultr"))
	info := func(bi *debug.BuildInfo) func() (*debug.BuildInfo, bool) {
		return func() (*debug.BuildInfo, bool) { return bi, bi != nil }
	}
	assert.Equal(t, "devel", moduleVersion(info(nil)))
	assert.Equal(t, "devel", moduleVersion(info(&debug.BuildInfo{Main: debug.Module{Path: ModulePath, Version: "(devel)"}})))
	assert.Equal(t, "v1.2.3", moduleVersion(info(&debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
		Deps: []*debug.Module{{Path: "other", Version: "v9"}, {Path: ModulePath, Version: "v1.2.3"}}})))
	assert.Equal(t, "v1.2.4", moduleVersion(info(&debug.BuildInfo{Main: debug.Module{Path: "example.com/app"},
		Deps: []*debug.Module{{Path: ModulePath, Version: "v1.2.3", Replace: &debug.Module{Path: "../fork", Version: "v1.2.4"}}}})))
	assert.Equal(t, "devel", moduleVersion(info(&debug.BuildInfo{Main: debug.Module{Path: "example.com/app"}})))
}
