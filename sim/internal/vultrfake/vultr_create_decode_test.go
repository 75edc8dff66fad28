package vultrfake

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// decodeCreateCorpus are create bodies, good and bad, that the fast path and
// encoding/json must read alike.
var decodeCreateCorpus = []string{
	`{"region":"ewr","plan":"vc2-1c-1gb","os_id":2284,"label":"bench"}`,
	` { "region" : "ewr" , "tags" : [ "a" , "b" ] , "enable_ipv6" : true , "os_id" : -0 } `,
	`{"tags":null,"attach_vpc":[],"sshkey_id":["k"],"ddos_protection":false,"user_data":"I2Nsb3Vk"}`,
	`{"tags":["a"],"tags":null}`, `{"label":"a","label":null}`, `{"os_id":1,"os_id":2}`,
	`{"Region":"ewr"}`, `{"REGION":"ewr","region":"ord"}`, `{"unknown":1,"other":[],"x":null,"y":"z"}`,
	`{"block_devices":null,"iso_id":"","app_id":0}`, `{"nested":{"a":1}}`, `{"label":"caf\u00e9"}`,
	`{"label":"tab\there"}`, `{"label":"é"}`, `{"os_id":1.5}`, `{"os_id":1e3}`, `{"os_id":"1743"}`,
	`{"os_id":01}`, `{"os_id":99999999999999999999999}`, `{"tags":"a"}`, `{"tags":[1]}`, `{"label":5}`,
	`{"enable_vpc":"true"}`, `{"region":"ewr",}`, `{"region":"ewr"} x`, `{`, `[]`, `"s"`, `{}`, `{ }`,
	`{"region":"ewr" "plan":"x"}`, `{"tags":["a",]}`, `{"tags":[null]}`, `{"a":tru}`, `{"a":nul}`,
	`{"os_id":-}`, `{"label":"unterminated}`, "{\"label\":\"ctl\x01\"}",
}

// checkDecodeCreate requires decodeCreate to give what json.Unmarshal gives.
func checkDecodeCreate(t *testing.T, body string) {
	var want, got vultrCreateReq
	wantErr := json.Unmarshal([]byte(body), &want)
	gotErr := decodeCreate([]byte(body), &got)
	if wantErr != nil {
		assert.Equal(t, wantErr.Error(), gotErr.Error(), body)
		return
	}
	assert.NoError(t, gotErr, body)
	assert.Equal(t, want, got, body)
}

func TestDecodeCreateMatchesEncodingJSON(t *testing.T) {
	for _, body := range decodeCreateCorpus {
		checkDecodeCreate(t, body)
	}
	// Random flat bodies from known and unknown keys and every value kind.
	keys := append([]string{"Label", "TAGS", "misc", "x_y"}, vultrCreateKeys...)
	vals := []string{`"v"`, `""`, `7`, `-3`, `0`, `true`, `false`, `null`, `[]`, `["a","b"]`, `[ "c" ]`,
		`1.5`, `{}`, `"a\"b"`, `"ü"`}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var b strings.Builder
		b.WriteString("{")
		for i := range r.IntN(6) {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`"` + keys[r.IntN(len(keys))] + `":` + vals[r.IntN(len(vals))])
		}
		b.WriteString("}")
		checkDecodeCreate(t, b.String())
	}
}

func FuzzDecodeCreate(f *testing.F) {
	for _, body := range decodeCreateCorpus {
		f.Add(body)
	}
	f.Fuzz(func(t *testing.T, body string) { checkDecodeCreate(t, body) })
}
