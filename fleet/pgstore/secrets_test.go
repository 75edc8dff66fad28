package pgstore_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/crypto/ssh"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/internal/pgtest"
	"github.com/gpufleet/gpufleet/sim"
	"github.com/gpufleet/gpufleet/vultr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// passwordTap records the default_password of every Vultr create answer.
type passwordTap struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen []string
}

func (p *passwordTap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	body, rerr := io.ReadAll(resp.Body)
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if rerr != nil {
		return resp, nil
	}
	var ans map[string]map[string]any
	if json.Unmarshal(body, &ans) == nil {
		for _, v := range ans {
			if pw, ok := v["default_password"].(string); ok && pw != "" {
				p.mu.Lock()
				p.seen = append(p.seen, pw)
				p.mu.Unlock()
			}
		}
	}
	return resp, nil
}

// dump returns every row of the Store's tables as text.
func dump(t *testing.T, dsn, schema string) string {
	t.Helper()
	conn := connect(t, dsn)
	var b strings.Builder
	for _, table := range []string{"fleets", "instances", "intents", "meta", "leases"} {
		rows, err := conn.Query(t.Context(), "SELECT t::text FROM "+pgx.Identifier{schema, table}.Sanitize()+" t")
		require.NoError(t, err)
		for rows.Next() {
			var s string
			require.NoError(t, rows.Scan(&s))
			b.WriteString(s + "\n")
		}
		require.NoError(t, rows.Err())
	}
	return b.String()
}

// Secrets never reach the database in clear: the fleet's SSH private key
// (given to Apply on two replicas, recorded as an intent, then as the
// fleet's record) and the root password Vultr returns in each create
// answer. Checked in every table, after the Apply and after convergence.
func TestNoSecretInTheDatabase(t *testing.T) {
	dsn := pgtest.DSN(t)
	schema := pgtest.Schema(t, dsn)
	w := newWorld(t, 4)
	tap := &passwordTap{next: w.v.Client().Transport}
	if tap.next == nil {
		tap.next = http.DefaultTransport
	}
	w.providers[0] = vultr.NewProvider(vultr.New(sim.DefaultAPIKey, vultr.WithHTTPClient(&http.Client{Transport: tap}),
		vultr.WithRateLimit(1e9, 1<<30)))
	seed := sha256.Sum256([]byte("tester D secret"))
	priv := ed25519.NewKeyFromSeed(seed[:])
	key := fleet.NewPrivateKey(priv)
	secrets := map[string]string{
		"seed hex": hex.EncodeToString(seed[:]), "seed base64": base64.StdEncoding.EncodeToString(seed[:]),
		"key base64": base64.StdEncoding.EncodeToString(priv), "seed base64 raw": base64.RawStdEncoding.EncodeToString(seed[:]),
		"PEM": "PRIVATE KEY",
	}
	pub, err := ssh.NewPublicKey(priv.Public())
	require.NoError(t, err)
	line := strings.TrimSpace(string(ssh.MarshalAuthorizedKey(pub)))
	var ms []*fleet.Manager
	for i := range 2 {
		s, err := pgstore.Open(t.Context(), dsn, pgstore.WithSchema(schema))
		require.NoError(t, err)
		t.Cleanup(s.Close)
		m, err := fleet.NewManager(fleet.Config{Providers: w.providers, Clock: w.clock, Store: s, Owner: "sec",
			ReplicaID: fmt.Sprintf("s%d", i), Policy: fleet.Policy{Release: fleet.ReleaseNow, LeaseTTL: time.Second}})
		require.NoError(t, err)
		t.Cleanup(m.Close)
		ms = append(ms, m)
	}
	for i, m := range ms {
		require.NoError(t, m.Apply(t.Context(), fleet.Spec{Name: fmt.Sprintf("sec%d", i), Nodes: 1, Requirements: vultrVMs(),
			PrivateKey: key, SSHKeys: []string{line}}))
	}
	check := func(when string) {
		t.Helper()
		d := dump(t, dsn, schema)
		require.Contains(t, d, strings.Fields(line)[1], "%s: the dump holds the fleets' specs (their public keys)", when)
		for what, s := range secrets {
			assert.NotContains(t, d, s, "%s: the private key (%s) is in the database", when, what)
		}
		tap.mu.Lock()
		for _, pw := range tap.seen {
			assert.NotContains(t, d, pw, "%s: a root password is in the database", when)
		}
		tap.mu.Unlock()
	}
	check("after Apply")
	settled := until(t, w, 15*time.Second, func() bool {
		return all(ms[0], "sec0", 1, fleet.StatusIdle) || all(ms[1], "sec0", 1, fleet.StatusIdle)
	}, ms...)
	require.True(t, settled)
	until(t, w, 2*time.Second, func() bool { return false }, ms...)
	tap.mu.Lock()
	require.NotEmpty(t, tap.seen, "the tap saw the create answers")
	tap.mu.Unlock()
	check("after convergence")
	for i := range ms {
		require.NoError(t, ms[0].Delete(context.Background(), fmt.Sprintf("sec%d", i)))
	}
	until(t, w, 15*time.Second, func() bool { return w.servers(true) == 0 && len(ms[0].Fleets()) == 0 }, ms...)
	assert.Zero(t, w.servers(true), "nothing left")
}
