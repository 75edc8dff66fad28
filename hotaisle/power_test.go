package hotaisle

import (
	"context"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// PowerOnBareMetal posts to the server's power/power_on/ route (204).
func TestPowerOnBareMetalPath(t *testing.T) {
	c, m := newMock(t)
	m.on("POST", "/teams/acme/bare_metal/enc1-gpu012/power/power_on/", 204, "")
	require.NoError(t, c.PowerOnBareMetal(context.Background(), "enc1-gpu012"))
	r := m.last(t)
	assert.Equal(t, "POST", r.Method)
	assert.Equal(t, "/api/teams/acme/bare_metal/enc1-gpu012/power/power_on/", r.RawPath)
	assert.Equal(t, 1, m.count(), "never retried")
}

// Start (fleet.Restarter) powers a bare-metal server on: straight to its
// power route once the Provider knows the name is a server, after a 404
// from the VM start route otherwise; a VM is started by its start route.
func TestProviderStartPowersBareMetalOn(t *testing.T) {
	c, m := newMock(t)
	m.on("POST", "/teams/acme/virtual_machines/bm1/start/", 404, `"Not Found: Resource not found"`)
	m.on("POST", "/teams/acme/bare_metal/bm1/power/power_on/", 204, "")
	m.on("POST", "/teams/acme/virtual_machines/vm1/start/", 204, "")
	p := NewProvider(c, WithBareMetal(true))
	var _ fleet.Restarter = p

	require.NoError(t, p.Start(context.Background(), "bm1"), "unknown kind: the VM route, then the server's")
	assert.Equal(t, 2, m.count())
	assert.Equal(t, "/api/teams/acme/bare_metal/bm1/power/power_on/", m.last(t).RawPath)

	p.remember("bm1", true)
	require.NoError(t, p.Start(context.Background(), "bm1"))
	assert.Equal(t, 3, m.count(), "a known server: one call")
	assert.Equal(t, "/api/teams/acme/bare_metal/bm1/power/power_on/", m.last(t).RawPath)

	p.remember("vm1", false)
	require.NoError(t, p.Start(context.Background(), "vm1"))
	assert.Equal(t, "/api/teams/acme/virtual_machines/vm1/start/", m.last(t).RawPath)

	m.on("POST", "/teams/acme/virtual_machines/gone/start/", 404, `"Not Found: Resource not found"`)
	m.on("POST", "/teams/acme/bare_metal/gone/power/power_on/", 404, "server not found or not assigned to team")
	assert.ErrorIs(t, p.Start(context.Background(), "gone"), fleet.ErrNotFound)
}
