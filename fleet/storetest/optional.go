package storetest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// storeCase is one subtest of the Store contract.
type storeCase struct {
	name string
	f    func(t *testing.T, s fleet.Store)
}

// optionalCases are the contracts of the optional capabilities that a
// store of probe's type has (fleet.MetaCreator, fleet.RecordFinder).
func optionalCases(probe fleet.Store) []storeCase {
	var out []storeCase
	if _, ok := probe.(fleet.MetaCreator); ok {
		out = append(out, storeCase{"CreateMeta", testCreateMeta}, storeCase{"CreateMetaAtOnce", testCreateMetaAtOnce})
	}
	if _, ok := probe.(fleet.RecordFinder); ok {
		out = append(out, storeCase{"FindInstance", testFindInstance}, storeCase{"FindFleet", testFindFleet})
	}
	return out
}

func testCreateMeta(t *testing.T, s fleet.Store) {
	ctx, c := t.Context(), s.(fleet.MetaCreator)
	got, err := c.CreateMeta(ctx, fleet.MetaOwner, "ab12")
	require.NoError(t, err)
	assert.Equal(t, "ab12", got, "stored when absent")
	got, err = c.CreateMeta(ctx, fleet.MetaOwner, "cd34")
	require.NoError(t, err)
	assert.Equal(t, "ab12", got, "the stored value, not replaced")
	v, _, _ := s.Meta(ctx, fleet.MetaOwner)
	assert.Equal(t, "ab12", v)
	got, err = c.CreateMeta(ctx, "empty", "")
	require.NoError(t, err)
	assert.Empty(t, got)
	got, _ = c.CreateMeta(ctx, "empty", "x")
	assert.Empty(t, got, "an empty value is a value")
	require.NoError(t, s.PutMeta(ctx, fleet.MetaOwner, "ef56"))
	got, _ = c.CreateMeta(ctx, fleet.MetaOwner, "gh78")
	assert.Equal(t, "ef56", got, "PutMeta still replaces")
}

// Of callers creating one key at once with different values, exactly one
// value is stored and every caller gets it.
func testCreateMetaAtOnce(t *testing.T, s fleet.Store) {
	ctx, c := t.Context(), s.(fleet.MetaCreator)
	for round := range 5 {
		key := string(rune('a' + round))
		const callers = 8
		got := make([]string, callers)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range callers {
			wg.Go(func() {
				<-start
				v, err := c.CreateMeta(ctx, key, string(rune('0'+i)))
				assert.NoError(t, err)
				got[i] = v
			})
		}
		close(start)
		wg.Wait()
		stored, ok, err := s.Meta(ctx, key)
		require.NoError(t, err)
		require.True(t, ok)
		for i := range callers {
			assert.Equal(t, stored, got[i], "round %d caller %d", round, i)
		}
	}
}

// rental is an instance record of fleet "f" with a provider id.
func rental(requestID, providerID string, minutes int, st fleet.Status) fleet.InstanceRecord {
	r := Instance("f", requestID, at(minutes))
	r.Instance.ID, r.Instance.Status = providerID, st
	return r
}

func testFindInstance(t *testing.T, s fleet.Store) {
	ctx, f := t.Context(), s.(fleet.RecordFinder)
	for _, r := range []fleet.InstanceRecord{
		rental("r-old", "srv-1", 0, fleet.StatusIdle),
		rental("r-new", "srv-1", 5, fleet.StatusBusy),
		rental("r-gone", "srv-1", 9, fleet.StatusTerminated),
		rental("r-tie-a", "srv-2", 3, fleet.StatusIdle),
		rental("r-tie-b", "srv-2", 3, fleet.StatusIdle),
		rental("r-closed", "srv-3", 1, fleet.StatusTerminated),
		rental("srv-9", "vm-9", 1, fleet.StatusIdle),
		rental("r-9", "srv-9", 2, fleet.StatusIdle),
	} {
		require.NoError(t, s.PutInstance(ctx, r))
	}
	r, err := f.Instance(ctx, "r-old")
	require.NoError(t, err)
	assert.Equal(t, "srv-1", r.Instance.ID)
	assert.Equal(t, int64(1), r.Version)
	r.Instance.Status = fleet.StatusBusy
	require.NoError(t, s.PutInstance(ctx, r))
	r.Instance.Status = "mutated after the write"
	again, err := f.Instance(ctx, "r-old")
	require.NoError(t, err)
	assert.Equal(t, int64(2), again.Version)
	assert.Equal(t, fleet.StatusBusy, again.Instance.Status)
	all, err := s.Instances(ctx)
	require.NoError(t, err)
	assert.Equal(t, all[0], again, "the record Instances returns")

	for id, want := range map[string]string{
		"r-gone":  "r-gone",  // by request id, terminated or not
		"srv-1":   "r-new",   // open before closed, then the latest create
		"srv-2":   "r-tie-b", // same create time: the greater request id
		"srv-3":   "r-closed",
		"srv-9":   "srv-9", // a request id before a provider id
		"vm-9":    "srv-9",
		"r-tie-a": "r-tie-a",
	} {
		r, err := f.Instance(ctx, id)
		require.NoError(t, err, id)
		assert.Equal(t, want, r.Instance.RequestID, id)
	}
	for _, id := range []string{"", "srv", "r-", "SRV-1", "nothing"} {
		_, err := f.Instance(ctx, id)
		assert.ErrorIs(t, err, fleet.ErrNotFound, "%q", id)
	}
	require.NoError(t, s.DeleteInstance(ctx, "r-closed"))
	_, err = f.Instance(ctx, "srv-3")
	assert.ErrorIs(t, err, fleet.ErrNotFound, "deleted")

	pending := rental("r-pending", "", 12, fleet.StatusPending) // no provider id before the create answers
	require.NoError(t, s.PutInstance(ctx, pending))
	_, err = f.Instance(ctx, "")
	assert.ErrorIs(t, err, fleet.ErrNotFound, "an empty id names nothing")
	pending.Instance.ID, pending.Version = "srv-5", 1
	require.NoError(t, s.PutInstance(ctx, pending))
	r, err = f.Instance(ctx, "srv-5")
	require.NoError(t, err, "found by the provider id it was given")
	assert.Equal(t, "r-pending", r.Instance.RequestID)
	pending.Instance.ID, pending.Version = "srv-6", 2
	require.NoError(t, s.PutInstance(ctx, pending))
	_, err = f.Instance(ctx, "srv-5")
	assert.ErrorIs(t, err, fleet.ErrNotFound, "not by a provider id it no longer has")
	r, err = f.Instance(ctx, "srv-6")
	require.NoError(t, err)
	assert.Equal(t, int64(3), r.Version)
}

func testFindFleet(t *testing.T, s fleet.Store) {
	ctx, f := t.Context(), s.(fleet.RecordFinder)
	for _, name := range []string{"alpha", "beta"} {
		require.NoError(t, s.PutFleet(ctx, Fleet(name)))
	}
	b, err := f.Fleet(ctx, "beta")
	require.NoError(t, err)
	b.Spec.Nodes = 7
	require.NoError(t, s.PutFleet(ctx, b))
	b.Spec.Nodes = 8
	got, err := f.Fleet(ctx, "beta")
	require.NoError(t, err)
	assert.Equal(t, int64(2), got.Version)
	assert.Equal(t, 7, got.Spec.Nodes)
	all, err := s.Fleets(ctx)
	require.NoError(t, err)
	assert.Equal(t, all[1], got, "the record Fleets returns")
	for _, name := range []string{"", "alph", "gamma", "Alpha"} {
		_, err := f.Fleet(ctx, name)
		assert.ErrorIs(t, err, fleet.ErrNotFound, "%q", name)
	}
	require.NoError(t, s.DeleteFleet(ctx, "alpha"))
	_, err = f.Fleet(ctx, "alpha")
	assert.ErrorIs(t, err, fleet.ErrNotFound, "deleted")
}
