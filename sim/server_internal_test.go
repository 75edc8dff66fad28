package sim

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pipeline routes once and fills the path values, unescaped per segment.
func TestPipelineFillsPathValues(t *testing.T) {
	s := newServer("test", config{clock: RealClock(), seed: 1}, hooks{
		writeError: func(w http.ResponseWriter, status int, msg string) { w.WriteHeader(status) },
		authorized: func(*http.Request) bool { return true },
	})
	handle(s, "GET /things/{id}", false, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.PathValue("id")) })
	resp, err := s.Client().Get("http://any.host/things/abc")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, "abc", string(body))
	assert.Equal(t, "GET /things/{id}", s.Calls()[0].Route)
}
