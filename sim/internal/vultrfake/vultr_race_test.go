package vultrfake

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVultrConcurrentUse runs API calls and inspection from many goroutines
// at once (run with -race).
func TestVultrConcurrentUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t, WithVultrTiming("*", VultrTiming{}))
		vpc := h.vpc("ewr")
		var wg sync.WaitGroup
		for g := 0; g < 8; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 10; i++ {
					label := fmt.Sprintf("g%d-%d", g, i)
					id := h.create("vc2-1c-1gb", "ewr", map[string]any{"label": label, "attach_vpc": []string{vpc}})["id"].(string)
					h.obj("GET", "/v2/instances?label="+label, nil, http.StatusOK)
					h.obj("POST", "/v2/instances/"+id+"/vpcs/detach", map[string]any{"vpc_id": vpc}, http.StatusNoContent)
					h.obj("DELETE", "/v2/instances/"+id, nil, http.StatusNoContent)
					_ = h.v.Snapshot()
				}
			}()
		}
		wg.Wait()
		time.Sleep(time.Minute)
		assert.Empty(t, h.obj("GET", "/v2/instances", nil, 200)["instances"])
		res := h.v.Resources()
		require.Len(t, res, 81)
		ips := map[string]bool{}
		for _, s := range h.v.st.servers {
			assert.False(t, ips[s.mainIP], "main_ip %s given twice", s.mainIP)
			ips[s.mainIP] = true
		}
		h.obj("DELETE", "/v2/vpcs/"+vpc, nil, http.StatusNoContent)
	})
}
