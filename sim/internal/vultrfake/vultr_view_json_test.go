package vultrfake

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The hand-written encoders write exactly what encoding/json writes for the
// same views, in every state a server passes through, odd labels included.
func TestVultrViewsEncodeLikeEncodingJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newVultrT(t)
		vpc := h.vpc("ewr")
		odd := []string{`<b>&"x"`, "é\u2028\n", `back\slash`, ""}
		ids := []string{
			h.create("vc2-1c-1gb", "ewr", map[string]any{"label": odd[0], "tags": odd, "enable_ipv6": true,
				"backups": "enabled", "attach_vpc": []string{vpc}})["id"].(string),
			h.create("vbm-24c-256gb-amd", "ewr", map[string]any{"label": odd[1], "tags": nil})["id"].(string),
		}
		check := func(when string) {
			h.v.mu.Lock()
			defer h.v.unlock()
			for _, id := range ids {
				srv := h.v.st.servers[id]
				for _, pw := range []bool{false, true} {
					v := vultrView(srv, time.Now(), pw)
					var want []byte
					var err error
					if v.metal != nil {
						want, err = json.Marshal(*v.metal)
					} else {
						want, err = json.Marshal(*v.inst)
					}
					require.NoError(t, err)
					assert.Equal(t, string(want), string(v.AppendJSON(nil)), "%s %s", when, id)
					ans, err := json.Marshal(map[string]any{srv.kind(): json.RawMessage(want)})
					require.NoError(t, err)
					assert.Equal(t, string(ans), string(vultrAppendAnswer(nil, srv, time.Now(), pw)))
				}
			}
		}
		check("pending")
		time.Sleep(time.Hour)
		check("active")
		require.NoError(t, h.v.HaltOutOfBand(ids[0]))
		h.obj("DELETE", "/v2/bare-metals/"+ids[1], nil, 204)
		check("halted, destroying")

		l := vultrListJSON[vultrKeyJSON]{name: "ssh_keys", items: []vultrKeyJSON{{ID: "a", Name: odd[0]}},
			meta: vultrMeta{Total: 3, Links: vultrMetaLinks{Next: "bmV4dA==", Prev: ""}}}
		want, err := json.Marshal(map[string]any{"ssh_keys": l.items, "meta": l.meta})
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(l.AppendJSON(nil)))
		assert.True(t, json.Valid(l.AppendJSON(nil)))
	})
}

func TestVultrTimeFormat(t *testing.T) {
	for _, tm := range []time.Time{time.Date(2026, 12, 1, 0, 8, 4, 999, time.UTC),
		time.Date(1999, 1, 31, 23, 59, 59, 0, time.FixedZone("x", -5*3600)), {}, time.Date(12345, 1, 1, 0, 0, 0, 0, time.UTC)} {
		assert.Equal(t, tm.UTC().Format("2006-01-02T15:04:05-07:00"), vultrTime(tm))
	}
}
