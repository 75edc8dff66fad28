package costopt

import "math"

// bruteForce returns the least units over all partitions of the trace's
// jobs into chains (every block's jobs run back to back on one machine,
// each from its arrival), by enumerating every set partition.
func bruteForce(t Trace, b Billing) int64 {
	jobs := t.Jobs
	best := int64(math.MaxInt64)
	var blocks [][]int
	var rec func(k int, units int64)
	rec = func(k int, units int64) {
		if k == len(jobs) {
			total := units
			for _, bl := range blocks {
				total += blockUnits(jobs, b, bl)
			}
			best = min(best, total)
			return
		}
		for i := range blocks {
			last := blocks[i][len(blocks[i])-1]
			if jobs[last].End() > jobs[k].Arrive {
				continue // blocks hold jobs in trace order: k must start after the last ends
			}
			blocks[i] = append(blocks[i], k)
			rec(k+1, units)
			blocks[i] = blocks[i][:len(blocks[i])-1]
		}
		blocks = append(blocks, []int{k})
		rec(k+1, units)
		blocks = blocks[:len(blocks)-1]
	}
	rec(0, 0)
	return best
}

func blockUnits(jobs []Job, b Billing, bl []int) int64 {
	first, last := jobs[bl[0]], jobs[bl[len(bl)-1]]
	return b.Units(last.End() - first.Arrive + b.BootTime)
}
