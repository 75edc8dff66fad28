package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Godoc must not cite documents outside the module: "lifecycle notes 5.4"
// names notes a reader of the module cannot see, by section, like
// "vultr.md §3"; the check reports it.
func TestCitationOfOutsideNotesIsCaught(t *testing.T) {
	dir := t.TempDir()
	pkg := filepath.Join(dir, "notes")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		t.Fatal(err)
	}
	src := "// Package notes is a test package.\npackage notes\n\n" +
		"// Port is the agent's port (lifecycle notes 5.2).\nconst Port = 1\n"
	if err := os.WriteFile(filepath.Join(pkg, "notes.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	probs, err := CheckDir(dir, pkg, "notes", map[string]bool{"README.md": true})
	if err != nil {
		t.Fatal(err)
	}
	if len(probs) == 0 {
		t.Error(`"(lifecycle notes 5.2)" in godoc is not reported as a citation of a file outside the module`)
	}
}

// The module's own godoc: no "lifecycle notes" citations.
func TestModuleCitesNoLifecycleNotes(t *testing.T) {
	root := moduleRoot(t)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if l := strings.TrimSpace(line); strings.HasPrefix(l, "//") && strings.Contains(strings.ToLower(l), "lifecycle notes") {
				rel, _ := filepath.Rel(root, p)
				t.Errorf("%s:%d: %s", rel, i+1, l)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
