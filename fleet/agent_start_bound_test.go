package fleet

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pathAgent's Start fails with ErrAgentPathDown until up, or (hang) blocks
// until its context ends on the first call.
type pathAgent struct {
	mu     sync.Mutex
	up     time.Time
	hang   bool
	starts int
}

func (a *pathAgent) Start(ctx context.Context, _ Instance) error {
	a.mu.Lock()
	a.starts++
	n, up, hang := a.starts, a.up, a.hang
	a.mu.Unlock()
	if hang && n == 1 {
		<-ctx.Done()
		return ctx.Err()
	}
	if time.Now().Before(up) {
		return fmt.Errorf("jump host refused: %w", ErrAgentPathDown)
	}
	return nil
}
func (a *pathAgent) Check(context.Context, Instance) error { return nil }

// A VM (no prepaid minimum) whose jump host is down for 40 minutes from
// its creation: agent starts failing with ErrAgentPathDown do not count
// against it (AgentTimeout is 15 min), so it is not released and comes
// up once the way is back.
func TestAgentStartPathDownDoesNotCountAgainstInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		agent := &pathAgent{up: time.Now().Add(40 * time.Minute)}
		m, log := newTestManager(t, Config{Providers: []Provider{p}, Agent: agent})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, time.Hour)
		insts := m.Instances("f")
		require.Len(t, insts, 1, "not released and replaced")
		assert.Equal(t, StatusIdle, insts[0].Status)
		assert.Zero(t, log.count(EventDeadlineMissed))
		e, ok := log.first(EventAgentFailed)
		require.True(t, ok)
		assert.True(t, strings.Contains(e.Message, "not counted against the instance"), e.Message)
	})
}

// A Start call that hangs (a dead jump connection dialled again and
// again) is cut at a third of AgentTimeout and retried, well inside the
// agent deadline, instead of using it all up.
func TestAgentStartAttemptIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newFakeProvider("vultr", vmOffer("vultr", 1, 0))
		agent := &pathAgent{hang: true}
		m, log := newTestManager(t, Config{Providers: []Provider{p}, Agent: agent})
		require.NoError(t, m.Apply(t.Context(), Spec{Name: "f", Nodes: 1}))
		passes(t, m, time.Hour)
		insts := m.Instances("f")
		require.Len(t, insts, 1)
		assert.Equal(t, StatusIdle, insts[0].Status)
		assert.Zero(t, log.count(EventDeadlineMissed))
		agent.mu.Lock()
		defer agent.mu.Unlock()
		assert.Equal(t, 2, agent.starts)
	})
}
