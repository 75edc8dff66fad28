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
// store of probe's type has (fleet.MetaCreator).
func optionalCases(probe fleet.Store) []storeCase {
	var out []storeCase
	if _, ok := probe.(fleet.MetaCreator); ok {
		out = append(out, storeCase{"CreateMeta", testCreateMeta}, storeCase{"CreateMetaAtOnce", testCreateMetaAtOnce})
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
