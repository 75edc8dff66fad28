package costopt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Holds (tester AO): hand-solved traces on Hot Aisle bare metal (480-minute
// minimum, 10-minute boot, per-minute billing) that no other test covers: a
// job longer than the 8-hour minimum, and a short job arriving while that
// long job still runs (dstack's rules buy a second 8-hour machine; the
// optimum, knowing the future, keeps one machine).
//
//   - one 9 h job: created 10 min before it, deleted at its end: 550 minutes
//     (over the minimum, billed per minute), 248.60 USD; dstack's rules
//     create it at the arrival (the job waits 10 min) and kill it at the
//     first 14-second check after 5 idle minutes: 556 minutes.
//   - a 9 h job at 0 and a 5-minute job at 9 h 01: the optimum runs both on
//     one machine (created at -10 min, deleted at 9 h 06: 556 minutes);
//     dstack's first machine is busy until 9 h 10 (it booted at arrival),
//     so the second job gets a new machine (480 minutes, waits 10 min), and
//     the first machine is killed at 9 h 15 and a bit: 556 + 480 minutes.
//   - Core of the second trace with a 10-minute wait: the long job from 10
//     min to 9 h (machine from 0: 540 minutes), the short job dropped: a
//     bound under dstack's plan, whose jobs wait 10 minutes.
func TestHotAisleBareMetalJobsPastTheMinimum(t *testing.T) {
	h, m := time.Hour, time.Minute
	b := HotAisleBareMetal()
	one := Trace{Jobs: []Job{{0, 0, 9 * h}}}
	o, err := Optimum(one, b)
	require.NoError(t, err)
	assert.True(t, o.Proven)
	assert.Equal(t, int64(550), o.Units())
	assert.InDelta(t, 248.60, o.Bill(), 1e-9)
	d, err := ReplayDstack(one, b)
	require.NoError(t, err)
	assert.Equal(t, int64(556), d.Units())
	assert.Equal(t, []time.Duration{10 * m}, d.Waits)

	two := Trace{Jobs: []Job{{0, 0, 9 * h}, {1, 9*h + m, 5 * m}}}
	o, err = Optimum(two, b)
	require.NoError(t, err)
	assert.Len(t, o.Machines, 1)
	assert.Equal(t, int64(556), o.Units())
	d, err = ReplayDstack(two, b)
	require.NoError(t, err)
	assert.Len(t, d.Machines, 2)
	assert.Equal(t, int64(556+480), d.Units())
	assert.Equal(t, []time.Duration{10 * m, 10 * m}, d.Waits)
	require.NoError(t, d.Check(two))
	c, err := Optimum(Core(two, 10*m), b)
	require.NoError(t, err)
	assert.Equal(t, int64(540), c.Units(), "the core: the long job from 10 min to 9 h on a machine created at 0, the short one dropped")
	assert.LessOrEqual(t, c.Bill(), d.Bill())
}
