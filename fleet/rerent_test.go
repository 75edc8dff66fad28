package fleet_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const hotBMRelease = "DELETE /api/teams/{team}/bare_metal/{server}/"

// rerented brings fleet "f" (one Hot Aisle bare-metal node, one server in
// the pool) to idle, releases its server and waits until the replacement
// is idle: the same server, reserved again under its name. It returns the
// two instances.
func (e *env) rerented() (first, second fleet.Instance) {
	e.t.Helper()
	require.NoError(e.t, e.hot.SetQuantity("bm-mi300x-8", 1))
	require.NoError(e.t, e.m.Apply(e.t.Context(), spec("f", 1, hotType("bm-mi300x-8"))))
	require.True(e.t, e.runUntil(time.Hour, func() bool { return e.only("f").Status == fleet.StatusIdle }))
	first = e.only("f")
	_, err := e.m.Release(e.t.Context(), first.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
	require.NoError(e.t, err)
	require.True(e.t, e.runUntil(time.Hour, func() bool {
		a := activeOf(e.m.Instances("f"))
		return len(a) == 1 && a[0].RequestID != first.RequestID && a[0].Status == fleet.StatusIdle
	}), "replaced")
	second = activeOf(e.m.Instances("f"))[0]
	require.Equal(e.t, first.ID, second.ID, "the pool held one server: the replacement is the same server")
	return first, second
}

// A released Hot Aisle bare-metal server reserved again by the same fleet
// (same name, another request) is the new record's: the closed record of
// the first rental does not take it back when lists show the name again,
// and nothing releases it.
func TestARerentedServerIsNotTakenBackByItsClosedRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		_, second := e.rerented()
		e.run(2 * time.Hour)

		assert.Equal(t, 1, calls(e.hot.Calls(), hotBMRelease, 0), "released once: the first rental")
		a := activeOf(e.m.Instances("f"))
		require.Len(t, a, 1)
		assert.Equal(t, second.RequestID, a[0].RequestID)
		assert.Equal(t, fleet.StatusIdle, a[0].Status)
		assert.Equal(t, 1, live(e.hot.Resources(), "bare_metal"))
		for _, ev := range e.eventsOf(fleet.EventInstanceAdopted) {
			assert.NotContains(t, ev.Message, "listed again", "the closed record reopened")
		}
		require.NoError(t, e.m.Delete(t.Context(), "f", fleet.WithReleasePolicy(fleet.ReleaseNow)))
		require.True(t, e.runUntil(time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
		e.assertNothingLeft()
	})
}

// Calls by provider id reach the rental that holds the id now, never the
// closed record of an earlier rental of the same server.
func TestCallsByIDReachTheCurrentRental(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		_, second := e.rerented()
		for range 20 { // map order varies: every try must find the live record
			require.NoError(t, e.m.MarkBusy(second.ID))
			require.NoError(t, e.m.Reconcile(t.Context()))
			require.NoError(t, e.m.MarkIdle(second.ID))
			require.NoError(t, e.m.Reconcile(t.Context()))
		}
		_, err := e.m.Release(t.Context(), second.ID, fleet.WithReleasePolicy(fleet.ReleaseNow))
		require.NoError(t, err)
		require.True(t, e.runUntil(time.Hour, func() bool { return calls(e.hot.Calls(), hotBMRelease, 204) == 2 }),
			"the second rental released by its provider id")
	})
}

// reserveByHand reserves a Hot Aisle bare-metal server as a console user
// or another program would, with description as its label, and returns its
// name.
func (e *env) reserveByHand(description string) string {
	e.t.Helper()
	body, err := json.Marshal(map[string]any{"description": description,
		"specs": map[string]any{"gpus": []map[string]any{{"count": 8, "model": "MI300X"}}}})
	require.NoError(e.t, err)
	req, err := http.NewRequestWithContext(e.t.Context(), http.MethodPost,
		"https://admin.hotaisle.app/api/teams/"+sim.DefaultTeam+"/bare_metal/", bytes.NewReader(body))
	require.NoError(e.t, err)
	req.Header.Set("Authorization", "Token "+sim.DefaultAPIKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.hot.Client().Do(req)
	require.NoError(e.t, err)
	defer resp.Body.Close()
	var bm struct{ Name string }
	require.NoError(e.t, json.NewDecoder(resp.Body).Decode(&bm))
	require.Equal(e.t, http.StatusCreated, resp.StatusCode)
	return bm.Name
}

// closedFleet runs fleet "f" (one Hot Aisle bare-metal node, one server in
// the pool) to idle, deletes it at once and waits until it is gone: its
// record is closed, its server back in the pool. It returns the server's
// name.
func (e *env) closedFleet() string {
	e.t.Helper()
	require.NoError(e.t, e.hot.SetQuantity("bm-mi300x-8", 1))
	require.NoError(e.t, e.m.Apply(e.t.Context(), spec("f", 1, hotType("bm-mi300x-8"))))
	require.True(e.t, e.runUntil(time.Hour, func() bool { return e.only("f").Status == fleet.StatusIdle }))
	id := e.only("f").ID
	require.NoError(e.t, e.m.Delete(e.t.Context(), "f", fleet.WithReleasePolicy(fleet.ReleaseNow)))
	require.True(e.t, e.runUntil(time.Hour, func() bool { return len(e.m.Fleets()) == 0 }))
	require.Equal(e.t, 1, calls(e.hot.Calls(), hotBMRelease, 204))
	return id
}

// A server this Manager released, rented again by a console user (no
// label) or by another owner, is never taken for the closed record of the
// first rental: it is not released.
func TestAServerRentedAgainByOthersIsLeftAlone(t *testing.T) {
	for _, c := range []struct{ name, description string }{
		{"console user", ""},
		{"another owner", fleet.Label{Owner: "zz", Fleet: "g", RequestID: "0123456789ab"}.String()},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				id := e.closedFleet()
				require.Equal(t, id, e.reserveByHand(c.description))
				e.run(2 * time.Hour)
				assert.Equal(t, 1, calls(e.hot.Calls(), hotBMRelease, 0), "only the first rental released")
				assert.Equal(t, 1, live(e.hot.Resources(), "bare_metal"))
				assert.Zero(t, e.count(fleet.EventLabelRewritten))
			})
		})
	}
}

// A server rented again under this owner's label by a create no record
// knows (another process of the owner that crashed) is adopted like any
// labelled server, here as an orphan collected after its grace, not taken
// as the closed record's nor ignored. Its start is unknown: the release is
// tried without force, refused for the minimum (8 h, paid anyway), and
// lands once the minimum is over.
func TestOurLabelledRentalOfAClosedRecordsServerIsAdopted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{OrphanGrace: 10 * time.Minute})
		id := e.closedFleet()
		label := fleet.Label{Owner: testOwner, Fleet: "g", RequestID: fleet.NewRequestID()}
		require.Equal(t, id, e.reserveByHand(label.String()))
		require.True(t, e.runUntil(time.Hour, func() bool { return calls(e.hot.Calls(), hotBMRelease, 400) > 0 }),
			"the orphan's release tried after its grace")
		require.True(t, e.runUntil(9*time.Hour, func() bool { return calls(e.hot.Calls(), hotBMRelease, 204) == 2 }),
			"the orphan collected")
		orphans := e.eventsOf(fleet.EventOrphanFound)
		require.Len(t, orphans, 1)
		assert.Equal(t, id, orphans[0].InstanceID)
		assert.Zero(t, live(e.hot.Resources(), "bare_metal"))
	})
}

// A server destroyed out of band and rented at once by another owner,
// before any list missed it, is taken as vanished from its first rental's
// record (the label names another create): it is neither labelled back nor
// released.
func TestAServerDestroyedAndRentedByAnotherOwnerIsNotTakenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{})
		require.NoError(t, e.hot.SetQuantity("bm-mi300x-8", 1))
		require.NoError(t, e.m.Apply(t.Context(), spec("f", 1, hotType("bm-mi300x-8"))))
		require.True(t, e.runUntil(time.Hour, func() bool { return e.only("f").Status == fleet.StatusIdle }))
		id := e.only("f").ID
		require.NoError(t, e.hot.DestroyOutOfBand(id))
		theirs := fleet.Label{Owner: "zz", Fleet: "g", RequestID: "0123456789ab"}.String()
		require.Equal(t, id, e.reserveByHand(theirs))
		require.True(t, e.runUntil(time.Hour, func() bool { return e.count(fleet.EventInstanceVanished) == 1 }))
		require.NoError(t, e.m.Delete(t.Context(), "f", fleet.WithReleasePolicy(fleet.ReleaseNow)))
		e.run(time.Hour)
		assert.Empty(t, e.m.Fleets())
		assert.Zero(t, calls(e.hot.Calls(), hotBMRelease, 0), "their server is not released")
		assert.Zero(t, e.count(fleet.EventLabelRewritten), "nor labelled as ours")
		res := e.hot.LiveResources("bare_metal")
		require.Len(t, res, 1)
		assert.Equal(t, theirs, res[0].Description)
	})
}
