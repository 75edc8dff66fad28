package doccheck

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func TestModuleGodoc(t *testing.T) {
	probs, err := Check(moduleRoot(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range probs {
		t.Error(p)
	}
}

// problems checks the package in testdata/name and returns its problems as
// "rule: text" strings.
func problems(t *testing.T, name string) []string {
	t.Helper()
	root, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	probs, err := CheckDir(root, filepath.Join(root, name), name, map[string]bool{"README.md": true})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range probs {
		out = append(out, p.Rule+": "+p.Text)
	}
	return out
}

func TestRulesCatchEachKindOfProblem(t *testing.T) {
	got := problems(t, "bad")
	for _, want := range []string{
		"outside-file: vultr.md", "outside-file: §", "outside-file: ../shared", "outside-file: ../shared/scenarios.md",
		"unexported-name: newClient", "unexported-name: [helper]", "unexported-name: defaultTimeout", "unknown-name: [Gone]",
		"abbreviation: DS", "abbreviation: TF", "abbreviation: GV", "abbreviation: ANS", "abbreviation: QZX",
	} {
		if !slices.Contains(got, want) {
			t.Errorf("missing %q in %q", want, got)
		}
	}
	if slices.Contains(got, "unexported-name: retries") {
		t.Error("an unexported field no comment names was reported")
	}
}

func TestRulesAcceptExplainedAndKnownNames(t *testing.T) {
	if got := problems(t, "good"); len(got) > 0 {
		t.Errorf("false alarms: %q", got)
	}
}

func TestDenyListedAbbreviationsCannotBeAllowed(t *testing.T) {
	for w := range unexplained {
		if known(w) {
			t.Errorf("%s is both unexplained and known", w)
		}
	}
}

func TestSpells(t *testing.T) {
	for _, tc := range []struct {
		text, abbr string
		want       bool
	}{
		{"dstack server", "DS", true},
		{"Terraform", "TF", true},
		{"Invalid instance-id.", "DS", false},
		{"time-to-live extension", "TTLX", true},
		{"agree", "GV", false},
	} {
		if got := spells(tc.text, tc.abbr); got != tc.want {
			t.Errorf("spells(%q, %q) = %v", tc.text, tc.abbr, got)
		}
	}
}
