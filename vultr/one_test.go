package vultr

import (
	"testing"

	"github.com/gpufleet/gpufleet/internal/api"
	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// one() unwraps the single-object answers: a missing object is a
// DecodeError for a create or get, nothing for an update, and a malformed
// object is a DecodeError.
func TestOneUnwrapsSingleObjectAnswers(t *testing.T) {
	c, mt := mockClient(t)
	mt.RegisterResponder("GET", testBase+"/v2/instances/a", httpmock.NewStringResponder(200, `{"other":{}}`))
	mt.RegisterResponder("GET", testBase+"/v2/instances/b", httpmock.NewStringResponder(200, `{"instance":{"id":7}}`))
	mt.RegisterResponder("PATCH", testBase+"/v2/instances/c", httpmock.NewStringResponder(202, ``))
	mt.RegisterResponder("GET", testBase+"/v2/instances/d", httpmock.NewStringResponder(200, `{"instance":{"id":"d","ram":1024}}`))

	var de *api.DecodeError
	_, err := c.GetInstance(t.Context(), "a")
	require.ErrorAs(t, err, &de)
	assert.Contains(t, err.Error(), `"instance"`)
	_, err = c.GetInstance(t.Context(), "b")
	require.ErrorAs(t, err, &de)
	got, err := c.UpdateInstance(t.Context(), "c", &InstanceUpdate{Label: "x"})
	require.NoError(t, err)
	assert.Nil(t, got)
	got, err = c.GetInstance(t.Context(), "d")
	require.NoError(t, err)
	assert.Equal(t, 1024, got.RAM)
}
