package fleet_test

import (
	"sort"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// vultrLabels are the labels of the live Vultr servers, by id.
func (e *env) vultrLabels() map[string]string {
	out := map[string]string{}
	for _, r := range e.vultr.Resources() {
		if r.Live() && (r.Kind == "instance" || r.Kind == "bare_metal") {
			out[r.ID] = r.Label
		}
	}
	return out
}

type tagCase struct {
	name  string
	fleet string
	nodes int
	req   fleet.Requirements
	label string
	boot  time.Duration
}

// Servers of one Vultr fleet whose labels were removed (or edited) in the
// console, then a restart without the Store: every one is adopted by its
// tags when the fleet is applied again, none created again, and each gets
// a gpufleet label back.
func TestVultrRelabelledServersAdoptedByTagsAfterLostStore(t *testing.T) {
	tagCases(t, []tagCase{
		{"two VMs, labels removed", "f", 2, vultrVM("ewr"), "", 10 * time.Minute},
		{"two VMs, labels edited", "f", 2, vultrVM("ewr"), "renamed", 10 * time.Minute},
		{"bare metal, label removed", "b", 1, vultrType(mi300x), "", 70 * time.Minute},
	})
}

// The same for a fleet whose name starts with "owner-" (valid by
// ValidateFleetName), whose fleet tag "gpufleet-owner-x" also reads as an
// owner tag: the label tag says who it is, so it is adopted, not created a
// second time beside a first one left billing.
func TestVultrFleetNamedOwnerDashAdoptedByTagsAfterLostStore(t *testing.T) {
	tagCases(t, []tagCase{
		{"fleet named owner-x", "owner-x", 1, vultrVM("ewr"), "", 10 * time.Minute},
	})
}

func tagCases(t *testing.T, cases []tagCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{OrphanGrace: time.Minute, Release: fleet.ReleaseNow})
				require.NoError(t, e.m.Apply(t.Context(), spec(c.fleet, c.nodes, c.req)))
				require.True(t, e.runUntil(c.boot, func() bool {
					n := 0
					for _, in := range e.m.Instances(c.fleet) {
						if in.Status == fleet.StatusIdle {
							n++
						}
					}
					return n == c.nodes
				}))
				want := idsOf(activeOf(e.m.Instances(c.fleet)))
				sort.Strings(want)
				e.m.Close()
				for _, id := range want {
					require.NoError(t, e.vultr.RelabelOutOfBand(id, c.label, nil))
				}
				e.m = e.manager(fleet.NewMemoryStore())
				require.NoError(t, e.m.Apply(t.Context(), spec(c.fleet, c.nodes, c.req)))
				e.run(time.Hour)
				got := idsOf(activeOf(e.m.Instances(c.fleet)))
				sort.Strings(got)
				assert.Equal(t, want, got, "adopted by their tags, not created again")
				assert.Equal(t, c.nodes, e.liveServers())
				labels := e.vultrLabels()
				for _, id := range want {
					l, ok := fleet.ParseLabel(labels[id])
					assert.True(t, ok, "label of %s written again: %q", id, labels[id])
					assert.Equal(t, c.fleet, l.Fleet)
				}
			})
		})
	}
}
