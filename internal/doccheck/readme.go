package doccheck

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Block is one fenced Go code block of a Markdown file.
type Block struct {
	Line int    // line of the opening fence, 1-based
	Code string // the block's text, without the fences
}

// GoBlocks returns the ```go blocks of a Markdown text.
func GoBlocks(md []byte) []Block {
	var out []Block
	var cur *Block
	var code strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(md))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch fence := strings.TrimSpace(line); {
		case cur == nil && fence == "```go":
			cur = &Block{Line: n}
			code.Reset()
		case cur != nil && fence == "```":
			cur.Code = code.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			code.WriteString(line + "\n")
		}
	}
	return out
}

// ExampleBodies returns the bodies of every godoc Example function in the
// module's test files, by "directory:function".
func ExampleBodies(root string) (map[string]string, error) {
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") && fn.Body != nil {
				from, to := fset.Position(fn.Body.Lbrace).Offset+1, fset.Position(fn.Body.Rbrace).Offset
				out[filepath.ToSlash(rel)+":"+fn.Name.Name] = string(src[from:to])
			}
		}
		return nil
	})
	return out, err
}

// Contains reports whether block appears in body as consecutive lines,
// indentation and runs of blanks aside, blank lines skipped.
func Contains(body, block string) bool {
	b, want := normalize(body), normalize(block)
	if len(want) == 0 {
		return true
	}
	for i := 0; i+len(want) <= len(b); i++ {
		if equal(b[i:i+len(want)], want) {
			return true
		}
	}
	return false
}

func normalize(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			out = append(out, strings.Join(f, " "))
		}
	}
	return out
}

func equal(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}
