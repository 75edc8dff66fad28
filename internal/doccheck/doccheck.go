package doccheck

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"unicode"
)

// Problem is one finding: where, which rule, and the offending text.
type Problem struct {
	Where string // package path and identifier, e.g. "fleet.Manager.Run"
	Rule  string // "outside-file", "unexported-name", "unknown-name" or "abbreviation"
	Text  string
}

func (p Problem) String() string { return fmt.Sprintf("%s: %s: %s", p.Where, p.Rule, p.Text) }

// Check checks the godoc of every package of the module rooted at root,
// except those under an internal directory, testdata or hidden directories.
// Commands (package main) are held to the rules for their package comment
// only: godoc shows nothing else of them.
func Check(root string) ([]Problem, error) {
	moduleFiles, err := moduleFileNames(root)
	if err != nil {
		return nil, err
	}
	var out []Problem
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		name := d.Name()
		if path != root && (name == "internal" || name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(root, path)
		probs, err := CheckDir(root, path, filepath.ToSlash(rel), moduleFiles)
		out = append(out, probs...)
		return err
	})
	return out, err
}

// moduleFileNames returns the base names of the files in the module, which
// godoc may cite (README.md, CHANGELOG.md, ...).
func moduleFileNames(root string) (map[string]bool, error) {
	names := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") {
			return filepath.SkipDir
		}
		names[d.Name()] = true
		return nil
	})
	return names, err
}

// CheckDir checks the package in dir (none: no problem); rel is its path
// in the module under root, moduleFiles the file names the godoc may cite.
func CheckDir(root, dir, rel string, moduleFiles map[string]bool) ([]Problem, error) {
	fset := token.NewFileSet()
	files, err := parseDir(fset, dir)
	if err != nil || len(files) == 0 {
		return nil, err
	}
	exported, unexported := declaredNames(files)
	pkgComment := packageComment(files) // before go/doc trims the files
	pkg, err := doc.NewFromFiles(fset, files, rel)
	if err != nil {
		return nil, err
	}
	c := &checker{fset: fset, root: root, exported: exported, unexported: unexported, moduleFiles: moduleFiles}
	c.text(pkgComment, rel, pkg.Doc, nil)
	if pkg.Name != "main" {
		c.values(rel, pkg.Consts)
		c.values(rel, pkg.Vars)
		c.funcs(rel, pkg.Funcs)
		for _, t := range pkg.Types {
			where := rel + "." + t.Name
			c.text(t.Decl, where, t.Doc, nil)
			c.decl(where, t.Decl)
			c.values(where, t.Consts)
			c.values(where, t.Vars)
			c.funcs(rel, t.Funcs)
			c.funcs(where, t.Methods)
		}
	}
	return c.problems, nil
}

// parseDir parses the non-test Go files of dir, with comments.
func parseDir(fset *token.FileSet, dir string) ([]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// declaredNames collects the package's identifiers, exported or not:
// top-level declarations, methods, and fields of its struct and interface
// types. Parameters and locals are left out: a doc comment may name its
// function's parameters.
func declaredNames(files []*ast.File) (exported, unexported map[string]bool) {
	exported, unexported = map[string]bool{}, map[string]bool{}
	add := func(ids ...*ast.Ident) {
		for _, id := range ids {
			switch {
			case id == nil || id.Name == "_":
			case id.IsExported():
				exported[id.Name] = true
			default:
				unexported[id.Name] = true
			}
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.FuncDecl:
				add(n.Name)
				return false
			case *ast.TypeSpec:
				add(n.Name)
			case *ast.ValueSpec:
				add(n.Names...)
			case *ast.StructType:
				addFields(n.Fields, add)
			case *ast.InterfaceType:
				addFields(n.Methods, add)
			case *ast.FuncType, *ast.FuncLit:
				return false
			}
			return true
		})
	}
	delete(unexported, "main")
	delete(unexported, "init")
	return exported, unexported
}

func addFields(fl *ast.FieldList, add func(...*ast.Ident)) {
	if fl != nil {
		for _, f := range fl.List {
			add(f.Names...)
		}
	}
}

type checker struct {
	fset        *token.FileSet
	root        string
	exported    map[string]bool // names a comment may use as they are (VPCID)
	unexported  map[string]bool
	moduleFiles map[string]bool
	problems    []Problem

	at     string          // file:line of the comment being checked
	params map[string]bool // names it may use
}

func (c *checker) add(where, rule, text string) {
	c.problems = append(c.problems, Problem{Where: c.at + " " + where, Rule: rule, Text: text})
}

func (c *checker) values(where string, vs []*doc.Value) {
	for _, v := range vs {
		c.text(v.Decl, where+"."+strings.Join(v.Names, ","), v.Doc, nil)
		c.decl(where, v.Decl)
	}
}

func (c *checker) funcs(where string, fs []*doc.Func) {
	for _, f := range fs {
		params := map[string]bool{}
		for _, fl := range []*ast.FieldList{f.Decl.Recv, f.Decl.Type.Params, f.Decl.Type.Results} {
			addFields(fl, func(ids ...*ast.Ident) {
				for _, id := range ids {
					params[id.Name] = true
				}
			})
		}
		c.text(f.Decl, where+"."+f.Name, f.Doc, params)
	}
}

// packageComment is the node that carries the package comment.
func packageComment(files []*ast.File) ast.Node {
	for _, f := range files {
		if f.Doc != nil {
			return f.Doc
		}
	}
	return files[0]
}

// decl checks the comments inside a declaration that godoc prints with it:
// those of struct fields, interface methods and grouped constants.
func (c *checker) decl(where string, d *ast.GenDecl) {
	if d == nil {
		return
	}
	ast.Inspect(d, func(n ast.Node) bool {
		var groups []*ast.CommentGroup
		name := ""
		switch n := n.(type) {
		case *ast.Field:
			groups = []*ast.CommentGroup{n.Doc, n.Comment}
			if len(n.Names) > 0 {
				name = n.Names[0].Name
			}
		case *ast.ValueSpec:
			if len(d.Specs) > 1 {
				groups = []*ast.CommentGroup{n.Doc, n.Comment}
			} else {
				groups = []*ast.CommentGroup{n.Comment}
			}
			name = n.Names[0].Name
		}
		for _, g := range groups {
			if g != nil {
				c.text(g, where+"."+name, g.Text(), nil)
			}
		}
		return true
	})
}

// text checks one comment, outside its code blocks; at is where it is, and
// params are names it may use (the function's parameters).
func (c *checker) text(at ast.Node, where, text string, params map[string]bool) {
	if strings.TrimSpace(text) == "" {
		return
	}
	pos := c.fset.Position(at.Pos())
	file, _ := filepath.Rel(c.root, pos.Filename)
	c.at, c.params = fmt.Sprintf("%s:%d", filepath.ToSlash(file), pos.Line), params
	p := comment.Parser{
		LookupPackage: func(string) (string, bool) { return "", false },
		LookupSym:     func(recv, name string) bool { return true },
	}
	d := p.Parse(text)
	var prose strings.Builder
	for _, b := range d.Content {
		c.links(where, b)
		prose.WriteString(blockText(b))
		prose.WriteString("\n")
	}
	s := prose.String()
	c.outsideFiles(where, s)
	c.unexportedWords(where, s)
	c.abbreviations(where, s)
}

// links reports doc links ([Name], [Type.Name]) to unexported names of the
// package, and to names it does not declare (a link left behind by a
// rename).
func (c *checker) links(where string, b comment.Block) {
	walkText(b, func(t comment.Text) {
		l, ok := t.(*comment.DocLink)
		if !ok || l.ImportPath != "" {
			return
		}
		for _, n := range []string{l.Recv, l.Name} {
			switch {
			case n == "" || c.params[n]:
			case !token.IsExported(n) && c.unexported[n]:
				c.add(where, "unexported-name", "["+n+"]")
			case token.IsExported(n) && !c.exported[n]:
				c.add(where, "unknown-name", "["+n+"]")
			}
		}
	})
}

var (
	mdFile    = regexp.MustCompile(`[\w./-]*\b([\w-]+\.md)\b`)
	outsideRE = regexp.MustCompile(`§|\.\./shared|/shared/|(?i:\bnotes? \d+\.\d+|\bscenarios? S\d+|\bfact sheet)`)
	wordRE    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
	bracketRE = regexp.MustCompile(`(?:^|[^"])\[([A-Za-z_][A-Za-z0-9_]*)\]`) // [name], a doc link go/doc does not make for lower-case names; "[name]" is a quote
)

// outsideFiles reports citations of files a reader of the module cannot
// open: sections (§), the project's shared folder, Markdown files that are
// not in the module, numbered notes ("notes 5.2"), scenario ids
// ("scenario S04") and fact sheets.
func (c *checker) outsideFiles(where, s string) {
	for _, m := range outsideRE.FindAllString(s, -1) {
		c.add(where, "outside-file", m)
	}
	for _, m := range mdFile.FindAllStringSubmatch(s, -1) {
		if !c.moduleFiles[m[1]] || strings.Contains(m[0], "/") {
			c.add(where, "outside-file", m[0])
		}
	}
}

// unexportedWords reports words that are unexported identifiers of the
// package and cannot be read as English: mixed case (withAdmin), with an
// underscore or a digit, or in brackets ([helper]).
func (c *checker) unexportedWords(where, s string) {
	for _, w := range wordRE.FindAllString(s, -1) {
		if c.unexported[w] && !c.params[w] && identLike(w) {
			c.add(where, "unexported-name", w)
		}
	}
	for _, m := range bracketRE.FindAllStringSubmatch(s, -1) {
		if c.unexported[m[1]] && !c.params[m[1]] {
			c.add(where, "unexported-name", "["+m[1]+"]")
		}
	}
}

func identLike(w string) bool {
	return strings.ContainsFunc(w[1:], unicode.IsUpper) || strings.ContainsAny(w, "_0123456789")
}

// blockText is the prose of a block; code blocks have none.
func blockText(b comment.Block) string {
	var sb strings.Builder
	walkText(b, func(t comment.Text) {
		switch t := t.(type) {
		case comment.Plain:
			sb.WriteString(string(t))
		case comment.Italic:
			sb.WriteString(string(t))
		case *comment.DocLink:
			name := t.Name
			if t.Recv != "" {
				name = t.Recv + "." + name
			}
			sb.WriteString(name)
		}
	})
	return sb.String()
}

// walkText calls f for every text span of b, including those inside links
// and list items.
func walkText(b comment.Block, f func(comment.Text)) {
	var texts func([]comment.Text)
	texts = func(ts []comment.Text) {
		for _, t := range ts {
			f(t)
			if l, ok := t.(*comment.Link); ok {
				texts(l.Text)
			}
		}
	}
	switch b := b.(type) {
	case *comment.Paragraph:
		texts(b.Text)
	case *comment.Heading:
		texts(b.Text)
	case *comment.List:
		for _, it := range b.Items {
			for _, ib := range it.Content {
				walkText(ib, f)
			}
		}
	}
}
