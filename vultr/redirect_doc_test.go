package vultr

import (
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fleetClassesG maps the names of fleet's error classes a doc may cite.
var fleetClassesG = map[string]error{
	"ErrUnavailable":    fleet.ErrUnavailable,
	"ErrInvalidRequest": fleet.ErrInvalidRequest,
	"ErrNotFound":       fleet.ErrNotFound,
}

// packageDocG returns the package comment of the package in dir.
func packageDocG(t *testing.T, dir string) string {
	t.Helper()
	pkgs, err := parser.ParseDir(token.NewFileSet(), dir, nil, parser.ParseComments|parser.PackageClauseOnly)
	require.NoError(t, err)
	var doc strings.Builder
	for name, p := range pkgs {
		if strings.HasSuffix(name, "_test") {
			continue
		}
		for _, f := range p.Files {
			if f.Doc != nil {
				doc.WriteString(f.Doc.Text())
			}
		}
	}
	return strings.Join(strings.Fields(doc.String()), " ")
}

// A new user reads `go doc ./vultr` and learns which fleet class a 3xx answer
// has, then switches on it. The package doc must name the class the client
// returns: README ("a 3xx answer is the client's APIError (fleet.ErrUnavailable:
// its effect is unknown)"), CHANGELOG, APIError's own doc and the code say
// ErrUnavailable; vultr/doc.go says fleet.ErrInvalidRequest. A caller that
// trusts the package doc takes a redirected create as definitely refused
// (ErrInvalidRequest) and creates again, where the client meant "effect
// unknown, look it up".
func TestPackageDocNamesTheClassA3xxAnswerHas(t *testing.T) {
	doc := packageDocG(t, ".")
	m := regexp.MustCompile(`3xx answer is an \*?\[?APIError\]? of class \[?fleet\.(Err\w+)`).FindStringSubmatch(doc)
	require.NotNil(t, m, "the package doc says which class a 3xx answer has")
	docClass, ok := fleetClassesG[m[1]]
	require.True(t, ok, m[1])

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.invalid"+r.URL.Path, http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	c := New(testKey, WithBaseURL(srv.URL), WithHTTPClient(srv.Client()), WithRateLimit(0, 0))
	_, err := c.GetVPC(t.Context(), "6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90")
	require.Error(t, err)
	assert.ErrorIs(t, err, docClass, "the package doc says a 3xx answer is of class fleet.%s; the client returned %v", m[1], err)
}

// fleet.ErrUnavailable is the class both clients give a 3xx answer, but its
// own doc lists only "HTTP 502, 503, 504, other 5xx, connection reset": a
// reader of `go doc ./fleet ErrUnavailable` cannot learn that a redirect
// lands there, nor that for it "safe to retry" holds only for idempotent
// calls whose effect is then looked up.
func TestErrUnavailableDocNamesThe3xxAnswersItClassifies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://elsewhere.invalid"+r.URL.Path, http.StatusMovedPermanently)
	}))
	t.Cleanup(srv.Close)
	c := New(testKey, WithBaseURL(srv.URL), WithHTTPClient(srv.Client()), WithRateLimit(0, 0))
	_, err := c.GetVPC(t.Context(), "v1")
	require.ErrorIs(t, err, fleet.ErrUnavailable, "precondition: the client classes a 3xx as ErrUnavailable")

	pkgs, perr := parser.ParseDir(token.NewFileSet(), "../fleet", nil, parser.ParseComments)
	require.NoError(t, perr)
	var doc string
	for name, p := range pkgs {
		if strings.HasSuffix(name, "_test") {
			continue
		}
		for _, f := range p.Files {
			for _, cg := range f.Comments {
				if strings.Contains(cg.Text(), "ErrUnavailable: a transient") {
					doc = cg.Text()
				}
			}
		}
	}
	require.NotEmpty(t, doc, "fleet.ErrUnavailable has a doc comment")
	assert.Regexp(t, `(?i)3xx|redirect`, doc, "fleet.ErrUnavailable's doc names the answers it classifies, 3xx included")
}
