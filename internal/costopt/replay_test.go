package costopt

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func replay(t *testing.T, tr Trace, b Billing, r Rules) Replayed {
	t.Helper()
	rp, err := Replay(tr, b, r)
	require.NoError(t, err)
	require.NoError(t, rp.Check(tr))
	waits, err := rp.JobWaits(tr)
	require.NoError(t, err)
	require.Equal(t, waits, rp.Waits)
	return rp
}

func TestReplayDstack(t *testing.T) {
	m := time.Minute
	job := func(id int, at, d time.Duration) Job { return Job{ID: id, Arrive: at, Duration: d} }
	b := HotAisleVM() // boots in 90 s, 30 min minimum, per minute
	boot := b.BootTime
	// checked is the first idle check (every 14 s from the machine's create)
	// after idle: deleted then.
	checked := func(created, idle time.Duration) time.Duration {
		const tick = 14 * time.Second
		return created + ((idle-created)/tick+1)*tick
	}
	cases := []struct {
		name     string
		jobs     []Job
		machines []Machine
		waits    []time.Duration
		units    int64
	}{
		{"a new machine per job makes it wait the boot", []Job{job(1, 0, 10*m)},
			[]Machine{{Created: 0, Deleted: checked(0, boot+15*m), Runs: []Run{{1, boot}}}},
			[]time.Duration{boot}, 30},
		{"an idle machine is reused at once", []Job{job(1, 0, 10*m), job(2, 14*m, 10*m)},
			[]Machine{{Created: 0, Deleted: checked(0, 29*m), Runs: []Run{{1, boot}, {2, 14 * m}}}},
			[]time.Duration{boot, 0}, 30},
		{"idle for exactly 5 minutes it is still there", []Job{job(1, 0, 10*m), job(2, boot+15*m, 10*m)},
			[]Machine{{Created: 0, Deleted: checked(0, boot+30*m), Runs: []Run{{1, boot}, {2, boot + 15*m}}}},
			[]time.Duration{boot, 0}, 32}, // 31 min 54 s
		{"after 5 idle minutes and a check it is gone", []Job{job(1, 0, 10*m), job(2, boot+15*m+10*time.Second, 10*m)},
			[]Machine{
				{Created: 0, Deleted: checked(0, boot+15*m), Runs: []Run{{1, boot}}},
				{Created: boot + 15*m + 10*time.Second, Deleted: checked(boot+15*m+10*time.Second, 2*boot+30*m+10*time.Second),
					Runs: []Run{{2, 2*boot + 15*m + 10*time.Second}}}},
			[]time.Duration{boot, boot}, 60},
		{"a busy machine is not reused", []Job{job(1, 0, 40*m), job(2, 5*m, 10*m)},
			[]Machine{
				{Created: 0, Deleted: checked(0, boot+45*m), Runs: []Run{{1, boot}}},
				{Created: 5 * m, Deleted: checked(5*m, boot+20*m), Runs: []Run{{2, 5*m + boot}}}},
			[]time.Duration{boot, boot}, 47 + 30}, // 46 min 40 s -> 47, and the 30 min minimum
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := Trace{Jobs: c.jobs}
			rp := replay(t, tr, b, DstackRules())
			assert.Equal(t, c.machines, rp.Machines)
			assert.Equal(t, c.waits, rp.Waits)
			assert.Equal(t, c.units, rp.Units())
		})
	}
	direct, err := ReplayDstack(Trace{Jobs: cases[1].jobs}, b)
	require.NoError(t, err)
	assert.Equal(t, cases[1].machines, direct.Machines)
	assert.Equal(t, boot/2, direct.MeanWait())
}

func TestReplayPaidWindow(t *testing.T) {
	m, h := time.Minute, time.Hour
	b := VultrVM() // boots in 150 s, per started hour
	boot := b.BootTime
	tr := Trace{Jobs: []Job{
		{ID: 1, Arrive: 0, Duration: 10 * m},
		{ID: 2, Arrive: 5 * m, Duration: 70 * m},
		{ID: 3, Arrive: 50 * m, Duration: 5 * m},  // machine 1 is idle and paid until 1 h
		{ID: 4, Arrive: 100 * m, Duration: 5 * m}, // machine 1 is gone; machine 2 is paid until 2h05
	}}
	rp := replay(t, tr, b, PaidWindowRules())
	assert.Equal(t, []Machine{
		{Created: 0, Deleted: h, Runs: []Run{{1, boot}, {3, 50 * m}}},
		{Created: 5 * m, Deleted: 2*h + 5*m, Runs: []Run{{2, 5*m + boot}, {4, 100 * m}}},
	}, rp.Machines)
	assert.Equal(t, []time.Duration{boot, boot, 0, 0}, rp.Waits)
	assert.Equal(t, int64(3), rp.Units())

	dstack := replay(t, tr, b, DstackRules())
	assert.Len(t, dstack.Machines, 4, "dstack drops machine 1 after 5 idle minutes")
	assert.Equal(t, int64(5), dstack.Units())
}

func TestReplayPick(t *testing.T) {
	m := time.Minute
	b := VultrVM()
	// Machines 1 (created at 0) and 2 (created at 40 min) are both idle at
	// 75 min; machine 2 has paid until 1h40, machine 1 until 1 h.
	tr := Trace{Jobs: []Job{
		{ID: 1, Arrive: 0, Duration: 50 * m},
		{ID: 2, Arrive: 40 * m, Duration: 30 * m},
		{ID: 3, Arrive: 75 * m, Duration: 10 * m},
	}}
	keep := Rules{IdleTimeout: time.Hour}
	oldest := replay(t, tr, b, keep)
	assert.Equal(t, 3, oldest.Machines[0].Runs[1].Job, "the oldest machine takes the job")
	keep.Pick = PickMostPaid
	paid := replay(t, tr, b, keep)
	assert.Equal(t, 3, paid.Machines[1].Runs[1].Job, "the machine paid longest takes the job")
}

func TestReplayRejectsBadInput(t *testing.T) {
	_, err := Replay(twoJobs(), VultrVM(), Rules{IdleTimeout: -time.Second})
	assert.Error(t, err)
	_, err = Replay(Trace{Jobs: []Job{{ID: 1}}}, VultrVM(), DstackRules())
	assert.Error(t, err)
	_, err = Replay(twoJobs(), Billing{}, DstackRules())
	assert.Error(t, err)
	rp, err := Replay(Trace{}, VultrVM(), DstackRules())
	require.NoError(t, err)
	assert.Zero(t, rp.Bill())
	assert.Zero(t, rp.MeanWait())
}

// Deletes refused inside the minimum (Hot Aisle without force): retried
// every 30 s, deleted at the first retry after the minimum when that comes
// within GiveUp; else the machine is forgotten, takes no job, and is billed
// to the end of the trace. dstack forces VM deletes only.
func TestReplayRefusedDeletes(t *testing.T) {
	m, s := time.Minute, time.Second
	vm := HotAisleVM() // 30 min minimum
	unforced := Rules{IdleTimeout: 5 * m, GiveUp: 15 * m}
	// Idle from 11m30s: the delete is decided at 16m30s, refused before
	// 30m, accepted at the retry at 30m; decided at 16m40s, at 30m10s.
	rp := replay(t, Trace{Jobs: []Job{{ID: 1, Arrive: 0, Duration: 10 * m}}}, vm, unforced)
	assert.Equal(t, 30*m, rp.Machines[0].Deleted)
	rp = replay(t, Trace{Jobs: []Job{{ID: 1, Arrive: 0, Duration: 10*m + 10*s}}}, vm, unforced)
	assert.Equal(t, 30*m+10*s, rp.Machines[0].Deleted)
	// A job arriving while the refused delete is retried gets a new machine.
	rp = replay(t, Trace{Jobs: []Job{{ID: 1, Arrive: 0, Duration: 10 * m}, {ID: 2, Arrive: 20 * m, Duration: m}}}, vm, unforced)
	require.Len(t, rp.Machines, 2)
	// dstack forces VM deletes: gone at its idle check.
	rp = replay(t, Trace{Jobs: []Job{{ID: 1, Arrive: 0, Duration: 10 * m}}}, vm, DstackRules())
	assert.Less(t, rp.Machines[0].Deleted, 17*m)

	bm := HotAisleBareMetal() // 8 h minimum, 10 min boot, never forced by dstack
	tr := Trace{Jobs: []Job{{ID: 1, Arrive: 0, Duration: 30 * m}, {ID: 2, Arrive: 2 * time.Hour, Duration: 10 * time.Hour}}}
	rp = replay(t, tr, bm, DstackRules())
	require.Len(t, rp.Machines, 2, "the forgotten server takes no job: the second job buys another")
	end := 2*time.Hour + bm.BootTime + 10*time.Hour
	assert.Equal(t, end, rp.Machines[0].Deleted, "forgotten, billed to the end of the trace")
	assert.Equal(t, []time.Duration{bm.BootTime, bm.BootTime}, rp.Waits)
}
