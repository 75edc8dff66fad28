package core

import (
	"bytes"
	"strconv"
)

// A fast path for the request bodies the fakes read most (a create): a flat
// JSON object whose values are plain strings, integers, booleans, null or
// arrays of plain strings. Anything else (an escape, a float, a nested
// object, a key that only matches a field case-insensitively, bad JSON)
// makes the scan give up, and the caller decodes with encoding/json, whose
// answer (and error text) stays the reference.

// flatKind is the type of a flat JSON value.
type flatKind uint8

const (
	FlatNull flatKind = iota
	FlatString
	FlatInt
	FlatBool
	FlatStrings
)

// FlatValue is one member's value.
type FlatValue struct {
	Kind flatKind
	S    string
	N    int
	B    bool
	Ss   []string
}

// FlatScan calls set for each member of the object in data, in order, and
// reports false as soon as data is not a flat object it can read exactly or
// set refuses a member (the caller then falls back to encoding/json). The
// key is a slice of data, valid only during the call (a switch on
// string(key) costs no allocation).
func FlatScan(data []byte, set func(key []byte, v FlatValue) bool) bool {
	p := flatParser{d: data}
	if !p.expect('{') {
		return false
	}
	if p.peek() == '}' {
		p.i++
		return p.end()
	}
	for {
		key, ok := p.plainBytes()
		if !ok || !p.expect(':') {
			return false
		}
		v, ok := p.value()
		if !ok || !set(key, v) {
			return false
		}
		switch p.next() {
		case ',':
		case '}':
			return p.end()
		default:
			return false
		}
	}
}

type flatParser struct {
	d []byte
	i int
}

func (p *flatParser) skipSpace() {
	for p.i < len(p.d) && (p.d[p.i] == ' ' || p.d[p.i] == '\t' || p.d[p.i] == '\n' || p.d[p.i] == '\r') {
		p.i++
	}
}

func (p *flatParser) peek() byte {
	p.skipSpace()
	if p.i < len(p.d) {
		return p.d[p.i]
	}
	return 0
}

func (p *flatParser) next() byte {
	c := p.peek()
	p.i++
	return c
}

func (p *flatParser) expect(c byte) bool { return p.next() == c }

// end reports whether only white space follows.
func (p *flatParser) end() bool {
	p.skipSpace()
	return p.i == len(p.d)
}

// plainString reads a string without escapes or control characters, in
// printable ASCII (anything else: false).
func (p *flatParser) plainString() (string, bool) {
	b, ok := p.plainBytes()
	if !ok {
		return "", false
	}
	return string(b), true
}

// plainBytes reads a string as plainString does and returns its bytes, a
// slice of the data.
func (p *flatParser) plainBytes() ([]byte, bool) {
	if p.next() != '"' {
		return nil, false
	}
	start := p.i
	for p.i < len(p.d) {
		c := p.d[p.i]
		switch {
		case c == '"':
			b := p.d[start:p.i]
			p.i++
			return b, true
		case c == '\\' || c < 0x20 || c > 0x7e:
			return nil, false
		}
		p.i++
	}
	return nil, false
}

func (p *flatParser) value() (FlatValue, bool) {
	switch c := p.peek(); {
	case c == '"':
		s, ok := p.plainString()
		return FlatValue{Kind: FlatString, S: s}, ok
	case c == '[':
		return p.strings()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.integer()
	}
	for _, lit := range []struct {
		text string
		v    FlatValue
	}{{"null", FlatValue{Kind: FlatNull}}, {"true", FlatValue{Kind: FlatBool, B: true}},
		{"false", FlatValue{Kind: FlatBool}}} {
		if end := p.i + len(lit.text); end <= len(p.d) && string(p.d[p.i:end]) == lit.text {
			p.i += len(lit.text)
			return lit.v, true
		}
	}
	return FlatValue{}, false
}

// integer reads a JSON integer (no fraction, no exponent, no leading zero).
func (p *flatParser) integer() (FlatValue, bool) {
	start := p.i
	if p.d[p.i] == '-' {
		p.i++
	}
	digits := p.i
	for p.i < len(p.d) && p.d[p.i] >= '0' && p.d[p.i] <= '9' {
		p.i++
	}
	if p.i == digits || (p.d[digits] == '0' && p.i-digits > 1) {
		return FlatValue{}, false
	}
	if p.i < len(p.d) && (p.d[p.i] == '.' || p.d[p.i] == 'e' || p.d[p.i] == 'E') {
		return FlatValue{}, false
	}
	n, err := strconv.Atoi(string(p.d[start:p.i]))
	return FlatValue{Kind: FlatInt, N: n}, err == nil
}

// strings reads an array of plain strings.
func (p *flatParser) strings() (FlatValue, bool) {
	p.i++ // '['
	out := []string{}
	if p.peek() == ']' {
		p.i++
		return FlatValue{Kind: FlatStrings, Ss: out}, true
	}
	for {
		s, ok := p.plainString()
		if !ok {
			return FlatValue{}, false
		}
		out = append(out, s)
		switch p.next() {
		case ',':
		case ']':
			return FlatValue{Kind: FlatStrings, Ss: out}, true
		default:
			return FlatValue{}, false
		}
	}
}

// FlatUnknown reports whether an unknown key may be skipped: encoding/json
// would ignore it unless it matches one of known case-insensitively.
func FlatUnknown(key []byte, known []string) bool {
	for _, k := range known {
		if bytes.EqualFold([]byte(k), key) {
			return false
		}
	}
	return true
}
