package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// jsonBufs recycles the buffers answers are written into.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// writeAppended answers status with the JSON that fill appends (and a
// newline, as json.Encoder writes it), in a recycled buffer.
func writeAppended(w http.ResponseWriter, status int, fill func([]byte) []byte) {
	bp := jsonBufs.Get().(*[]byte)
	b := append(fill((*bp)[:0]), '\n')
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
	if cap(b) <= 1<<20 {
		*bp = b[:0]
		jsonBufs.Put(bp)
	}
}

// jsonAppender is a value that writes its own JSON, byte for byte what
// encoding/json would write for it, without reflection: the answers a fake
// gives most often (a server, a page of servers) implement it.
type jsonAppender interface {
	appendJSON(dst []byte) []byte
}

// jsonSafe reports whether s needs no escaping in a JSON string as
// encoding/json writes it (which also escapes <, > and &).
func jsonSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// appendJSONString appends s as a JSON string, as encoding/json does.
func appendJSONString(dst []byte, s string) []byte {
	if jsonSafe(s) {
		dst = append(dst, '"')
		dst = append(dst, s...)
		return append(dst, '"')
	}
	b, _ := json.Marshal(s) // rare: let encoding/json escape it
	return append(dst, b...)
}

// appendJSONStrings appends a JSON array of strings (null for nil).
func appendJSONStrings(dst []byte, ss []string) []byte {
	if ss == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, s)
	}
	return append(dst, ']')
}

// jsonObject appends the members of a JSON object one by one.
type jsonObject struct{ b []byte }

func (o *jsonObject) key(k string) {
	if len(o.b) == 0 || o.b[len(o.b)-1] != '{' {
		o.b = append(o.b, ',')
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *jsonObject) str(k, v string)          { o.key(k); o.b = appendJSONString(o.b, v) }
func (o *jsonObject) num(k string, v int64)    { o.key(k); o.b = strconv.AppendInt(o.b, v, 10) }
func (o *jsonObject) boolean(k string, v bool) { o.key(k); o.b = strconv.AppendBool(o.b, v) }
func (o *jsonObject) strs(k string, v []string) {
	o.key(k)
	o.b = appendJSONStrings(o.b, v)
}

func appendInt(dst []byte, n int) []byte { return strconv.AppendInt(dst, int64(n), 10) }
