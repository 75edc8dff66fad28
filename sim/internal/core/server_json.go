package core

import (
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
)

// jsonBufs recycles the buffers answers are written into.
var jsonBufs = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// WriteAppended answers status with the JSON that fill appends (and a
// newline, as json.Encoder writes it), in a recycled buffer.
func WriteAppended(w http.ResponseWriter, status int, fill func([]byte) []byte) {
	bp := jsonBufs.Get().(*[]byte)
	b := append(fill((*bp)[:0]), '\n')
	setJSONContentType(w)
	w.WriteHeader(status)
	_, _ = w.Write(b)
	if cap(b) <= 1<<20 {
		*bp = b[:0]
		jsonBufs.Put(bp)
	}
}

// JSONAppender is a value that writes its own JSON, byte for byte what
// encoding/json would write for it, without reflection: the answers a fake
// gives most often (a server, a page of servers) implement it.
type JSONAppender interface {
	AppendJSON(dst []byte) []byte
}

// jsonSafeByte marks the bytes that need no escaping in a JSON string as
// encoding/json writes it (printable ASCII but ", \\, <, > and &).
var jsonSafeByte = func() (t [256]bool) {
	for c := 0x20; c <= 0x7e; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// jsonSafe reports whether s needs no escaping in a JSON string as
// encoding/json writes it (which also escapes <, > and &).
func jsonSafe(s string) bool {
	for i := 0; i < len(s); i++ {
		if !jsonSafeByte[s[i]] {
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

// JSONObject appends the members of a JSON object one by one.
type JSONObject struct{ B []byte }

// key returns o.B with the member's key and colon appended (and the comma
// before it, unless it is the first member), for the caller to store once
// with the value.
func (o *JSONObject) key(k string) []byte {
	b := o.B
	if len(b) == 0 || b[len(b)-1] != '{' {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

// Str, Num, Boolean and Strs append a member with a string, an integer,
// a boolean or an array of strings.
func (o *JSONObject) Str(k, v string)          { o.B = appendJSONString(o.key(k), v) }
func (o *JSONObject) Num(k string, v int64)    { o.B = strconv.AppendInt(o.key(k), v, 10) }
func (o *JSONObject) Boolean(k string, v bool) { o.B = strconv.AppendBool(o.key(k), v) }
func (o *JSONObject) Strs(k string, v []string) {
	o.B = appendJSONStrings(o.key(k), v)
}

// StrField appends a member of a JSON object with a string value; key is
// given whole, quotes, colon and any leading comma included (`,"os":`), so
// that an object of a fixed shape is written with one append per key.
func StrField(dst []byte, key, v string) []byte { return appendJSONString(append(dst, key...), v) }

// SafeField appends a member with a string value written as it is, without
// the escaping check: only for values made of bytes JSON never escapes
// (hexadecimal identifiers, digits, addresses, dates, fixed words), as the
// fakes generate them. key as for StrField.
func SafeField(dst []byte, key, v string) []byte {
	dst = append(append(dst, key...), '"')
	return append(append(dst, v...), '"')
}

// NumField appends a member with an integer value (key as for StrField).
func NumField(dst []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(dst, key...), v, 10)
}

// BoolField appends a member with a boolean value (key as for StrField).
func BoolField(dst []byte, key string, v bool) []byte {
	return strconv.AppendBool(append(dst, key...), v)
}

// StrsField appends a member with an array of strings, null for nil (key
// as for StrField).
func StrsField(dst []byte, key string, v []string) []byte {
	return appendJSONStrings(append(dst, key...), v)
}

// AppendInt appends n in decimal.
func AppendInt(dst []byte, n int) []byte { return strconv.AppendInt(dst, int64(n), 10) }

// jsonContentType is the Content-Type of every answer, shared (a header
// value is never changed in place).
var jsonContentType = []string{"application/json"}

// setJSONContentType sets Content-Type: application/json without the
// canonicalisation Header.Set does ("Content-Type" is canonical already).
func setJSONContentType(w http.ResponseWriter) { w.Header()["Content-Type"] = jsonContentType }
