package fleet

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// "Release/MarkIdle give it back" (acceptance 3): an orchestrator whose
// job ended calls MarkIdle and at once Acquire for its next job. The node
// it just gave back is the fleet's only idle node; Acquire must hand it
// out, not answer ErrNoIdle until the loop has taken the idle mark (the
// orchestrator would grow the fleet and buy a new node, a new minimum on
// Hot Aisle, while a paid one is idle).
func TestAcquireRightAfterMarkIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _, _ := twoIdleA(t)
		a, err := m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		b, err := m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		passes(t, m, 5*time.Minute)
		require.NoError(t, m.MarkIdle(a.ID))
		got, err := m.Acquire(t.Context(), "f")
		assert.NoError(t, err, "the node given back with MarkIdle (%s) is idle; %s is busy", a.ID, b.ID)
		assert.Equal(t, a.ID, got.ID)
		_, err = m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, ErrNoIdle, "both nodes are handed out")
		require.NoError(t, m.Reconcile(t.Context()))
		assert.Equal(t, 2, statuses(m.Instances("f"))[StatusBusy], "the second busy mark came after the idle one")
	})
}

// The same before the loop carried anything out: Acquire, MarkIdle, Acquire,
// Acquire. The marks count in their order: the node comes back with
// MarkIdle and is handed out again (once); the other one once.
func TestAcquireMarkIdleAcquireBeforeTheLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m, _, _ := twoIdleA(t)
		a, err := m.Acquire(t.Context(), "f")
		require.NoError(t, err)
		require.NoError(t, m.MarkIdle(a.ID))
		got := map[string]int{}
		for range 2 {
			in, err := m.Acquire(t.Context(), "f")
			require.NoError(t, err)
			got[in.ID]++
		}
		assert.Len(t, got, 2, "each node handed out once after the idle mark: %v", got)
		_, err = m.Acquire(t.Context(), "f")
		assert.ErrorIs(t, err, ErrNoIdle, "both nodes are handed out")
		require.NoError(t, m.Reconcile(t.Context()))
		assert.Equal(t, 2, statuses(m.Instances("f"))[StatusBusy])
	})
}

// A mark recorded after the idle one takes the node again: MarkIdle then
// MarkBusy, or MarkIdle then Release, leaves nothing for Acquire (a
// MarkIdle after the Release does not undo it).
func TestAcquireCountsTheLastMarkAfterMarkIdle(t *testing.T) {
	for _, then := range []string{"busy", "release"} {
		t.Run(then, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m, _, insts := twoIdleA(t)
				for _, in := range insts {
					require.NoError(t, m.MarkBusy(in.ID))
				}
				passes(t, m, time.Minute)
				a := insts[0]
				require.NoError(t, m.MarkIdle(a.ID))
				if then == "busy" {
					require.NoError(t, m.MarkBusy(a.ID))
				} else {
					_, err := m.Release(t.Context(), a.ID)
					require.NoError(t, err)
					// Its release waits for the minimum's end: the mark is taken
					// (a job's end, here none), and the release stands.
					assert.NoError(t, m.MarkIdle(a.ID), "a node whose release waits takes a MarkIdle")
				}
				got, err := m.Acquire(t.Context(), "f")
				assert.ErrorIs(t, err, ErrNoIdle, "handed out %s", got.ID)
			})
		})
	}
}

// Acquire hands out only a node that can run a job: not one powered off,
// nor an orphan (records set by hand: the sim tests reach them through
// the providers, acquire_stopped_test.go).
func TestAcquireSkipsANodeThatCannotRunAJob(t *testing.T) {
	for _, c := range []struct {
		name string
		set  func(r *InstanceRecord)
	}{
		{"stopped", func(r *InstanceRecord) { r.Instance.Stopped = true }},
		{"orphan", func(r *InstanceRecord) { r.Orphan = true }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := newFakeProvider("hotaisle", vmOffer("hotaisle", 2.99, 30*time.Minute))
				m, _ := newTestManager(t, Config{Providers: []Provider{p}})
				require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1, IdleTimeout: time.Minute}))
				passes(t, m, 5*time.Minute)
				require.Equal(t, 1, statuses(m.Instances("f"))[StatusIdle])
				m.mu.Lock()
				for _, r := range m.byFleet["f"] {
					c.set(r)
				}
				m.mu.Unlock()
				got, err := m.Acquire(t.Context(), "f")
				assert.ErrorIs(t, err, ErrNoIdle, "handed out %s", got.ID)
			})
		})
	}
}

// foldMarks takes the marks in their order (stored ones by Seq): the last
// busy or idle mark decides, a release stands whatever comes after it, and
// a Delete of the fleet is reported.
func TestFoldMarks(t *testing.T) {
	marks, _, deleted := foldMarks([]intent{
		{kind: intentBusy, name: "a"}, {kind: intentIdle, name: "a"},
		{kind: intentIdle, name: "b"}, {kind: intentBusy, name: "b"},
		{kind: intentRelease, name: "c"}, {kind: intentIdle, name: "c"},
		{kind: intentDelete, name: "other"},
	}, "f", nil)
	assert.Equal(t, map[string]markState{"a": markIdle, "b": markBusy, "c": markReleased}, marks)
	assert.False(t, deleted)
	marks, _, deleted = foldMarks([]intent{
		{seq: 7, kind: intentBusy, name: "a"}, {seq: 5, kind: intentIdle, name: "a"}, {seq: 6, kind: intentDelete, name: "f"},
	}, "f", nil)
	assert.Equal(t, markBusy, marks["a"], "by Seq: the busy mark (7) came after the idle one (5)")
	assert.True(t, deleted)
}
