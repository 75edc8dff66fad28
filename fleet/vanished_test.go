package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// laggy hides the instances it creates from List and Get for a while, like
// a cloud whose lists lag behind its creates.
type laggy struct {
	fleet.Provider
	lag    time.Duration
	mu     sync.Mutex
	hidden map[string]time.Time
}

func (p *laggy) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	inst, err := p.Provider.Create(ctx, req)
	if err == nil {
		p.mu.Lock()
		p.hidden[inst.ID] = time.Now().Add(p.lag)
		p.mu.Unlock()
	}
	return inst, err
}

func (p *laggy) visible(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return !time.Now().Before(p.hidden[id])
}

func (p *laggy) Get(ctx context.Context, id string) (fleet.Instance, error) {
	if !p.visible(id) {
		return fleet.Instance{}, fmt.Errorf("not listed yet: %w", fleet.ErrNotFound)
	}
	return p.Provider.Get(ctx, id)
}

func (p *laggy) List(ctx context.Context) ([]fleet.Instance, error) {
	list, err := p.Provider.List(ctx)
	return slices.DeleteFunc(list, func(i fleet.Instance) bool { return !p.visible(i.ID) }), err
}

// An instance missing from lists for longer than VisibilityGrace is taken
// as vanished and replaced; when it shows again after its fleet is gone
// (nothing else of the provider left to watch), it is still found and
// released, not left billing.
func TestAnInstanceTakenAsVanishedIsReleasedWhenItShowsAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		e.m.Close()
		hp := &laggy{Provider: e.hp, lag: 5 * time.Minute, hidden: map[string]time.Time{}}
		m := e.managerWith(fleet.Config{Providers: []fleet.Provider{e.vp, hp}, Owner: testOwner})
		e.m = m
		require.NoError(t, m.Apply(t.Context(), spec("lag", 1, hotType("vm-mi300x-1"))))
		require.True(t, e.runUntil(5*time.Minute, func() bool { return e.count(fleet.EventInstanceVanished) == 1 }))
		hp.mu.Lock()
		hp.lag = 0 // the replacement shows at once
		hp.mu.Unlock()
		require.NoError(t, m.Delete(t.Context(), "lag"))
		require.True(t, e.runUntil(5*time.Minute, func() bool { return e.count(fleet.EventFleetDeleted) == 1 }))
		require.Equal(t, 1, e.liveServers(), "the instance taken as vanished still exists, not yet listed")
		e.run(30 * time.Minute)
		assert.Zero(t, e.liveServers(), "found when it showed again, and released")
	})
}

// lateCreate commits a create only after wait and loses its answer (the call
// runs into its deadline); its List shows servers only lag after their create.
type lateCreate struct {
	fleet.Provider
	wait, lag time.Duration
}

func (p *lateCreate) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	time.Sleep(p.wait)
	if _, err := p.Provider.Create(ctx, req); err != nil {
		return fleet.Instance{}, err
	}
	<-ctx.Done()
	return fleet.Instance{}, ctx.Err()
}

func (p *lateCreate) List(ctx context.Context) ([]fleet.Instance, error) {
	return listedAfter(ctx, p.Provider, p.lag)
}

// listedAfter lists p's instances without those created less than lag ago.
func listedAfter(ctx context.Context, p fleet.Provider, lag time.Duration) ([]fleet.Instance, error) {
	list, err := p.List(ctx)
	return slices.DeleteFunc(list, func(i fleet.Instance) bool { return time.Since(i.Created) < lag }), err
}

// A create that commits late and times out is looked up by its label for
// CreateLookupGrace from its answer, not from its start: a list that lags a
// little behind the late commit still finds it, and nothing is created
// twice or left behind.
func TestALateCommittedCreateIsFoundByItsLabel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		e.m.Close()
		vp := &lateCreate{Provider: e.vp, wait: 4*time.Minute + 50*time.Second, lag: time.Minute}
		m := e.managerWith(fleet.Config{Providers: []fleet.Provider{vp, e.hp}, Owner: testOwner})
		e.m = m
		require.NoError(t, m.Apply(t.Context(), spec("late", 1, vultrVM("ewr"))))
		require.True(t, e.runUntil(15*time.Minute, func() bool { return e.count(fleet.EventInstanceAdopted) == 1 }))
		assert.Zero(t, e.count(fleet.EventCreateUnresolved))
		assert.Equal(t, 1, calls(e.vultr.Calls(), "POST /v2/instances", 0), "created once")
		require.NoError(t, m.Delete(t.Context(), "late"))
		require.True(t, e.runUntil(time.Hour, func() bool { return e.count(fleet.EventFleetDeleted) == 1 }))
		e.run(10 * time.Minute)
		e.assertNothingLeft()
	})
}

// lostAnswer loses the answer of its first create (which commits); its List
// shows servers only lag after their create.
type lostAnswer struct {
	fleet.Provider
	lag  time.Duration
	once sync.Once
}

func (p *lostAnswer) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	inst, err := p.Provider.Create(ctx, req)
	lost := false
	p.once.Do(func() { lost = true })
	if err == nil && lost {
		return fleet.Instance{}, errors.New("connection reset by peer")
	}
	return inst, err
}

func (p *lostAnswer) List(ctx context.Context) ([]fleet.Instance, error) {
	return listedAfter(ctx, p.Provider, p.lag)
}

// A create taken as failed because no list showed its label within
// CreateLookupGrace, whose server shows after all, is tracked again and
// released when its fleet no longer wants it: its closed record does not
// hide it.
func TestACreateTakenAsFailedIsTrackedWhenItsServerShows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, fleet.Policy{Release: fleet.ReleaseNow})
		e.m.Close()
		vp := &lostAnswer{Provider: e.vp, lag: 6 * time.Minute}
		m := e.managerWith(fleet.Config{Providers: []fleet.Provider{vp, e.hp}, Owner: testOwner})
		e.m = m
		require.NoError(t, m.Apply(t.Context(), spec("lost", 1, vultrVM("ewr"))))
		require.True(t, e.runUntil(10*time.Minute, func() bool { return e.count(fleet.EventCreateUnresolved) == 1 }))
		e.run(30 * time.Minute)
		assert.Equal(t, 1, e.liveServers(), "the fleet's one node; the server found late is released as surplus")
		require.NoError(t, m.Delete(t.Context(), "lost"))
		require.True(t, e.runUntil(time.Hour, func() bool { return e.count(fleet.EventFleetDeleted) == 1 }))
		e.run(10 * time.Minute)
		e.assertNothingLeft()
	})
}
