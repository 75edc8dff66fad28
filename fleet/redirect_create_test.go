package fleet_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/hotaisle"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seeOtherAfterCommit passes the first POST to path through to the fake
// (the create takes effect) and answers it 303 See Other, as a front that
// applies Post/Redirect/Get would; every other call goes through as is.
type seeOtherAfterCommit struct {
	base http.RoundTripper
	path string
	mu   sync.Mutex
	done bool
}

func (s *seeOtherAfterCommit) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost || !strings.HasSuffix(req.URL.Path, s.path) {
		return resp, err
	}
	s.mu.Lock()
	first := !s.done
	s.done = true
	s.mu.Unlock()
	if !first {
		return resp, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return &http.Response{StatusCode: http.StatusSeeOther, Status: "303 See Other", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Location": {req.URL.Path}}, Body: http.NoBody, Request: req}, nil
}

// Tester E probe. A create answered with a redirect (not followed, typed
// ErrInvalidRequest since today) may have taken effect: a 303 is how a
// front applying Post/Redirect/Get answers a POST it processed. The
// Manager takes ErrInvalidRequest from a create as proof that nothing was
// created (definiteCreateFailure), drops the request and creates again, so
// the first server is found later by its label and one of the two is
// released: a second create and a billed minimum nobody asked for (an hour on
// Vultr, 30-60 minutes on Hot Aisle VMs). The design's rule: a create is never
// retried blindly; only a refusal that proves nothing was created lets the
// Manager create again without looking the first up by its label.
// On Hot Aisle VMs it is worse: the label is written after the provision,
// and a create taken as refused is never labelled nor looked up as an
// uncertain create, so its VM stays unlabelled ("not created by gpufleet;
// left alone") and bills after the fleet is deleted.
// Expected: one create reaches the cloud for a one-node fleet, and nothing
// is left once the fleet is deleted.
func TestCreateAnsweredWithARedirectIsNotCreatedTwice(t *testing.T) {
	for _, cloud := range []string{"vultr", "hotaisle"} {
		t.Run(cloud, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				var p fleet.Provider
				req, route := vultrType(vm), "POST /v2/instances" // any region: more than one offer
				if cloud == "vultr" {
					rt := &seeOtherAfterCommit{base: e.vultr.Client().Transport, path: "/v2/instances"}
					p = vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(&http.Client{Transport: rt})))
				} else {
					rt := &seeOtherAfterCommit{base: e.hot.Client().Transport, path: "/virtual_machines/"}
					p = hotaisle.NewProvider(hotaisle.New(sim.DefaultAPIKey, sim.DefaultTeam,
						hotaisle.WithHTTPClient(&http.Client{Transport: rt})), hotaisle.WithBareMetal(true))
					req, route = hotType("vm-mi300x-1", "vm-mi300x-2"), hotCreate
				}
				e.m = e.managerWith(fleet.Config{Providers: []fleet.Provider{p}, Owner: testOwner})
				require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, req)))
				e.run(3 * time.Hour)

				log := append(e.vultr.Calls(), e.hot.Calls()...)
				assert.Equal(t, 1, calls(log, route, 0),
					"one create for one node: the redirected create took effect")
				assert.Equal(t, 1, e.liveServers(), "one server for one node")
				require.NoError(t, e.m.Delete(t.Context(), "f", fleet.WithReleasePolicy(fleet.ReleaseNow)))
				require.True(t, e.runUntil(2*time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
				e.run(time.Hour)
				e.assertNothingLeft() // Hot Aisle: the redirected VM was never labelled, and nothing releases it
			})
		})
	}
}
