package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Acceptance 2, and rebuyPrior's own claim ("a fleet whose every node works
// in waves keeps them all between waves"): Hot Aisle bare metal (8 h
// prepaid), waves of 12 one-hour jobs every 3 hours. The 12 machines bought
// for the first wave should serve every wave (keeping one idle 2 hours
// costs 2 hours; a new one costs 8).
func TestTesterSWavesOfTwelveKeepAllTwelve(t *testing.T) {
	var jobs []workJob
	for w := range 4 {
		for range 12 {
			jobs = append(jobs, workJob{time.Duration(w) * 3 * time.Hour, time.Hour})
		}
	}
	res := driveWith(t, hotType("bm-mi300x-8"), jobs, driveOpts{tail: true})
	var total time.Duration
	for _, b := range res.Billed {
		total += b
	}
	assert.Len(t, res.Machines, 12, "rentals %v; billed %v in all", res.Machines, total)
}
