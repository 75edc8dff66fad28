package main

import (
	"bytes"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// quickstartWithFaults runs a Vultr-only quickstart (two bare-metal nodes,
// one Hot Aisle VM) with more faults armed, and returns its output.
func quickstartWithFaults(t *testing.T, more func(*sims) error) string {
	t.Helper()
	var out bytes.Buffer
	synctest.Test(t, func(t *testing.T) {
		cfg, err := parseFlags([]string{"-plain", "-hotaisle-nodes", "1", "-interval", "1m"}, io.Discard)
		require.NoError(t, err)
		cfg.moreFaults = more
		_, err = quickstart(t.Context(), cfg, noEnv, &out)
		require.NoError(t, err)
	})
	return out.String()
}

// Vultr answers "not currently active" to every delete, for ever: the
// teardown gives up and both servers leak. The report must not say the
// deletes were retried until accepted.
func TestReportDoesNotClaimRefusedDeletesAccepted(t *testing.T) {
	out := quickstartWithFaults(t, func(s *sims) error { return s.vultr.NotActiveWindow("vbm-*", 100*time.Hour) })
	assert.Contains(t, out, "leaked: 3")
	assert.Regexp(t, `\n  vultr +\d+ deletes refused as "not currently active"; retried with backoff: 2 servers never confirmed gone\.\n`, out)
	assert.NotContains(t, out, "until accepted")
}

// Every VPC delete is refused as if members lingered: the VPC leaks. The
// report must not say it was deleted once they were gone.
func TestReportDoesNotClaimRefusedVPCDeletesDone(t *testing.T) {
	out := quickstartWithFaults(t, func(s *sims) error { return s.vultr.RefuseVPCDelete(0) })
	assert.Contains(t, out, "leaked: 1\n  vpc ")
	assert.Regexp(t, `\n  vultr +\d+ VPC deletes refused while members lingered; retried: 1 VPC never deleted\.\n`, out)
	assert.NotContains(t, out, "once they were gone")
}

// Three refused VPC deletes, then the VPC goes: the report says so.
func TestReportSaysRefusedVPCDeletesDoneWhenTheyWere(t *testing.T) {
	out := quickstartWithFaults(t, func(s *sims) error { return s.vultr.RefuseVPCDelete(3) })
	assert.Contains(t, out, "\n  vultr     3 VPC deletes refused while members lingered; retried once they were gone.\n")
	assert.Contains(t, out, "leaked: 0\n")
}

// What became of refused calls is read from the events, per server, VPC or
// fleet: confirmed, given up, or neither.
func TestFaultOutcomesFromEvents(t *testing.T) {
	v := fleet.ProviderVultr
	ev := evidence{events: []fleet.Event{
		{Type: fleet.EventOfferSkipped, Fleet: "a", Provider: v},
		{Type: fleet.EventInstanceCreated, Fleet: "a", Provider: v, InstanceID: "s1"},
		{Type: fleet.EventOfferSkipped, Fleet: "b", Provider: v},
		{Type: fleet.EventNoOffers, Fleet: "b"},
		{Type: fleet.EventInstanceCreated, Fleet: "b", Provider: v, InstanceID: "s2"}, // later, after the backoff
		{Type: fleet.EventNoOffers, Fleet: "a"},                                       // a's refusal was answered already
		{Type: fleet.EventOfferSkipped, Fleet: "c", Provider: v},
		{Type: fleet.EventVPCAttached, InstanceID: "s1"},
		{Type: fleet.EventVPCUnavailable, InstanceID: "s2"},
		{Type: fleet.EventInstanceTerminated, InstanceID: "s1"},
		{Type: fleet.EventVPCDeleted, Message: "vpc1 (orphan)"},
	}}
	soldOut := faults[0]
	o := ev.outcome(soldOut, []refusal{{call: "Create", subject: "a", provider: v}, {call: "Create", subject: "b", provider: v},
		{call: "Create", subject: "c", provider: v}})
	assert.Equal(t, outcome{ok: 1, gaveUp: 1, open: 1, unit: soldOut.unit}, o)
	assert.Equal(t, "3 creates refused as sold out; another offer was taken for 1 fleet; every other offer failed too for 1 fleet (NoOffers); "+
		"no other offer was taken for 1 fleet before the run ended.", soldOut.say(3, o))

	attach := faults[1]
	o = ev.outcome(attach, []refusal{{call: "AttachVPC", subject: "s1"}, {call: "AttachVPC", subject: "s1"}, {call: "AttachVPC", subject: "s2"},
		{call: "InstanceVPCs", subject: "s3"}})
	assert.Equal(t, outcome{ok: 1, gaveUp: 1, open: 1, unit: attach.unit}, o)
	assert.Equal(t, "4 VPC attaches failed; retried: listing its VPCs confirmed it on 1 server; given up on 1 server, which ran without the VPC "+
		"(VPCUnavailable); not confirmed before release on 1 server.", attach.say(4, o))
	assert.Equal(t, "2 VPC attaches failed; each was retried until listing the server's VPCs confirmed it.", attach.say(2, outcome{ok: 1}))

	locked := faults[2]
	o = ev.outcome(locked, []refusal{{call: "AttachVPC", subject: "s1"}, {call: "Delete", subject: "s1"}, {call: "Delete", subject: "s2"}})
	assert.Equal(t, outcome{ok: 1, open: 1, unit: locked.unit}, o, "s1 attached and gone; s2 never confirmed gone")
	assert.Equal(t, "3 calls refused while the server was locked after boot; retried: went through on 1 server; never went through on 1 server.",
		locked.say(3, o))

	inUse := faults[5]
	assert.Equal(t, outcome{ok: 1, open: 1, unit: inUse.unit}, ev.outcome(inUse, []refusal{{call: "DeleteVPC", subject: "vpc1"}, {call: "DeleteVPC", subject: "vpc2"}}))

	m := newMeter()
	m.note(v, "List", "", fleet.ErrRateLimited)
	m.note(v, "List", "", nil)
	m.note(v, "Offers", "", fleet.ErrRateLimited)
	limited := faults[6]
	o = evidence{m: m}.outcome(limited, m.refusalsOf(v, limited.name))
	assert.Equal(t, outcome{ok: 1, open: 1, unit: limited.unit}, o)
	assert.Equal(t, "2 calls were rate limited; retried after Retry-After: 1 call then went through; 1 call never went through.", limited.say(2, o))
}

// Releases held for Hot Aisle's minimum reservation and then forced by a
// teardown did not wait for its end.
func TestMinimumSentenceTellsForcedReleases(t *testing.T) {
	h := fleet.ProviderHotAisle
	ev := evidence{events: []fleet.Event{
		{Type: fleet.EventReleaseDeferred, Provider: h, InstanceID: "a"},
		{Type: fleet.EventReleaseDeferred, Provider: h, InstanceID: "b"},
		{Type: fleet.EventReleaseForced, Provider: h, InstanceID: "b"},
		{Type: fleet.EventReleaseForced, Provider: h, InstanceID: "c"}, // never held
	}}
	forced := ev.forcedAfterHold(h)
	assert.Equal(t, 1, forced)
	unit := [2]string{"server", "servers"}
	assert.Equal(t, "1 release waited for the end of the minimum reservation (paid anyway); 1 release held for the minimum was forced before it ended (the rest of it paid anyway).",
		minimumSentence(0, 2, forced, outcome{}))
	assert.Equal(t, "2 releases were refused before the minimum reservation ended, and retried: 1 server confirmed gone; 1 server never confirmed gone.",
		minimumSentence(2, 0, 0, outcome{ok: 1, open: 1, unit: unit}))
}
