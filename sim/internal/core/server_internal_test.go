package core

import (
	"io"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The pipeline routes once and fills the path values, unescaped per segment.
func TestPipelineFillsPathValues(t *testing.T) {
	s := NewServer("test", Config{Clock: RealClock(), Seed: 1}, Hooks{
		WriteError: func(w http.ResponseWriter, status int, msg string) { w.WriteHeader(status) },
		Authorized: func(*http.Request) bool { return true },
	})
	Handle(s, "GET /things/{id}", false, func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, r.PathValue("id")) })
	resp, err := s.Client().Get("http://any.host/things/abc")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, "abc", string(body))
	assert.Equal(t, "GET /things/{id}", s.Calls()[0].Route)
}
