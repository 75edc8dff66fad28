package hotaisle

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// benchList returns a JSON array of n copies of item with distinct names.
func benchList(item string, n int) []byte {
	var b bytes.Buffer
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strings.Replace(item, "enc1-gpu", "enc1-gpu"+string(rune('a'+i%26)), 1))
	}
	b.WriteByte(']')
	return b.Bytes()
}

// e1Row is one E1 offer row.
func e1Row() string {
	var rows []json.RawMessage
	if err := json.Unmarshal([]byte(e1VMTypes), &rows); err != nil {
		panic(err)
	}
	return string(rows[0])
}

func benchDecode[T any](b *testing.B, data []byte) {
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var out []T
		if err := json.Unmarshal(data, &out); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode500VMs(b *testing.B) { benchDecode[VM](b, benchList(e6VMs[1:len(e6VMs)-1], 500)) }

func BenchmarkDecode500VMTypes(b *testing.B) { benchDecode[VMType](b, benchList(e1Row(), 500)) }

func BenchmarkDecode500BareMetal(b *testing.B) { benchDecode[BareMetal](b, benchList(e7Server, 500)) }

// staticRT answers every request with the same 200 body.
type staticRT []byte

func (s staticRT) RoundTrip(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, Body: io.NopCloser(bytes.NewReader(s))}, nil
}

// BenchmarkListVMs500 is the whole call: request, limiter off, read, decode.
func BenchmarkListVMs500(b *testing.B) {
	data := benchList(e6VMs[1:len(e6VMs)-1], 500)
	c := New(testKey, "acme", WithHTTPClient(&http.Client{Transport: staticRT(data)}), WithRateLimit(0, 0))
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		vms, err := c.ListVMs(context.Background())
		if err != nil || len(vms) != 500 {
			b.Fatal(err, len(vms))
		}
	}
}
