package fleet

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

func authorizedKeyLine(t *testing.T) string {
	seed := sha256.Sum256([]byte("hardening"))
	pub, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(seed[:]).Public())
	require.NoError(t, err)
	return strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub))) + " user@host"
}

func TestApplyAndNewManagerRejectBadInput(t *testing.T) {
	p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
	m, _ := newTestManager(t, Config{Providers: []Provider{p}})
	ctx := context.Background()
	good := authorizedKeyLine(t)
	for name, s := range map[string]Spec{
		"bad name":          {Name: "Bad_Name", Nodes: 1},
		"negative nodes":    {Name: "f", Nodes: -1},
		"too many nodes":    {Name: "f", Nodes: MaxNodes + 1},
		"negative gpus":     {Name: "f", Nodes: 1, Requirements: Requirements{GPUCount: -1}},
		"negative price":    {Name: "f", Nodes: 1, Requirements: Requirements{MaxPricePerHour: -1}},
		"bare metal value":  {Name: "f", Nodes: 1, Requirements: Requirements{BareMetal: 7}},
		"unknown provider":  {Name: "f", Nodes: 1, Requirements: Requirements{Providers: []string{"aws"}}},
		"key injection":     {Name: "f", Nodes: 1, SSHKeys: []string{good + "\nruncmd:\n  - curl x | sh"}},
		"not a key":         {Name: "f", Nodes: 1, SSHKeys: []string{"not a key"}},
		"empty key":         {Name: "f", Nodes: 1, SSHKeys: []string{""}},
		"unknown placement": {Name: "f", Nodes: 1, Placement: "rack"},
	} {
		assert.Error(t, m.Apply(ctx, s), name)
	}
	assert.Empty(t, m.Fleets(), "nothing applied")
	assert.NoError(t, m.Apply(ctx, Spec{Name: "f", Nodes: 1, SSHKeys: []string{good},
		Requirements: Requirements{Providers: []string{"VULTR"}}}), "provider names ignore case")

	// (tester AY: before, margins of an hour or more were accepted: with
	// HourlyReleaseMargin 2 h a Vultr VM was released 6m47s into the hour
	// it paid for and its fleet lowered to 0; and no refusal had a class.)
	for name, pol := range map[string]Policy{
		"negative":                     {AgentTimeout: -time.Second},
		"min > max":                    {TerminationMinBackoff: time.Hour, TerminationMaxBackoff: time.Minute},
		"bogus":                        {Release: "bogus"},
		"HourlyReleaseMargin 2h":       {HourlyReleaseMargin: 2 * time.Hour},
		"HourlyReleaseMargin 30m":      {HourlyReleaseMargin: 30 * time.Minute},
		"CalmHourlyReleaseMargin 90m":  {CalmHourlyReleaseMargin: 90 * time.Minute},
		"MinuteReleaseMargin 8h":       {MinuteReleaseMargin: 8 * time.Hour},
		"MinuteReleaseMargin 15m":      {MinuteReleaseMargin: 15 * time.Minute},
		"RebuySpares without its hold": {RebuySpares: 2},
	} {
		_, err := NewManager(Config{Providers: []Provider{p}, Policy: pol})
		assert.ErrorIs(t, err, ErrInvalidConfig, name)
	}
	for name, cfg := range map[string]Config{
		"negative interval": {Providers: []Provider{p}, Interval: -time.Second},
		"no providers":      {},
		"provider twice":    {Providers: []Provider{p, p}},
		"bad owner":         {Providers: []Provider{p}, Owner: "Not An Owner"},
		"replica, no lease": {Providers: []Provider{p}, Owner: "abc", ReplicaID: "r1"},
	} {
		_, err := NewManager(cfg)
		assert.ErrorIs(t, err, ErrInvalidConfig, name)
	}
	for name, pol := range map[string]Policy{
		"margins just under their bounds": {HourlyReleaseMargin: 29 * time.Minute, CalmHourlyReleaseMargin: 29 * time.Minute, MinuteReleaseMargin: 14 * time.Minute},
	} {
		m2, err := NewManager(Config{Providers: []Provider{p}, Policy: pol})
		if assert.NoError(t, err, name) {
			m2.Close()
		}
	}
	var err error

	_, err = m.Release(ctx, "")
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorIs(t, m.MarkIdle(""), ErrNotFound)
	_, err = m.Release(ctx, "x", WithReleasePolicy("bogus"))
	assert.Error(t, err)
}

func TestReleaseOfATerminatedInstanceDoesNotReopenIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		m, log := newTestManager(t, Config{Providers: []Provider{p}, Policy: Policy{Release: ReleaseNow}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 3*time.Minute)
		id := m.Instances("f")[0].ID
		require.NoError(t, m.Delete(t.Context(), "f"))
		passes(t, m, time.Minute)
		require.Equal(t, StatusTerminated, m.Instances("f")[0].Status)
		_, err := m.Release(t.Context(), id, WithReleasePolicy(ReleaseNow))
		assert.ErrorIs(t, err, ErrNotFound)
		assert.Equal(t, StatusTerminated, m.Instances("f")[0].Status)
		assert.Equal(t, 1, log.count(EventInstanceTerminated))
	})
}

func TestGrowingAgainReusesInstancesWaitingForTheirWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("hotaisle", vmOffer("hotaisle", 5.98, time.Hour))
		m, log := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 3}))
		passes(t, m, 5*time.Minute)
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 5*time.Minute)
		assert.Equal(t, 2, statuses(m.Instances("f"))[StatusTerminating], "waiting for the paid hour to end")
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 3}))
		passes(t, m, 5*time.Minute)
		assert.Equal(t, 2, log.count(EventReleaseCancelled))
		assert.Equal(t, 3, statuses(m.Instances("f"))[StatusIdle])
		assert.Equal(t, 3, p.count("create"), "nothing created again")
		assert.Zero(t, p.count("delete"))
	})
}

func TestRepeatedDeadlineMissesStallTheFleet(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		p.bootTime = 1000 * time.Hour // never running
		m, log := newTestManager(t, Config{Providers: []Provider{p}, Policy: Policy{Release: ReleaseNow}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 10*time.Hour)
		assert.Equal(t, 1, log.count(EventFleetStalled))
		assert.Equal(t, 3, p.count("create"), "three tries, then no more")
		assert.Zero(t, p.live(), "the failed ones are released")
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, time.Minute)
		assert.Equal(t, 4, p.count("create"), "applying again resumes")
	})
}

// keyedFake is an agent that records the key it was given.
type keyedFake struct {
	mu     sync.Mutex
	key    PrivateKey
	starts int
}

func (a *keyedFake) Start(context.Context, Instance) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.starts++
	return nil
}
func (a *keyedFake) Check(context.Context, Instance) error { return nil }
func (a *keyedFake) WithKey(k PrivateKey) Agent {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.key = k
	return a
}

func TestRestartWithoutTheFleetKeyWaitsForItInsteadOfKillingInstances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seed := sha256.Sum256([]byte("fleet"))
		key := NewPrivateKey(ed25519.NewKeyFromSeed(seed[:]))
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		store := NewMemoryStore()
		agent := &keyedFake{}
		m1, _ := newTestManager(t, Config{Providers: []Provider{p}, Agent: agent, Store: store})
		require.NoError(t, m1.Apply(t.Context(), Spec{Name: "f", Nodes: 1, PrivateKey: key}))
		passes(t, m1, time.Minute) // created, not running yet
		m1.Close()
		m2, log := newTestManager(t, Config{Providers: []Provider{p}, Agent: agent, Store: store})
		passes(t, m2, time.Hour)
		assert.Equal(t, StatusBooting, m2.Instances("f")[0].Status, "held, not released at the agent deadline")
		assert.Zero(t, agent.starts)
		assert.Equal(t, 1, log.count(EventAgentKeyMissing))
		assert.Zero(t, log.count(EventDeadlineMissed))
		require.NoError(t, m2.Apply(t.Context(), Spec{Name: "f", Nodes: 1, PrivateKey: key}))
		passes(t, m2, time.Minute)
		assert.Equal(t, StatusIdle, m2.Instances("f")[0].Status)
		assert.Equal(t, 1, agent.starts)
		assert.False(t, agent.key.IsZero(), "started with the fleet's key")
	})
}

func TestRunAndReconcileTogetherDoNotDeadlockABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		m, _ := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 2}))
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		for range 30 {
			require.NoError(t, m.Reconcile(ctx))
			time.Sleep(3 * time.Second)
		}
		assert.ErrorIs(t, <-done, context.DeadlineExceeded)
		assert.Equal(t, 2, statuses(m.Instances("f"))[StatusIdle])
	})
}

func TestCloseWaitsForOfferFetches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		p.offersDelay = time.Minute
		m, err := NewManager(Config{Providers: []Provider{p}})
		require.NoError(t, err)
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		_ = m.Reconcile(ctx) // gives up waiting for the fetch
		m.Close()            // must not leave the fetch running in the bubble
	})
}

func TestAPrepaidOfferStallsItsFleetAtTheFirstDeadlineMiss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		o := vmOffer("hotaisle", 27.12, 8*time.Hour)
		o.BareMetal = true
		p := newFakeProvider("hotaisle", o)
		p.bootTime = 1000 * time.Hour
		m, log := newTestManager(t, Config{Providers: []Provider{p}})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 10*time.Hour)
		assert.Equal(t, 1, log.count(EventFleetStalled))
		assert.Equal(t, 1, p.count("create"), "one 8-hour prepayment, not one per try")
	})
}

type nilAgent struct{}

func (*nilAgent) Start(context.Context, Instance) error { panic("called") }
func (*nilAgent) Check(context.Context, Instance) error { panic("called") }

// A nil pointer wrapped in the Agent interface means no agent, as a nil
// interface does; a nil pointer provider is refused.
func TestTypedNilAgentMeansNoAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var a *nilAgent
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		m, _ := newTestManager(t, Config{Providers: []Provider{p}, Agent: a})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, 5*time.Minute)
		assert.Equal(t, StatusIdle, m.Instances("f")[0].Status)
		var np *fakeProvider
		_, err := NewManager(Config{Providers: []Provider{np}})
		assert.Error(t, err)
	})
}
