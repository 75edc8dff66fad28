package vultr

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pagedVPCs answers GET /v2/vpcs from pages keyed by cursor ("" is the
// first); next[cursor] is the meta.links.next to send.
func pagedVPCs(t *testing.T, mt *httpmock.MockTransport, pages map[string][]string, next map[string]string) *[]string {
	var cursors []string
	mt.RegisterResponder("GET", testBase+"/v2/vpcs", func(r *http.Request) (*http.Response, error) {
		cur := r.URL.Query().Get("cursor")
		cursors = append(cursors, cur)
		assert.Equal(t, "2", r.URL.Query().Get("per_page"))
		body := `{"vpcs":[`
		for i, id := range pages[cur] {
			if i > 0 {
				body += ","
			}
			body += fmt.Sprintf(`{"id":%q,"region":"ewr"}`, id)
		}
		body += fmt.Sprintf(`],"meta":{"total":5,"links":{"next":%q,"prev":""}}}`, next[cur])
		return httpmock.NewStringResponse(200, body), nil
	})
	return &cursors
}

func TestListFollowsCursorsToTheEnd(t *testing.T) {
	c, mt := mockClient(t, WithPerPage(2))
	cursors := pagedVPCs(t, mt,
		map[string][]string{"": {"a", "b"}, "Yw==": {"c", "d"}, "ZQ==": {"e"}},
		map[string]string{"": "Yw==", "Yw==": "ZQ=="})
	vpcs, err := Collect(c.ListVPCs(t.Context()))
	require.NoError(t, err)
	var ids []string
	for _, v := range vpcs {
		ids = append(ids, v.ID)
	}
	assert.Equal(t, []string{"a", "b", "c", "d", "e"}, ids)
	assert.Equal(t, []string{"", "Yw==", "ZQ=="}, *cursors)
}

func TestListYieldsErrorOnRepeatedCursor(t *testing.T) {
	c, mt := mockClient(t, WithPerPage(2))
	cursors := pagedVPCs(t, mt,
		map[string][]string{"": {"a", "b"}, "Yw==": {"c", "d"}, "ZQ==": {"e"}},
		map[string]string{"": "Yw==", "Yw==": "ZQ==", "ZQ==": "Yw=="})
	vpcs, err := Collect(c.ListVPCs(t.Context()))
	assert.ErrorIs(t, err, ErrRepeatedCursor)
	assert.Len(t, vpcs, 5, "items before the loop are delivered")
	assert.Len(t, *cursors, 3, "the repeated page is not fetched")
}

func TestListStopsFetchingWhenTheLoopBreaks(t *testing.T) {
	c, mt := mockClient(t, WithPerPage(2))
	cursors := pagedVPCs(t, mt,
		map[string][]string{"": {"a", "b"}, "Yw==": {"c", "d"}},
		map[string]string{"": "Yw==", "Yw==": "ZQ=="})
	for v, err := range c.ListVPCs(t.Context()) {
		require.NoError(t, err)
		if v.ID == "b" {
			break
		}
	}
	assert.Equal(t, []string{""}, *cursors)
}

func TestListYieldsAPIErrorOfALaterPage(t *testing.T) {
	c, mt := mockClient(t, WithPerPage(2), WithRetry(1, 0, 0))
	mt.RegisterResponder("GET", testBase+"/v2/instances", func(r *http.Request) (*http.Response, error) {
		if r.URL.Query().Get("cursor") == "" {
			return httpmock.NewStringResponse(200,
				`{"instances":[{"id":"a"},{"id":"b"}],"meta":{"total":4,"links":{"next":"bg==","prev":""}}}`), nil
		}
		return httpmock.NewStringResponse(403, `{"error":"Unauthorized IP address","status":403}`), nil
	})
	var ids []string
	var errs []error
	for inst, err := range c.ListInstances(t.Context(), nil) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ids = append(ids, inst.ID)
	}
	assert.Equal(t, []string{"a", "b"}, ids)
	require.Len(t, errs, 1, "one error, then the iteration ends")
	assert.ErrorIs(t, errs[0], fleet.ErrForbidden)
}

func TestListDecodeErrorIsReported(t *testing.T) {
	c, mt := mockClient(t)
	record(t, mt, "GET", "/v2/ssh-keys", 200, `{"ssh_keys":[{"id":1`)
	_, err := Collect(c.ListSSHKeys(t.Context()))
	var de *DecodeError
	assert.ErrorAs(t, err, &de)
}
