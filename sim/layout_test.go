package sim

import (
	"go/build"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The layout has one direction: sim → {vultrfake, hotaislefake, sshhost,
// core}; the fakes → {sshhost, core}; sshhost → core; core → nothing of the
// module. No fake imports the other, nothing imports sim from below, and
// the standalone server uses the public face only.
const modulePath = "github.com/gpufleet/gpufleet"

const (
	pkgSim          = modulePath + "/sim"
	pkgCore         = pkgSim + "/internal/core"
	pkgSSHHost      = pkgSim + "/internal/sshhost"
	pkgVultrFake    = pkgSim + "/internal/vultrfake"
	pkgHotAisleFake = pkgSim + "/internal/hotaislefake"
	pkgServerCmd    = pkgSim + "/cmd/gpufleet-sim"
)

// allowedImports lists, for each package of the sim tree, the module's
// packages its files (tests included) may import directly.
var allowedImports = map[string][]string{
	pkgCore:         {},
	pkgSSHHost:      {pkgCore},
	pkgVultrFake:    {pkgCore, pkgSSHHost},
	pkgHotAisleFake: {pkgCore, pkgSSHHost},
	pkgSim:          {pkgCore, pkgSSHHost, pkgVultrFake, pkgHotAisleFake},
	pkgServerCmd:    {pkgSim},
}

// moduleImports reads the module's packages that the package in dir
// imports: non-test files (deps) and every file, tests included (all).
func moduleImports(t *testing.T, dir string) (deps, all []string) {
	t.Helper()
	p, err := build.ImportDir(dir, build.ImportComment)
	require.NoError(t, err, dir)
	pick := func(lists ...[]string) []string {
		var out []string
		for _, l := range lists {
			for _, imp := range l {
				if (imp == modulePath || strings.HasPrefix(imp, modulePath+"/")) && !slices.Contains(out, imp) {
					out = append(out, imp)
				}
			}
		}
		sort.Strings(out)
		return out
	}
	return pick(p.Imports), pick(p.Imports, p.TestImports, p.XTestImports)
}

// layoutViolations checks direct imports (all files) against allowed, and
// the transitive imports of the non-test files (what go list -deps lists)
// against the rules of the layout.
func layoutViolations(deps, all map[string][]string) []string {
	var bad []string
	for pkg, imps := range all {
		allowed, known := allowedImports[pkg]
		if !known {
			bad = append(bad, pkg+": a package of the sim tree the layout does not name")
			continue
		}
		for _, imp := range imps {
			if imp != pkg && !slices.Contains(allowed, imp) {
				bad = append(bad, pkg+" imports "+imp)
			}
		}
	}
	closure := func(pkg string) []string {
		seen := map[string]bool{}
		var walk func(string)
		walk = func(p string) {
			for _, d := range deps[p] {
				if !seen[d] {
					seen[d] = true
					walk(d)
				}
			}
		}
		walk(pkg)
		var out []string
		for p := range seen {
			out = append(out, p)
		}
		sort.Strings(out)
		return out
	}
	for pkg := range deps {
		tr := closure(pkg)
		switch {
		case strings.HasPrefix(pkg, pkgSim+"/internal/") && slices.Contains(tr, pkgSim):
			bad = append(bad, pkg+" depends on "+pkgSim)
		case pkg == pkgCore && len(tr) > 0:
			bad = append(bad, pkgCore+" depends on "+strings.Join(tr, ", "))
		case pkg == pkgSSHHost && !slices.Equal(tr, []string{pkgCore}) && len(tr) > 0:
			bad = append(bad, pkgSSHHost+" depends on "+strings.Join(tr, ", "))
		case pkg == pkgVultrFake && slices.Contains(tr, pkgHotAisleFake):
			bad = append(bad, pkgVultrFake+" depends on "+pkgHotAisleFake)
		case pkg == pkgHotAisleFake && slices.Contains(tr, pkgVultrFake):
			bad = append(bad, pkgHotAisleFake+" depends on "+pkgVultrFake)
		}
	}
	sort.Strings(bad)
	return bad
}

func TestLayoutImportsOnlyDownwards(t *testing.T) {
	deps, all := map[string][]string{}, map[string][]string{}
	for pkg := range allowedImports {
		dir := filepath.FromSlash(strings.TrimPrefix(pkg, pkgSim+"/"))
		if pkg == pkgSim {
			dir = "."
		}
		deps[pkg], all[pkg] = moduleImports(t, dir)
	}
	// Every package directory of the sim tree is named by the layout.
	matches, err := filepath.Glob("internal/*")
	require.NoError(t, err)
	for _, m := range matches {
		pkg := pkgSim + "/" + filepath.ToSlash(m)
		if _, ok := allowedImports[pkg]; !ok {
			deps[pkg], all[pkg] = moduleImports(t, m)
		}
	}
	assert.Empty(t, layoutViolations(deps, all))
	assert.Equal(t, []string{pkgCore, pkgHotAisleFake, pkgSSHHost, pkgVultrFake}, deps[pkgSim],
		"the public face is built on the internal packages")
}

// The check itself catches each kind of import that runs back up.
func TestLayoutViolationsAreCaught(t *testing.T) {
	ok := map[string][]string{
		pkgCore: {}, pkgSSHHost: {pkgCore}, pkgVultrFake: {pkgCore, pkgSSHHost},
		pkgHotAisleFake: {pkgCore, pkgSSHHost}, pkgSim: {pkgCore, pkgSSHHost, pkgVultrFake, pkgHotAisleFake},
		pkgServerCmd: {pkgSim},
	}
	require.Empty(t, layoutViolations(ok, ok))
	for name, c := range map[string]struct {
		pkg, imp string
		want     string
	}{
		"fake to sim":         {pkgVultrFake, pkgSim, pkgVultrFake + " imports " + pkgSim},
		"core to sshhost":     {pkgCore, pkgSSHHost, pkgCore + " imports " + pkgSSHHost},
		"fake to fake":        {pkgHotAisleFake, pkgVultrFake, pkgHotAisleFake + " imports " + pkgVultrFake},
		"sshhost to fake":     {pkgSSHHost, pkgVultrFake, pkgSSHHost + " imports " + pkgVultrFake},
		"server to internals": {pkgServerCmd, pkgCore, pkgServerCmd + " imports " + pkgCore},
		"core to a client":    {pkgCore, modulePath + "/vultr", pkgCore + " imports " + modulePath + "/vultr"},
	} {
		t.Run(name, func(t *testing.T) {
			g := map[string][]string{}
			for k, v := range ok {
				g[k] = slices.Clone(v)
			}
			g[c.pkg] = append(g[c.pkg], c.imp)
			assert.Contains(t, layoutViolations(g, g), c.want)
		})
	}
	// A transitive path up (vultrfake → sshhost → sim) is caught on the
	// package that reaches it, not only on the one that imports it.
	g := map[string][]string{}
	for k, v := range ok {
		g[k] = slices.Clone(v)
	}
	g[pkgSSHHost] = append(g[pkgSSHHost], pkgSim)
	assert.Contains(t, layoutViolations(g, g), pkgVultrFake+" depends on "+pkgSim)
	// A new package under internal the layout does not name is reported.
	g[pkgSim+"/internal/extra"] = nil
	assert.Contains(t, layoutViolations(g, g), pkgSim+"/internal/extra: a package of the sim tree the layout does not name")
}
