package shim

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"testing"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
)

const shimVersion = "0.19.41"

// clientKey is the key the tests authenticate with.
func clientKey(t *testing.T) ssh.Signer { return testSigner(t, "fleet key") }

// addSimHost adds a host at addr for user that authorises the test key.
func addSimHost(t *testing.T, n *sim.Network, cfg sim.HostConfig) *sim.Host {
	t.Helper()
	key := clientKey(t).PublicKey()
	if cfg.AuthorizedKeys == nil {
		cfg.AuthorizedKeys = func() []ssh.PublicKey { return []ssh.PublicKey{key} }
	}
	if cfg.User == "" {
		cfg.User = "root"
	}
	return n.AddHost(cfg)
}

// instOf is the fleet instance of a sim host.
func instOf(t *testing.T, h *sim.Host) fleet.Instance {
	t.Helper()
	host, port, err := net.SplitHostPort(h.Addr())
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	return fleet.Instance{ID: h.InstanceID(), SSH: fleet.SSHEndpoint{User: h.User(), Host: host, Port: p}}
}

// simStarter is a dstack-shim Starter dialling through n.
func simStarter(t *testing.T, n *sim.Network, p HostKeyPolicy, opts ...Option) *Starter {
	t.Helper()
	all := append([]Option{WithDial(n.Dial), WithLogger(testLogger(t))}, opts...)
	s, err := New(DstackShim(shimVersion), []ssh.Signer{clientKey(t)}, p, all...)
	require.NoError(t, err)
	return s
}

// commandsOf returns the command lines a host ran.
func commandsOf(h *sim.Host) []string {
	var out []string
	for _, r := range h.Commands() {
		out = append(out, r.Command)
	}
	return out
}

// stageLog records the stages of the connect retries a Starter logs.
type stageLog struct {
	mu     sync.Mutex
	stages []string
}

func (l *stageLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *stageLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *stageLog) WithGroup(string) slog.Handler            { return l }

func (l *stageLog) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "stage" {
			l.mu.Lock()
			l.stages = append(l.stages, a.Value.String())
			l.mu.Unlock()
		}
		return true
	})
	return nil
}

// distinct returns the stages in first-seen order without repeats.
func (l *stageLog) distinct() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	seen := map[string]bool{}
	for _, s := range l.stages {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
