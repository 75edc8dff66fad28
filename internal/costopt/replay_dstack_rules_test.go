package costopt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 17, acceptance point 4: dstack's rules are "5-minute idle kill,
// forced Hot Aisle VM deletes, untrack after 15 minutes of refused
// releases". dstack forces only its VM deletes (DELETE
// .../virtual_machines/{vm}/?force=true); a bare-metal DELETE before the
// 480-minute minimum is refused (400 "server cannot be released due to
// minimum usage requirement", scenarios.md), dstack retries it for 15
// minutes, then marks the instance terminated and never looks at it again
// (lifecycle-notes §3, #3241): the server keeps running past its minimum.
// ReplayDstack deletes it 5 idle minutes after its job, inside the minimum.
func TestDstackReplayHotAisleBareMetalDeleteIsRefusedThenUntracked(t *testing.T) {
	b := HotAisleBareMetal()
	tr := Trace{Jobs: []Job{{ID: 0, Arrive: 0, Duration: 30 * time.Minute}}}
	rp, err := ReplayDstack(tr, b)
	require.NoError(t, err)
	require.Len(t, rp.Machines, 1)
	m := rp.Machines[0]
	assert.GreaterOrEqual(t, m.Deleted, m.Created+b.Minimum,
		"a bare-metal server whose unforced delete is refused until its minimum cannot be gone at %v (created %v); "+
			"after 15 min of refusals dstack untracks it and it keeps billing", m.Deleted, m.Created)
}

// dstack terminates an idle instance when now - last_job_processed_at >
// termination_idle_time (strictly), checked on 14-second ticks
// (lifecycle-notes §4.1): an instance idle for exactly 5 minutes is still
// there, and a job arriving then reuses it. The replay deletes it at exactly
// 5:00 and buys a new machine (a second 30-minute minimum).
func TestDstackReplayIdleForExactlyFiveMinutesIsNotYetKilled(t *testing.T) {
	b := HotAisleVM()
	m := time.Minute
	end := b.BootTime + 10*m // job 0 runs from the boot to here
	tr := Trace{Jobs: []Job{{ID: 0, Arrive: 0, Duration: 10 * m}, {ID: 1, Arrive: end + 5*m, Duration: 10 * m}}}
	rp, err := ReplayDstack(tr, b)
	require.NoError(t, err)
	assert.Len(t, rp.Machines, 1, "job 1 arrives after exactly 5 idle minutes: dstack has not killed the instance yet; machines %+v", rp.Machines)
	assert.Equal(t, []time.Duration{b.BootTime, 0}, rp.Waits)
}
