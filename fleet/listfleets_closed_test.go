package fleet

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Tester AV: doc.go ("After [Manager.Close] every method returns
// [ErrClosed]"), CloseContext's doc ("Every method returns ErrClosed after
// Close") and README ("After `Close`, every method returns `ErrClosed`")
// promise ErrClosed from every method with an error result. ListFleets
// answered the fleets and nil after Close on a Manager alone (before).
func TestListFleetsAfterCloseAnswersErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		m, _ := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, time.Minute)
		m.Close()
		_, err := m.ListFleets(t.Context())
		assert.ErrorIs(t, err, ErrClosed, "ListFleets after Close")
	})
}

// The same with replicas: ListFleets reads the shared store after Close.
func TestReplicaListFleetsAfterCloseAnswersErrClosed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		ls := NewMemoryLeaseStore(nil)
		m, _ := newTestManager(t, Config{Providers: []Provider{p}, Store: ls, Owner: "av", ReplicaID: "r1"})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, time.Minute)
		m.Close()
		_, err := m.ListFleets(t.Context())
		assert.ErrorIs(t, err, ErrClosed, "ListFleets after Close (replica)")
	})
}
