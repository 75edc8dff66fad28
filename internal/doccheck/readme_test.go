package doccheck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestREADMEGoBlocksAreExamples: every Go block of README.md is part of a
// godoc Example, so it compiles (and an Example with an Output comment runs)
// with the module's tests. A README edit without the Example fails here.
func TestREADMEGoBlocksAreExamples(t *testing.T) {
	root := moduleRoot(t)
	md, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := GoBlocks(md)
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```go block: did the fences change?")
	}
	bodies, err := ExampleBodies(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range blocks {
		found := ""
		for name, body := range bodies {
			if Contains(body, b.Code) {
				found = name
				break
			}
		}
		if found == "" {
			first, _, _ := strings.Cut(strings.TrimSpace(b.Code), "\n")
			t.Errorf("README.md:%d: the Go block starting %q is in no Example function: copy it into one (an example_test.go) so that it compiles", b.Line, first)
		}
	}
}

func TestContainsCatchesDrift(t *testing.T) {
	body := "\n\tx := 1\n\tif x > 0 {\n\t\tprintln(x) // say it\n\t}\n"
	for _, tc := range []struct {
		block string
		want  bool
	}{
		{"x := 1\nif x > 0 {\n    println(x)   // say it\n}\n", true},
		{"\n\nif x > 0 {\n\n\tprintln(x) // say it\n", true},
		{"x := 2\nif x > 0 {\n", false},
		{"x := 1\nprintln(x) // say it\n", false},
	} {
		if got := Contains(body, tc.block); got != tc.want {
			t.Errorf("Contains(%q) = %v", tc.block, got)
		}
	}
}

func TestGoBlocks(t *testing.T) {
	md := "# T\n```sh\ngo test\n```\n\n```go\na := 1\n```\ntext\n  ```go\nb := 2\n  ```\n"
	got := GoBlocks([]byte(md))
	if len(got) != 2 || got[0].Code != "a := 1\n" || got[0].Line != 6 || got[1].Code != "b := 2\n" {
		t.Errorf("GoBlocks = %+v", got)
	}
}
