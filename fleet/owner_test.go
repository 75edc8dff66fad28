package fleet

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// staleMeta answers its first owner read "none stored", as a read made
// just before another Manager stored its owner does.
type staleMeta struct {
	*MemoryStore
	once sync.Once
}

func (s *staleMeta) Meta(ctx context.Context, key string) (string, bool, error) {
	stale := false
	s.once.Do(func() { stale = key == MetaOwner })
	if stale {
		return "", false, nil
	}
	return s.MemoryStore.Meta(ctx, key)
}

// plainStore hides every optional capability of a MemoryStore.
type plainStore struct{ Store }

// A Manager that read "no owner" just before another stored its owner
// does not overwrite it: the create is conditional, and a configured
// owner that lost is refused with ErrOwnerConflict naming both.
func TestSettleOwnerLosesToAnOwnerStoredSinceItsRead(t *testing.T) {
	s := &staleMeta{MemoryStore: NewMemoryStore()}
	require.NoError(t, s.PutMeta(t.Context(), MetaOwner, "aa1"))
	_, err := settleOwner(t.Context(), s, "bb2")
	require.ErrorIs(t, err, ErrOwnerConflict)
	var oc *OwnerConflictError
	require.ErrorAs(t, err, &oc)
	assert.Equal(t, OwnerConflictError{Stored: "aa1", Configured: "bb2"}, *oc)
	assert.Contains(t, err.Error(), `the store belongs to owner "aa1", not "bb2"`)
	v, _, _ := s.MemoryStore.Meta(t.Context(), MetaOwner)
	assert.Equal(t, "aa1", v, "the first owner stays")
}

// Without a configured owner, a Manager whose read was stale takes the
// owner stored meanwhile rather than its new random one.
func TestSettleOwnerWithoutConfigTakesTheOneStoredSinceItsRead(t *testing.T) {
	s := &staleMeta{MemoryStore: NewMemoryStore()}
	require.NoError(t, s.PutMeta(t.Context(), MetaOwner, "cc3"))
	got, err := settleOwner(t.Context(), s, "")
	require.NoError(t, err)
	assert.Equal(t, "cc3", got)
}

// Managers settling different owners on one store at once: exactly one
// wins, every other is refused and names the winner; those without a
// configured owner take the winner's.
func TestSettleOwnerAtOnceOnAMemoryStore(t *testing.T) {
	for round := range 20 {
		s := NewMemoryStore()
		configured := []string{"o1", "o2", "o3", "", ""}
		got := make([]string, len(configured))
		errs := make([]error, len(configured))
		var wg sync.WaitGroup
		for i, c := range configured {
			wg.Go(func() { got[i], errs[i] = settleOwner(context.Background(), s, c) })
		}
		wg.Wait()
		stored, _, _ := s.Meta(t.Context(), MetaOwner)
		for i, c := range configured {
			switch {
			case c == "" || c == stored:
				require.NoError(t, errs[i], "round %d: %q", round, c)
				assert.Equal(t, stored, got[i], "round %d", round)
			default:
				var oc *OwnerConflictError
				require.ErrorAs(t, errs[i], &oc, "round %d: %q", round, c)
				assert.Equal(t, stored, oc.Stored)
			}
		}
	}
}

// A Store without MetaCreator is still read then written: one Manager
// after the other, the second owner is refused with the typed error.
func TestSettleOwnerOnAStoreWithoutMetaCreator(t *testing.T) {
	s := plainStore{NewMemoryStore()}
	_, isCreator := Store(s).(MetaCreator)
	require.False(t, isCreator)
	got, err := settleOwner(t.Context(), s, "")
	require.NoError(t, err)
	require.NoError(t, ValidateOwner(got), "a new random owner")
	again, err := settleOwner(t.Context(), s, got)
	require.NoError(t, err)
	assert.Equal(t, got, again)
	_, err = settleOwner(t.Context(), s, "zz9")
	require.ErrorIs(t, err, ErrOwnerConflict)
}

// NewManager returns the typed error for a Store of another owner.
func TestNewManagerOnAStoreOfAnotherOwner(t *testing.T) {
	store := NewMemoryStore()
	p := newFakeProvider("vultr")
	m, err := NewManager(Config{Providers: []Provider{p}, Store: store, Owner: "first"})
	require.NoError(t, err)
	m.Close()
	for _, owner := range []string{"second", "firs", "first1"} {
		_, err = NewManager(Config{Providers: []Provider{p}, Store: store, Owner: owner})
		require.ErrorIs(t, err, ErrOwnerConflict, owner)
		assert.Equal(t, fmt.Sprintf("gpufleet: the store belongs to owner %q, not %q: use another store, or the same owner", "first", owner), err.Error())
	}
}
