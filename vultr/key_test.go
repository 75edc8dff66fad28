package vultr

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// authServer answers like GET /v2/vpcs/{id} and keeps the Authorization
// header of every request (absent headers as "<none>").
type authServer struct {
	*httptest.Server
	mu    sync.Mutex
	auths []string
}

func newAuthServer(t *testing.T) *authServer {
	s := &authServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		if v, ok := r.Header["Authorization"]; ok {
			s.auths = append(s.auths, v[0])
		} else {
			s.auths = append(s.auths, "<none>")
		}
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(fixtureVPC))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *authServer) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...)
}

func (s *authServer) client(key string) *Client {
	return New(key, WithBaseURL(s.URL), WithHTTPClient(&http.Client{Timeout: 5 * time.Second}),
		WithRateLimit(0, 0), WithRetry(5, time.Millisecond, time.Millisecond))
}

const keyForms = "K3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3YK3Y"

// A key read from a file or an environment line keeps its line break (and
// may carry other white space or the "Bearer " prefix): it is trimmed, as
// hotaisle.New trims its key, and works.
func TestKeyIsTrimmed(t *testing.T) {
	for _, given := range []string{keyForms + "\n", keyForms + "\r\n", " \t" + keyForms + " ",
		"\n" + keyForms, "Bearer " + keyForms, " Bearer " + keyForms + "\n"} {
		t.Run(fmt.Sprintf("%q", given), func(t *testing.T) {
			s := newAuthServer(t)
			_, err := s.client(given).GetVPC(context.Background(), "6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90")
			require.NoError(t, err)
			assert.Equal(t, []string{"Bearer " + keyForms}, s.got())
		})
	}
}

// A key that holds a control character inside it is refused at call time
// with a *KeyError (a wrong key, nothing sent), not sent five times and
// reported as a transport failure (fleet.ErrUnavailable: "the provider
// looks down"); the error never quotes the key.
func TestKeyWithAControlCharacterIsRefusedBeforeSending(t *testing.T) {
	for _, given := range []string{"K3YK3YK3YK3Y\nK3YK3YK3YK3Y", "K3YK3YK3YK3Y\rK3YK3YK3YK3Y",
		"K3YK3YK3YK3Y\x00K3YK3YK3YK3Y", "K3YK3YK3YK3Y\x7fK3YK3YK3YK3Y", "K3YK3YK3YK3Y\tK3YK3YK3YK3Y"} {
		t.Run(fmt.Sprintf("%q", given), func(t *testing.T) {
			s := newAuthServer(t)
			_, err := s.client(given).GetVPC(context.Background(), "v1")
			var ke *KeyError
			require.ErrorAs(t, err, &ke)
			assert.Equal(t, "vultr", ke.Provider)
			assert.True(t, errors.Is(err, fleet.ErrUnauthorized))
			assert.True(t, errors.Is(err, fleet.ErrNotSent))
			assert.False(t, errors.Is(err, fleet.ErrUnavailable))
			assert.Empty(t, s.got(), "nothing sent")
			text := fmt.Sprintf("%v %+v %#v", err, err, err)
			assert.NotContains(t, text, "K3YK3YK3YK3Y")
			assert.Contains(t, err.Error(), "vultr: GET /v2/vpcs/v1: the API key holds a control character")
		})
	}
}

// An empty key (or one of white space only) sends no header: the public
// lists work, and the API answers the others 401 (fleet.ErrUnauthorized),
// not retried.
func TestEmptyKeySendsNoHeader(t *testing.T) {
	for _, given := range []string{"", " \n"} {
		s := newAuthServer(t)
		_, err := s.client(given).GetVPC(context.Background(), "6e1a9f4c-2b7d-4d8e-9a3b-0c5f7e2d1a90")
		require.NoError(t, err)
		assert.Equal(t, []string{"<none>"}, s.got())
	}
}
