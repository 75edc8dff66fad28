package hotaisle

import (
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A new user reads `go doc ./hotaisle` ("# Secrets") and learns which fleet
// class a 3xx answer has. It must be the class the client returns: README,
// CHANGELOG, APIError's doc and the classification table (3xx →
// ErrUnavailable, "its effect is unknown") agree; hotaisle/doc.go says
// fleet.ErrInvalidRequest, a definite refusal, which would tell a caller
// that a redirected provision created nothing.
func TestPackageDocNamesTheClassA3xxAnswerHas(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	var b strings.Builder
	for name, p := range pkgs {
		if strings.HasSuffix(name, "_test") {
			continue
		}
		for _, f := range p.Files {
			if f.Doc != nil {
				b.WriteString(f.Doc.Text())
			}
		}
	}
	doc := strings.Join(strings.Fields(b.String()), " ")
	m := regexp.MustCompile(`3xx answer is an \*?\[?APIError\]? of class \[?fleet\.(Err\w+)`).FindStringSubmatch(doc)
	require.NotNil(t, m, "the package doc says which class a 3xx answer has")
	classes := map[string]error{"ErrUnavailable": fleet.ErrUnavailable, "ErrInvalidRequest": fleet.ErrInvalidRequest}
	docClass, ok := classes[m[1]]
	require.True(t, ok, m[1])

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.invalid"+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	c := New(testKey, "acme", WithBaseURL(srv.URL+"/api"), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
		WithRateLimit(0, 0))
	_, err = c.ListVMTypes(t.Context())
	require.Error(t, err)
	assert.ErrorIs(t, err, docClass, "the package doc says a 3xx answer is of class fleet.%s; the client returned %v", m[1], err)
}
