package fleet

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func findRec(req, id string, minute int, st Status) InstanceRecord {
	return InstanceRecord{Instance: Instance{RequestID: req, ID: id, Fleet: "f", Status: st,
		Created: time.Date(2026, 1, 1, 0, minute, 0, 0, time.UTC)}}
}

func TestPickInstance(t *testing.T) {
	recs := []InstanceRecord{
		findRec("r1", "srv", 0, StatusIdle),
		findRec("r2", "srv", 9, StatusTerminated),
		findRec("r3", "srv", 5, StatusTerminating),
		findRec("r4", "two", 1, StatusIdle),
		findRec("r5", "two", 1, StatusIdle),
		findRec("r6", "dead", 1, StatusTerminated),
		findRec("r7", "dead", 2, StatusTerminated),
		findRec("two", "other", 3, StatusTerminated),
	}
	for id, want := range map[string]string{
		"srv": "r3", "two": "two", "r4": "r4", "dead": "r7", "other": "two", "r2": "r2",
	} {
		got, ok := PickInstance(recs, id)
		require.True(t, ok, id)
		assert.Equal(t, want, got.Instance.RequestID, id)
	}
	for _, id := range []string{"", "sr", "R1", "nothing"} {
		_, ok := PickInstance(recs, id)
		assert.False(t, ok, id)
	}
	_, ok := PickInstance(nil, "r1")
	assert.False(t, ok)
	got, _ := PickInstance(recs[3:5], "two")
	assert.Equal(t, "r5", got.Instance.RequestID, "same create time: the greater request id")
}

// wholeReads counts whole-table reads of a MemoryLeaseStore; it keeps
// the store's RecordFinder.
type wholeReads struct {
	*MemoryLeaseStore
	n atomic.Int64
}

func (s *wholeReads) Instances(ctx context.Context) ([]InstanceRecord, error) {
	s.n.Add(1)
	return s.MemoryLeaseStore.Instances(ctx)
}

func (s *wholeReads) Fleets(ctx context.Context) ([]FleetRecord, error) {
	s.n.Add(1)
	return s.MemoryLeaseStore.Fleets(ctx)
}

// hiddenFinder is a LeaseStore without the optional capabilities.
type hiddenFinder struct{ LeaseStore }

// A replica that holds no fleet finds the record a call names through the
// store's RecordFinder (no whole-table read), and through a whole read
// when the store has none, with the same answers.
func TestNonHolderCallsOnAMemoryLeaseStore(t *testing.T) {
	s := &wholeReads{MemoryLeaseStore: NewMemoryLeaseStore(nil)}
	ctx := t.Context()
	require.NoError(t, s.PutFleet(ctx, FleetRecord{Spec: Spec{Name: "f", Nodes: 2}}))
	for _, r := range []InstanceRecord{
		findRec("r-old", "srv", 0, StatusTerminated), findRec("r-new", "srv", 4, StatusIdle),
		findRec("r-b", "srv-b", 2, StatusBusy), findRec("r-p", "srv-p", 3, StatusProvisioning),
	} {
		require.NoError(t, s.PutInstance(ctx, r))
	}
	p := newFakeProvider("vultr")
	var ms []*Manager
	for _, store := range []LeaseStore{s, hiddenFinder{s}} {
		m, err := NewManager(Config{Providers: []Provider{p}, Store: store, Owner: "t1", ReplicaID: "nh" + string(rune('0'+len(ms)))})
		require.NoError(t, err)
		t.Cleanup(m.Close)
		ms = append(ms, m)
	}
	s.n.Store(0)
	var answers [2][]string
	for i, m := range ms {
		for _, id := range []string{"srv", "r-old", "r-new", "srv-b", "r-p", "none", ""} {
			_, err := m.Release(ctx, id)
			answers[i] = append(answers[i], "release "+id+": "+errText(err), "busy "+id+": "+errText(m.MarkBusy(id)))
		}
		answers[i] = append(answers[i], "delete f: "+errText(m.Delete(ctx, "f")), "delete g: "+errText(m.Delete(ctx, "g")))
		if i == 0 {
			assert.Zero(t, s.n.Load(), "whole-table reads through the RecordFinder")
		}
	}
	assert.Positive(t, s.n.Load(), "whole-table reads without a RecordFinder")
	assert.Equal(t, answers[0], answers[1])
	assert.Contains(t, answers[0], "release srv: <nil>")
	assert.Contains(t, answers[0], `release r-old: gpufleet: instance "r-old" (gone or unknown): not found`)
	ins, err := s.Intents(ctx, "f")
	require.NoError(t, err)
	var named []string
	for _, in := range ins[:len(ins)/2] {
		named = append(named, string(in.Kind)+" "+in.InstanceID)
	}
	// Each MarkBusy comes after a Release of its node: refused (its Release
	// is recorded), so only the releases and the Delete are.
	assert.Equal(t, []string{"release r-new", "release r-new", "release r-b", "release r-p", "delete "}, named)
	assert.Contains(t, answers[0], "busy r-new: gpufleet: instance r-new is terminating, not ready (its release is recorded)")
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}
