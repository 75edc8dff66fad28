package fleet_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Two jobs an hour apart on one Vultr VM kind: the second reuses the first
// node while its hour is paid, and the bill is what the jobs need.
func TestDriverReusesAPaidNode(t *testing.T) {
	jobs := sortedJobs([]workJob{{0, 10 * time.Minute}, {20 * time.Minute, 10 * time.Minute}})
	res := driveJobs(t, vultrVM("ewr"), jobs, defaultPolicy())
	assert.Equal(t, []time.Duration{time.Hour}, res.Billed, "one node, one hour")
	assert.Zero(t, res.Waits[1], "the second job found the paid node idle")
}
