package fleet_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// handOutLog is the orchestrator's view in the give-back hammers: which
// job holds which node, and what went wrong.
type handOutLog struct {
	mu         sync.Mutex
	holder     map[string]string // node ID → job holding it
	twice      []string          // a node handed out while a job held it
	underJob   []string          // a job's own give-back refused (its node released or taken under it)
	beatFailed []string          // a job's heartbeat (MarkBusy of its node) refused
	acquired   int
	givenBack  int
	lateRepeat int
	beats      int
}

func (l *handOutLog) take(job string, in fleet.Instance) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acquired++
	if h := l.holder[in.ID]; h != "" {
		l.twice = append(l.twice, fmt.Sprintf("%s handed to %s while %s held it", in.ID, job, h))
	}
	l.holder[in.ID] = job
}

// giveBack frees the node in the log first (the next Acquire may come at
// once), then gives it back; a refusal puts it back.
func (l *handOutLog) giveBack(gb func(fleet.Instance) error, job string, in fleet.Instance) error {
	l.mu.Lock()
	if l.holder[in.ID] == job {
		l.holder[in.ID] = ""
	}
	l.mu.Unlock()
	err := gb(in)
	l.mu.Lock()
	defer l.mu.Unlock()
	if err != nil {
		l.underJob = append(l.underJob, fmt.Sprintf("%s: job %s's give-back: %v", in.ID, job, err))
	} else {
		l.givenBack++
	}
	return err
}

// hammerJobs runs jobs job goroutines for d: each acquires a node of
// fleet (growing the fleet back to nodes with Apply when none is idle, as
// an orchestrator does), holds it 1 to 20 minutes, gives it back, and
// sometimes repeats the give-back at once (a retry) or up to 15 minutes
// later (a queue that delivered it twice). With heartbeat, each job also
// marks its node busy (MarkBusy) halfway through its hold. acquire,
// giveBack and heartbeat may go through different replicas.
func hammerJobs(t *testing.T, seed uint64, jobs int, d time.Duration, s fleet.Spec, log *handOutLog,
	acquire func() (fleet.Instance, error), giveBack func(fleet.Instance) error, apply func(fleet.Spec) error,
	heartbeat func(fleet.Instance) error) {
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for j := range jobs {
		rng := rand.New(rand.NewPCG(seed, uint64(j)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("job%d", j)
			for n := 0; time.Now().Before(end); n++ {
				job := fmt.Sprintf("%s.%d", name, n)
				in, err := acquire()
				if err != nil {
					if errors.Is(err, fleet.ErrNoIdle) {
						_ = apply(s)
					}
					time.Sleep(time.Duration(10+rng.IntN(50)) * time.Second)
					continue
				}
				log.take(job, in)
				hold := time.Duration(1+rng.IntN(20)) * time.Minute
				if heartbeat != nil {
					time.Sleep(hold / 2)
					err := heartbeat(in)
					log.mu.Lock()
					log.beats++
					if err != nil {
						log.beatFailed = append(log.beatFailed, fmt.Sprintf("%s: job %s's heartbeat: %v", in.ID, job, err))
					}
					log.mu.Unlock()
					hold -= hold / 2
				}
				time.Sleep(hold)
				if log.giveBack(giveBack, job, in) != nil {
					continue
				}
				switch rng.IntN(4) {
				case 0:
					_ = giveBack(in) // a retry: idle already or taken again; nothing changes either way
				case 1:
					late := time.Duration(rng.IntN(15*60)) * time.Second
					wg.Add(1)
					go func() {
						defer wg.Done()
						time.Sleep(late)
						_ = giveBack(in)
						log.mu.Lock()
						log.lateRepeat++
						log.mu.Unlock()
					}()
				}
				time.Sleep(time.Duration(rng.IntN(10*60)) * time.Second)
			}
		}()
	}
	wg.Wait()
}

// GiveBack on a Manager alone, hammered: 6 jobs share a
// fleet of 3 Vultr VMs for 5 hours, each job giving its node back, with
// repeated and late give-backs and the idle release shrinking the fleet
// (the orchestrator applying Nodes 3 again when Acquire finds none idle).
// No node is handed to two jobs, no job's own give-back is refused, and
// once all jobs have ended no node stays busy (billing with no job).
// With heartbeats (each job's MarkBusy of its node), the same.
// (tester AZ: a guard, passing before the fix too; with heartbeats, before
// the fix, jobs' own give-backs refused and nodes left busy with no job.)
func TestGiveBackHammer(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		beat bool
	}{{1, false}, {2, false}, {3, false}, {1, true}, {2, true}} {
		seed := c.seed
		t.Run(fmt.Sprintf("seed %d, heartbeats %v", seed, c.beat), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				stop := e.running()
				defer func() { stop(); time.Sleep(time.Minute) }()
				s := spec("f", 3, vultrVM("ewr"))
				s.IdleTimeout = 5 * time.Minute
				require.NoError(t, e.m.Apply(t.Context(), s))
				log := &handOutLog{holder: map[string]string{}}
				var beat func(fleet.Instance) error
				if c.beat {
					beat = func(in fleet.Instance) error { return e.m.MarkBusy(in.ID) }
				}
				hammerJobs(t, seed, 6, 5*time.Hour, s, log,
					func() (fleet.Instance, error) { return e.m.Acquire(t.Context(), "f") }, e.m.GiveBack,
					func(s fleet.Spec) error { return e.m.Apply(t.Context(), s) }, beat)
				time.Sleep(time.Minute)
				var busy []string
				for _, in := range e.m.Instances("f") {
					if in.Status == fleet.StatusBusy {
						busy = append(busy, in.ID)
					}
				}
				t.Logf("acquired %d, given back %d, late repeats %d, heartbeats %d", log.acquired, log.givenBack, log.lateRepeat, log.beats)
				assert.Empty(t, log.twice, "nodes handed to two jobs")
				assert.Empty(t, log.beatFailed, "jobs' heartbeats refused")
				assert.Empty(t, log.underJob, "jobs' own give-backs refused")
				assert.Empty(t, busy, "nodes busy with every job ended")
			})
		})
	}
}

// GiveBack with replicas, hammered: the hammer above on 3 replicas sharing
// a MemoryLeaseStore, Acquire through whichever replica holds the fleet,
// each give-back (and its repeats) through a random live replica, and the
// holder killed at 1 h and at 2.5 h (failover). No node is handed to two
// jobs, no job's own give-back is refused, and once all jobs ended no node
// is busy by the store. With heartbeats (each job's MarkBusy of its node,
// through a random live replica), the same.
// (tester AZ: a guard, passing before the fix too; with heartbeats, before
// the fix, jobs' own give-backs refused and nodes left busy with no job.)
func TestReplicasGiveBackHammer(t *testing.T) {
	for _, c := range []struct {
		seed uint64
		beat bool
	}{{1, false}, {2, false}, {1, true}} {
		seed := c.seed
		t.Run(fmt.Sprintf("seed %d, heartbeats %v", seed, c.beat), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, fleet.Policy{})
				rs := apReplicas(t, e, fleet.Policy{}, 3)
				s := spec("f", 3, vultrVM("ewr"))
				s.IdleTimeout = 5 * time.Minute
				h := apConverge(t, rs, s)
				var mu sync.Mutex
				alive := []bool{true, true, true}
				kills := 0
				rng := rand.New(rand.NewPCG(seed, 99))
				pick := func() *fleet.Manager {
					mu.Lock()
					defer mu.Unlock()
					for {
						if i := rng.IntN(3); alive[i] {
							return rs.ms[i]
						}
					}
				}
				acquire := func() (fleet.Instance, error) {
					var last error
					for i, m := range rs.ms {
						mu.Lock()
						ok := alive[i]
						mu.Unlock()
						if !ok {
							continue
						}
						in, err := m.Acquire(t.Context(), "f")
						if err == nil {
							return in, nil
						}
						last = err
					}
					return fleet.Instance{}, last
				}
				giveBack := func(in fleet.Instance) error {
					var err error
					for range 5 {
						if err = pick().GiveBack(in); !errors.Is(err, fleet.ErrNotRecorded) && !errors.Is(err, fleet.ErrMaybeRecorded) {
							return err
						}
						time.Sleep(5 * time.Second)
					}
					return err
				}
				var beat func(fleet.Instance) error
				if c.beat {
					beat = func(in fleet.Instance) error {
						var err error
						for range 5 {
							if err = pick().MarkBusy(in.ID); !errors.Is(err, fleet.ErrNotRecorded) && !errors.Is(err, fleet.ErrMaybeRecorded) && !errors.Is(err, fleet.ErrClosed) {
								return err
							}
							time.Sleep(5 * time.Second)
						}
						return err
					}
				}
				go func() {
					for _, at := range []time.Duration{time.Hour, 150 * time.Minute} {
						time.Sleep(at)
						mu.Lock()
						h = rs.holderOf(t, "f")
						if h >= 0 && alive[h] {
							alive[h] = false
							kills++
							mu.Unlock()
							rs.stop(h)
							continue
						}
						mu.Unlock()
					}
				}()
				log := &handOutLog{holder: map[string]string{}}
				hammerJobs(t, seed, 6, 5*time.Hour, s, log, acquire, giveBack,
					func(s fleet.Spec) error { return pick().Apply(t.Context(), s) }, beat)
				time.Sleep(2 * time.Minute)
				recs, err := rs.store.Instances(t.Context())
				require.NoError(t, err)
				var busy []string
				for _, r := range recs {
					if r.Instance.Fleet == "f" && r.Instance.Status == fleet.StatusBusy {
						busy = append(busy, r.Instance.ID)
					}
				}
				mu.Lock()
				t.Logf("acquired %d, given back %d, late repeats %d, heartbeats %d, holders killed %d", log.acquired, log.givenBack, log.lateRepeat, log.beats, kills)
				mu.Unlock()
				assert.Empty(t, log.twice, "nodes handed to two jobs")
				assert.Empty(t, log.beatFailed, "jobs' heartbeats refused")
				assert.Empty(t, log.underJob, "jobs' own give-backs refused")
				assert.Empty(t, busy, "nodes busy by the store with every job ended")
				for i := range rs.ms {
					mu.Lock()
					ok := alive[i]
					mu.Unlock()
					if ok {
						rs.stop(i)
					}
				}
				time.Sleep(time.Minute)
			})
		})
	}
}
