package fleet

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deadAgentK is a keyed agent whose checks fail once dead is set.
type deadAgentK struct {
	mu     sync.Mutex
	dead   bool
	checks int
}

func (a *deadAgentK) Start(context.Context, Instance) error { return nil }
func (a *deadAgentK) Check(context.Context, Instance) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.checks++
	if a.dead {
		return errors.New("agent not answering")
	}
	return nil
}
func (a *deadAgentK) WithKey(PrivateKey) Agent { return a }

// readyFleetClosed runs fleet "f" (one Vultr VM, an agent, a private key)
// until its node is idle, then closes its Manager: the provider, store and
// agent a Manager restarted without the key takes over.
func readyFleetClosed(t *testing.T) (*fakeProvider, Store, *deadAgentK) {
	seed := sha256.Sum256([]byte("fleet q"))
	key := NewPrivateKey(ed25519.NewKeyFromSeed(seed[:]))
	p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
	store := NewMemoryStore()
	agent := &deadAgentK{}
	m1, _ := newTestManager(t, Config{Providers: []Provider{p}, Agent: agent, Store: store})
	require.NoError(t, m1.Apply(t.Context(), Spec{Name: "f", Nodes: 1, PrivateKey: key}))
	passes(t, m1, 30*time.Minute)
	require.Equal(t, StatusIdle, m1.Instances("f")[0].Status)
	m1.Close()
	return p, store, agent
}

// A Manager restarted (same store) without the fleet's private key, whose
// instances are all ready; the agent dies after the restart. No agent
// check can log in without the key: the fleet is told so once
// (AgentKeyMissing, formerly said only for booting instances, so checks
// stopped silently), and once the node has gone unchecked for
// AgentCheckInterval × AgentCheckFailures Acquire no longer hands it out
// (ErrNoIdle saying why) instead of handing out a node whose agent died.
func TestRestartWithoutKeySaysChecksStopAndAcquireRefuses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, store, agent := readyFleetClosed(t)

		agent.mu.Lock()
		agent.dead, agent.checks = true, 0
		agent.mu.Unlock()
		m2, log := newTestManager(t, Config{Providers: []Provider{p}, Agent: agent, Store: store})
		passes(t, m2, 3*time.Hour)
		agent.mu.Lock()
		checks := agent.checks
		agent.mu.Unlock()
		said := log.count(EventAgentKeyMissing) + log.count(EventAgentUnhealthy)
		assert.True(t, checks > 0 || said > 0,
			"a dead agent after a restart without the key: %d checks, %d AgentKeyMissing, %d AgentUnhealthy events",
			checks, log.count(EventAgentKeyMissing), log.count(EventAgentUnhealthy))
		inst, err := m2.Acquire(t.Context(), "f")
		assert.Error(t, err, "the unchecked node with a dead agent was handed out: %s", inst.ID)
		assert.ErrorIs(t, err, ErrNoIdle)
		assert.ErrorContains(t, err, "private key")
		assert.Equal(t, 1, log.count(EventAgentKeyMissing), "said once for the fleet")
	})
}

// Within AgentCheckInterval × AgentCheckFailures of a restart without the
// key, a ready node is still handed out: its agent is not known unhealthy.
func TestRestartWithoutKeyHandsOutRecentlyCheckedNode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, store, agent := readyFleetClosed(t)

		m2, log := newTestManager(t, Config{Providers: []Provider{p}, Agent: agent, Store: store})
		passes(t, m2, 5*time.Minute)
		_, err := m2.Acquire(t.Context(), "f")
		assert.NoError(t, err)
		assert.Equal(t, 1, log.count(EventAgentKeyMissing))
	})
}
