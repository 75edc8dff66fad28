package costopt

import "math"

// bruteForce returns the least units over all partitions of the trace's
// jobs into machines (each machine's jobs run back to back, each from its
// arrival), by enumerating the partitions: jobs in arrival order join an
// existing machine whose last job has ended, or a new one. A branch stops
// when its partial bill already reaches the best found, which is safe
// because adding a job never lowers a machine's bill.
func bruteForce(t Trace, b Billing) int64 {
	jobs := t.Jobs
	best := int64(math.MaxInt64)
	var blocks [][]int
	var rec func(k int, units int64)
	rec = func(k int, units int64) {
		if units >= best {
			return
		}
		if k == len(jobs) {
			best = units
			return
		}
		for i := range blocks {
			last := blocks[i][len(blocks[i])-1]
			if jobs[last].End() > jobs[k].Arrive {
				continue
			}
			before := blockUnits(jobs, b, blocks[i])
			blocks[i] = append(blocks[i], k)
			rec(k+1, units-before+blockUnits(jobs, b, blocks[i]))
			blocks[i] = blocks[i][:len(blocks[i])-1]
		}
		blocks = append(blocks, []int{k})
		rec(k+1, units+blockUnits(jobs, b, []int{k}))
		blocks = blocks[:len(blocks)-1]
	}
	rec(0, 0)
	return best
}

func blockUnits(jobs []Job, b Billing, bl []int) int64 {
	first, last := jobs[bl[0]], jobs[bl[len(bl)-1]]
	return b.Units(last.End() - first.Arrive + b.BootTime)
}
