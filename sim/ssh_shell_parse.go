package sim

import (
	"fmt"
	"strings"
)

// The fake hosts' shell language, a small subset of POSIX sh:
//
//	script   = andor { (";" | "&" | newline) andor }
//	andor    = pipeline { ("&&" | "||") pipeline }    — "&" backgrounds the whole andor
//	pipeline = command { "|" command }
//	command  = { NAME=value } word { word | redirect }
//	redirect = [fd] ">" word | [fd] ">>" word | "<" word | "&>" word | [fd] ">&" fd
//
// Words: 'single quotes', "double quotes" (with \" \\ \$ \` escapes),
// backslash escapes, $NAME, ${NAME}, $?, $!, $$, $(command), `command`, a
// leading ~. No field splitting or globbing. Comments (#) are skipped.
// Not supported (a syntax error, exit 2): here-documents, ( subshells ),
// and the keywords if/then/elif/else/fi/for/while/until/do/done/case/esac.

type partKind int

const (
	partLit partKind = iota // quoted: no expansion
	partExp                 // $NAME expansion applies
	partSub                 // command substitution: text is a script
)

type wordPart struct {
	kind partKind
	text string
}

type word []wordPart

type token struct {
	op string // "" for a word
	fd int    // a redirection's file descriptor
	w  word
}

type redirect struct {
	fd     int
	op     string // ">", ">>", "<", "&>", ">&"
	target word
	dupTo  int
}

type simpleCmd struct {
	words  []word
	redirs []redirect
}

type pipeline []simpleCmd

type andOr struct {
	pipes []pipeline
	ops   []string // between pipes: "&&" or "||"
	bg    bool
}

type script []andOr

var shellKeywords = map[string]bool{"if": true, "then": true, "elif": true, "else": true, "fi": true,
	"for": true, "while": true, "until": true, "do": true, "done": true, "case": true, "esac": true,
	"function": true, "select": true}

// lexer turns a script into tokens.
type lexer struct {
	src  string
	i    int
	toks []token
	cur  word
	open bool // cur has started (even if empty, e.g. '')
}

func (l *lexer) add(kind partKind, s string) {
	l.open = true
	if n := len(l.cur); n > 0 && l.cur[n-1].kind == kind && kind != partSub {
		l.cur[n-1].text += s
		return
	}
	l.cur = append(l.cur, wordPart{kind: kind, text: s})
}

func (l *lexer) endWord() {
	if l.open {
		l.toks = append(l.toks, token{w: l.cur})
	}
	l.cur, l.open = nil, false
}

func (l *lexer) op(op string, fd int) {
	l.endWord()
	l.toks = append(l.toks, token{op: op, fd: fd})
}

// fdPrefix takes a pending unquoted "1" or "2" as a redirection's fd.
func (l *lexer) fdPrefix(def int) int {
	if len(l.cur) == 1 && l.cur[0].kind == partExp && (l.cur[0].text == "1" || l.cur[0].text == "2") {
		fd := int(l.cur[0].text[0] - '0')
		l.cur, l.open = nil, false
		return fd
	}
	return def
}

func lex(src string) ([]token, error) {
	l := &lexer{src: src}
	for l.i < len(src) {
		if err := l.step(); err != nil {
			return nil, err
		}
	}
	l.endWord()
	return l.toks, nil
}

func (l *lexer) step() error {
	c, rest := l.src[l.i], l.src[l.i:]
	switch {
	case c == ' ' || c == '\t' || c == '\r':
		l.endWord()
		l.i++
	case c == '\n':
		l.op("\n", 0)
		l.i++
	case c == '#' && !l.open:
		for l.i < len(l.src) && l.src[l.i] != '\n' {
			l.i++
		}
	case c == '\'':
		end := strings.IndexByte(rest[1:], '\'')
		if end < 0 {
			return fmt.Errorf("unterminated quoted string")
		}
		l.add(partLit, rest[1:1+end])
		l.i += end + 2
	case c == '"':
		return l.double()
	case c == '\\':
		if len(rest) > 1 && rest[1] == '\n' {
			l.i += 2
			return nil
		}
		if len(rest) > 1 {
			l.add(partLit, rest[1:2])
		}
		l.i += 2
	case strings.HasPrefix(rest, "$("):
		return l.subst(rest, 2, ")")
	case c == '`':
		return l.subst(rest, 1, "`")
	default:
		return l.operator(c, rest)
	}
	return nil
}

func (l *lexer) operator(c byte, rest string) error {
	two := rest[:min(2, len(rest))]
	switch {
	case two == "&&" || two == "||":
		l.op(two, 0)
		l.i += 2
	case two == "&>":
		l.op("&>", 1)
		l.i += 2
	case c == '&' || c == '|' || c == ';':
		l.op(string(c), 0)
		l.i++
	case c == '>':
		fd := l.fdPrefix(1)
		switch {
		case two == ">>":
			l.op(">>", fd)
			l.i += 2
		case two == ">&":
			l.op(">&", fd)
			l.i += 2
		default:
			l.op(">", fd)
			l.i++
		}
	case two == "<<":
		return fmt.Errorf("here-documents are not supported")
	case c == '<':
		l.op("<", 0)
		l.i++
	case c == '(' || c == ')':
		return fmt.Errorf("syntax error near unexpected token `%c' (subshells are not supported)", c)
	default:
		l.add(partExp, string(c))
		l.i++
	}
	return nil
}

// double reads a "double-quoted" string starting at l.i.
func (l *lexer) double() error {
	l.open = true
	i := l.i + 1
	var sb strings.Builder
	flush := func() {
		if sb.Len() > 0 {
			l.add(partExp, sb.String())
			sb.Reset()
		}
	}
	for i < len(l.src) {
		c := l.src[i]
		switch {
		case c == '"':
			flush()
			l.i = i + 1
			return nil
		case c == '\\' && i+1 < len(l.src) && strings.IndexByte("\"\\$`", l.src[i+1]) >= 0:
			flush()
			l.add(partLit, l.src[i+1:i+2])
			i += 2
		case strings.HasPrefix(l.src[i:], "$(") || c == '`':
			flush()
			l.i = i
			open, closer := 2, ")"
			if c == '`' {
				open, closer = 1, "`"
			}
			if err := l.subst(l.src[i:], open, closer); err != nil {
				return err
			}
			i = l.i
		default:
			sb.WriteByte(c)
			i++
		}
	}
	return fmt.Errorf("unterminated quoted string")
}

// subst reads a command substitution of rest, opened by open bytes and
// closed by closer (nesting parentheses and skipping quotes for ")").
func (l *lexer) subst(rest string, open int, closer string) error {
	depth, i := 1, open
	for i < len(rest) {
		c := rest[i]
		switch {
		case c == '\'' && closer == ")":
			j := strings.IndexByte(rest[i+1:], '\'')
			if j < 0 {
				return fmt.Errorf("unterminated quoted string")
			}
			i += j + 2
			continue
		case c == '(' && closer == ")":
			depth++
		case string(c) == closer:
			depth--
			if depth == 0 {
				l.add(partSub, rest[open:i])
				l.i += i + 1
				return nil
			}
		}
		i++
	}
	return fmt.Errorf("unterminated command substitution")
}

// parseScript parses src; the error text is what sh would print.
func parseScript(src string) (script, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	var s script
	var cur andOr
	var pipe pipeline
	var cmd simpleCmd
	endCmd := func() error {
		if len(cmd.words) == 0 && len(cmd.redirs) == 0 {
			return fmt.Errorf("syntax error: missing command")
		}
		pipe, cmd = append(pipe, cmd), simpleCmd{}
		return nil
	}
	endAndOr := func(bg bool) error {
		if len(cmd.words) == 0 && len(cmd.redirs) == 0 && len(pipe) == 0 && len(cur.pipes) == 0 {
			if bg {
				return fmt.Errorf("syntax error near unexpected token `&'")
			}
			return nil // an empty line or a trailing ";"
		}
		if err := endCmd(); err != nil {
			return err
		}
		cur.pipes, pipe = append(cur.pipes, pipe), nil
		cur.bg = bg
		s, cur = append(s, cur), andOr{}
		return nil
	}
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		switch t.op {
		case "":
			if len(cmd.words) == 0 && isKeyword(t.w) {
				return nil, fmt.Errorf("syntax error: %q is not supported", t.w[0].text)
			}
			cmd.words = append(cmd.words, t.w)
		case "|":
			err = endCmd()
		case "&&", "||":
			if err = endCmd(); err == nil {
				cur.pipes, pipe = append(cur.pipes, pipe), nil
				cur.ops = append(cur.ops, t.op)
			}
		case ";", "\n", "&":
			if t.op == "\n" && i > 0 && (toks[i-1].op == "&&" || toks[i-1].op == "||" || toks[i-1].op == "|") {
				continue // the list goes on on the next line
			}
			err = endAndOr(t.op == "&")
		default: // a redirection
			if i+1 >= len(toks) || toks[i+1].op != "" {
				return nil, fmt.Errorf("syntax error near unexpected token `newline'")
			}
			i++
			cmd.redirs = append(cmd.redirs, newRedirect(t, toks[i].w))
		}
		if err != nil {
			return nil, err
		}
	}
	if err := endAndOr(false); err != nil {
		return nil, err
	}
	return s, nil
}

func newRedirect(t token, target word) redirect {
	r := redirect{fd: t.fd, op: t.op, target: target}
	if t.op == ">&" {
		r.dupTo = 1
		if len(target) == 1 && target[0].text == "2" {
			r.dupTo = 2
		}
	}
	if t.op == "<" {
		r.fd = 0
	}
	return r
}

func isKeyword(w word) bool {
	return len(w) == 1 && w[0].kind == partExp && shellKeywords[w[0].text]
}
