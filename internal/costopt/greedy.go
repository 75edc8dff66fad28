package costopt

// greedy serves the jobs in arrival order, each on the machine that costs
// the fewest extra units (an idle machine, or a new one), and returns the
// chains. It gives the search its first incumbent.
func greedy(jobs []Job, p *pricer) [][]int {
	var chains [][]int
	for j := range jobs {
		best, extra := -1, p.chainUnits(j, j)
		for k, c := range chains {
			last := c[len(c)-1]
			if jobs[last].End() > jobs[j].Arrive {
				continue
			}
			if d := p.chainUnits(c[0], j) - p.chainUnits(c[0], last); d < extra {
				best, extra = k, d
			}
		}
		if best < 0 {
			chains = append(chains, []int{j})
		} else {
			chains[best] = append(chains[best], j)
		}
	}
	return chains
}

// improve applies tail exchanges until none lowers the bill: two chains
// A = a1 | a2 and B = b1 | b2 become a1+b2 and b1+a2 when both are chains
// (each part may be empty, and B may be a new, empty machine). A chain's cost depends only on its first and last
// job, so a move is priced in constant time.
func improve(jobs []Job, p *pricer, chains [][]int) [][]int {
	// joined is the cost of a[:i] followed by b[j:].
	joined := func(a []int, i int, b []int, j int) int64 {
		first, last := -1, -1
		if i > 0 {
			first, last = a[0], a[i-1]
		}
		if j < len(b) {
			last = b[len(b)-1]
			if first < 0 {
				first = b[j]
			}
		}
		if first < 0 {
			return 0
		}
		return p.chainUnits(first, last)
	}
	fits := func(a []int, i int, b []int, j int) bool {
		return i == 0 || j == len(b) || jobs[a[i-1]].End() <= jobs[b[j]].Arrive
	}
	for improved := true; improved; {
		improved = false
		chains = append(dropEmpty(chains), nil) // an empty chain makes splits tail exchanges
		for x := range chains {
			for y := x + 1; y < len(chains); y++ {
				a, b := chains[x], chains[y]
				base := joined(a, len(a), nil, 0) + joined(b, len(b), nil, 0)
				for i := 0; i <= len(a) && !improved; i++ {
					for j := 0; j <= len(b); j++ {
						if fits(a, i, b, j) && fits(b, j, a, i) && joined(a, i, b, j)+joined(b, j, a, i) < base {
							na := append(append([]int{}, a[:i]...), b[j:]...)
							nb := append(append([]int{}, b[:j]...), a[i:]...)
							chains[x], chains[y], improved = na, nb, true
							break
						}
					}
				}
			}
		}
	}
	return dropEmpty(chains)
}

func dropEmpty(chains [][]int) [][]int {
	out := chains[:0]
	for _, c := range chains {
		if len(c) > 0 {
			out = append(out, c)
		}
	}
	return out
}
