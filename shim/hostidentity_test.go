package shim_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/shim"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CHANGELOG ("shim.Starter implements it") and the godoc of
// fleet.InstanceForgetter, shim.HostIdentity, HostKeyForgetter and
// TrustOnFirstUse, checked as a user reads them. Holds today.
var _ fleet.InstanceForgetter = (*shim.Starter)(nil)

func TestHostIdentityShapesAsDocumented(t *testing.T) {
	created := time.Date(2026, 12, 1, 7, 0, 0, 0, time.FixedZone("x", 3600))
	assert.Equal(t, "enc1-bm1#req1", shim.HostIdentity(fleet.Instance{ID: "enc1-bm1", RequestID: "req1", Created: created}))
	assert.Equal(t, "enc1-bm1@2026-12-01T06:00:00Z", shim.HostIdentity(fleet.Instance{ID: "enc1-bm1", Created: created}),
		"RFC 3339, UTC")
	assert.Equal(t, "enc1-bm1", shim.HostIdentity(fleet.Instance{ID: "enc1-bm1"}))
}

func TestTrustOnFirstUseOverMemoryStoreForgets(t *testing.T) {
	store := shim.NewMemoryHostKeyStore()
	pol := shim.TrustOnFirstUse(store)
	f, ok := pol.(shim.HostKeyForgetter)
	require.True(t, ok, "TrustOnFirstUse implements HostKeyForgetter when its store does")
	_, isF := any(store).(shim.HostKeyForgetter)
	require.True(t, isF)
	assert.NoError(t, f.ForgetHostKey(context.Background(), "never-pinned"), "no pin is not an error")
}
