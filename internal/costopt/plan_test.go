package costopt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twoJobs: job 1 from 0 to 30 min, job 2 from 40 to 50 min.
func twoJobs() Trace {
	m := time.Minute
	return Trace{Jobs: []Job{{ID: 1, Arrive: 0, Duration: 30 * m}, {ID: 2, Arrive: 40 * m, Duration: 10 * m}}}
}

func TestPlanCheckAndWaits(t *testing.T) {
	m := time.Minute
	b := VultrVM() // boots in 2.5 min
	good := Plan{Billing: b, Machines: []Machine{{Created: -3 * m, Deleted: 55 * m,
		Runs: []Run{{Job: 1, Start: 0}, {Job: 2, Start: 45 * m}}}}}
	require.NoError(t, good.Check(twoJobs()))
	waits, err := good.JobWaits(twoJobs())
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{0, 5 * m}, waits)
	assert.Equal(t, int64(1), good.Units(), "58 minutes alive: one hour")
	assert.InDelta(t, 2.397, good.Bill(), 1e-9)

	bad := map[string]Plan{
		"job missing": {Billing: b, Machines: []Machine{{Created: -3 * m, Deleted: 55 * m, Runs: []Run{{Job: 1}}}}},
		"served twice": {Billing: b, Machines: []Machine{
			{Created: -3 * m, Deleted: 55 * m, Runs: []Run{{Job: 1}, {Job: 2, Start: 40 * m}}},
			{Created: 30 * m, Deleted: 55 * m, Runs: []Run{{Job: 2, Start: 40 * m}}}}},
		"unknown job": {Billing: b, Machines: []Machine{{Created: -3 * m, Deleted: 55 * m,
			Runs: []Run{{Job: 1}, {Job: 2, Start: 40 * m}, {Job: 3, Start: 51 * m}}}}},
		"before arrival": {Billing: b, Machines: []Machine{{Created: -3 * m, Deleted: 55 * m,
			Runs: []Run{{Job: 1}, {Job: 2, Start: 35 * m}}}}},
		"before boot": {Billing: b, Machines: []Machine{{Created: -m, Deleted: 55 * m,
			Runs: []Run{{Job: 1}, {Job: 2, Start: 40 * m}}}}},
		"overlap": {Billing: b, Machines: []Machine{{Created: -3 * m, Deleted: 70 * m,
			Runs: []Run{{Job: 2, Start: 40 * m}, {Job: 1, Start: 45 * m}}}}},
		"deleted early": {Billing: b, Machines: []Machine{{Created: -3 * m, Deleted: 49 * m,
			Runs: []Run{{Job: 1}, {Job: 2, Start: 40 * m}}}}},
	}
	for name, p := range bad {
		assert.Error(t, p.Check(twoJobs()), name)
	}
}
