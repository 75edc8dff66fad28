//go:build gpufleet_wip

package costopt

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func chainsOf(tr Trace, b Billing) ([][]int, []int64) {
	var chains [][]int
	var costs []int64
	js := tr.Jobs
	var dfs func(f int, path []int)
	dfs = func(f int, path []int) {
		last := js[path[len(path)-1]]
		c := b.Units(last.End() - js[f].Arrive + b.BootTime)
		chains = append(chains, append([]int(nil), path...))
		costs = append(costs, c)
		for j := path[len(path)-1] + 1; j < len(js); j++ {
			if js[j].Arrive >= last.End() {
				dfs(f, append(path, j))
			}
		}
	}
	for f := range js {
		dfs(f, []int{f})
	}
	return chains, costs
}

func lpBound(t *testing.T, tr Trace, b Billing, mip bool) float64 {
	chains, costs := chainsOf(tr, b)
	var sb strings.Builder
	sb.WriteString("Minimize\n obj:")
	for i, c := range costs {
		fmt.Fprintf(&sb, " + %d x%d", c, i)
	}
	sb.WriteString("\nSubject To\n")
	for j := range tr.Jobs {
		fmt.Fprintf(&sb, " c%d:", j)
		for i, ch := range chains {
			for _, x := range ch {
				if x == j {
					fmt.Fprintf(&sb, " + x%d", i)
				}
			}
		}
		sb.WriteString(" = 1\n")
	}
	if mip {
		sb.WriteString("Binary\n")
		for i := range chains {
			fmt.Fprintf(&sb, " x%d\n", i)
		}
	}
	sb.WriteString("End\n")
	os.WriteFile("/tmp/p.lp", []byte(sb.String()), 0o644)
	out, err := exec.Command("glpsol", "--lp", "/tmp/p.lp", "-o", "/tmp/p.out").CombinedOutput()
	if err != nil {
		t.Fatal(string(out))
	}
	res, _ := os.ReadFile("/tmp/p.out")
	var v float64
	for _, line := range strings.Split(string(res), "\n") {
		if strings.HasPrefix(line, "Objective:") {
			fmt.Sscanf(strings.Fields(line)[3], "%g", &v)
		}
	}
	return v
}

func TestProtoLP(t *testing.T) {
	for _, n := range []int{10, 15, 18} {
		w := DefaultWorkload()
		w.Jobs = n
		w.Horizon = time.Duration(n) * 12 * time.Hour / 50
		for _, b := range Kinds() {
			for seed := uint64(1); seed <= 4; seed++ {
				tr, _ := Generate(w, seed)
				ex := newSolver(tr, b).best(0, nil)
				lp := lpBound(t, tr, b, false)
				t.Logf("n=%d %s seed %d: exact %d lp %.3f gap %.2f%%", n, b.Name, seed, ex, lp, 100*(float64(ex)-lp)/float64(ex))
			}
		}
	}
}
