package vultr

import (
	"fmt"
	"net/http"
	"strings"
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

// endlessPages answers GET /v2/instances with a fresh next cursor each time:
// page i (from 1) holds items(i) instances and states meta.total total. Page
// 1000 ends the list, so that a client without the rules ends with no error.
func endlessPages(t *testing.T, mt *httpmock.MockTransport, total int, items func(i int) int) *int {
	calls := 0
	mt.RegisterResponder("GET", testBase+"/v2/instances", func(r *http.Request) (*http.Response, error) {
		calls++
		var b strings.Builder
		b.WriteString(`{"instances":[`)
		for j := range items(calls) {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"id":"i%d-%d"}`, calls, j)
		}
		next := fmt.Sprintf("c%d", calls)
		if calls >= 1000 {
			next = ""
		}
		fmt.Fprintf(&b, `],"meta":{"total":%d,"links":{"next":%q,"prev":""}}}`, total, next)
		return httpmock.NewStringResponse(200, b.String()), nil
	})
	return &calls
}

func TestListStopsOnEmptyPageWithNextCursor(t *testing.T) {
	c, mt := mockClient(t, WithPerPage(2))
	calls := endlessPages(t, mt, 1, func(i int) int { return 2 - min(i, 2) }) // 1 item, then empty pages
	got, err := Collect(c.ListInstances(t.Context(), nil))
	assert.ErrorIs(t, err, ErrEndlessList)
	assert.NotErrorIs(t, err, ErrRepeatedCursor)
	assert.Len(t, got, 1, "the item read is delivered")
	assert.Equal(t, 2, *calls, "stops at the first empty page")
}

func TestListStopsWhenItemsFarExceedTotal(t *testing.T) {
	c, mt := mockClient(t, WithPerPage(2))
	calls := endlessPages(t, mt, 1, func(int) int { return 2 })
	got, err := Collect(c.ListInstances(t.Context(), nil))
	assert.ErrorIs(t, err, ErrEndlessList)
	assert.Len(t, got, 4, "total 1 plus a page of slack is passed on page 2")
	assert.Equal(t, 2, *calls)
}

func TestListToleratesTotalGrowingByLessThanAPage(t *testing.T) {
	c, mt := mockClient(t, WithPerPage(2))
	pagedVPCs(t, mt, map[string][]string{"": {"a", "b"}, "Yw==": {"c", "d"}, "ZQ==": {"e", "f"}, "Zg==": {"g"}},
		map[string]string{"": "Yw==", "Yw==": "ZQ==", "ZQ==": "Zg=="}) // meta.total 5, 7 items
	vpcs, err := Collect(c.ListVPCs(t.Context()))
	require.NoError(t, err)
	assert.Len(t, vpcs, 7)
}

func TestListStopsAfterMaxPages(t *testing.T) {
	assert.Equal(t, MaxListPages, maxListPages)
	maxListPages = 50 // the same rule as 10,000, in less time
	t.Cleanup(func() { maxListPages = MaxListPages })
	c, mt := mockClient(t, WithPerPage(1))
	calls := endlessPages(t, mt, 0, func(int) int { return 1 }) // total 0: unknown
	got, err := Collect(c.ListInstances(t.Context(), nil))
	assert.ErrorIs(t, err, ErrEndlessList)
	assert.Len(t, got, 50)
	assert.Equal(t, 50, *calls)
}
