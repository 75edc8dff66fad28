package storetest

import (
	"crypto/ed25519"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// LeaseHarness describes a LeaseStore under test.
type LeaseHarness struct {
	// New returns an empty store for one subtest (it registers its own
	// cleanup). It is called inside Isolate.
	New func(t *testing.T) fleet.LeaseStore
	// Short is a TTL that a Wait of twice its length outlives on the
	// store's clock.
	Short time.Duration
	// Wait lets at least d pass on the store's clock.
	Wait func(d time.Duration)
	// Isolate runs one subtest's body; nil runs it directly. A store timed
	// by a fake clock passes synctest.Test.
	Isolate func(t *testing.T, f func(t *testing.T))
}

// long is a TTL no subtest outlives.
const long = time.Hour

// RunLeases runs the LeaseStore contract: the Store contract, then leases,
// fencing and intents. Subtests run in parallel.
func RunLeases(t *testing.T, h LeaseHarness) {
	Run(t, func(t *testing.T) fleet.Store { return h.New(t) })
	cases := []struct {
		name string
		f    func(t *testing.T, h LeaseHarness, s fleet.LeaseStore)
	}{
		{"Acquire", testAcquire},
		{"Expiry", testExpiry},
		{"Release", testRelease},
		{"TokensIncrease", testTokensIncrease},
		{"FencedWrites", testFencedWrites},
		{"ExpiredLeaseNobodyTookStillWrites", testExpiredNotTaken},
		{"Intents", testIntents},
		{"AcquireRace", testAcquireRace},
		{"FenceRace", testFenceRace},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			isolate := h.Isolate
			if isolate == nil {
				isolate = func(t *testing.T, f func(t *testing.T)) { f(t) }
			}
			isolate(t, func(t *testing.T) { c.f(t, h, h.New(t)) })
		})
	}
}

func acquire(t *testing.T, s fleet.LeaseStore, name, holder string, ttl time.Duration) fleet.Lease {
	t.Helper()
	l, err := s.AcquireLease(t.Context(), name, holder, ttl)
	require.NoError(t, err)
	return l
}

func leaseNames(t *testing.T, s fleet.LeaseStore) []string {
	t.Helper()
	ls, err := s.Leases(t.Context())
	require.NoError(t, err)
	var out []string
	for _, l := range ls {
		out = append(out, l.Name+"@"+l.Holder)
	}
	return out
}

func testAcquire(t *testing.T, _ LeaseHarness, s fleet.LeaseStore) {
	ctx := t.Context()
	l := acquire(t, s, "fleet/a", "r1", long)
	assert.Equal(t, fleet.Lease{Name: "fleet/a", Holder: "r1", Token: 1, Expires: l.Expires, TTL: long}, l)
	assert.False(t, l.Expires.IsZero())
	acquire(t, s, "replica/r1", "r1", long)
	assert.Equal(t, []string{"fleet/a@r1", "replica/r1@r1"}, leaseNames(t, s))

	_, err := s.AcquireLease(ctx, "fleet/a", "r2", long)
	require.ErrorIs(t, err, fleet.ErrLeaseHeld)
	var held *fleet.LeaseHeldError
	require.ErrorAs(t, err, &held)
	assert.Equal(t, "r1", held.Holder)

	again := acquire(t, s, "fleet/a", "r1", long)
	assert.Equal(t, int64(1), again.Token, "its own unexpired lease: renewed, same token")
	assert.False(t, again.Expires.Before(l.Expires))
	renewed, err := s.RenewLease(ctx, again)
	require.NoError(t, err)
	assert.Equal(t, int64(1), renewed.Token)

	_, err = s.AcquireLease(ctx, "", "r1", long)
	require.Error(t, err)
	_, err = s.AcquireLease(ctx, "x", "r1", 0)
	require.Error(t, err)
}

func testExpiry(t *testing.T, h LeaseHarness, s fleet.LeaseStore) {
	ctx := t.Context()
	a := acquire(t, s, "fleet/a", "r1", h.Short)
	h.Wait(2 * h.Short)
	assert.Empty(t, leaseNames(t, s), "expired leases are not listed")
	_, err := s.RenewLease(ctx, a)
	require.ErrorIs(t, err, fleet.ErrLeaseLost, "no renewal after expiry")

	b := acquire(t, s, "fleet/a", "r2", long)
	assert.Equal(t, int64(2), b.Token)
	_, err = s.RenewLease(ctx, a)
	require.ErrorIs(t, err, fleet.ErrLeaseLost)
	_, err = s.AcquireLease(ctx, "fleet/a", "r1", long)
	require.ErrorIs(t, err, fleet.ErrLeaseHeld)

	// The same holder acquiring after its own expiry starts a new term.
	c := acquire(t, s, "fleet/c", "r1", h.Short)
	h.Wait(2 * h.Short)
	c2 := acquire(t, s, "fleet/c", "r1", long)
	assert.Equal(t, c.Token+1, c2.Token)
	_, err = s.RenewLease(ctx, c)
	require.ErrorIs(t, err, fleet.ErrLeaseLost, "the old term cannot be renewed")
}

func testRelease(t *testing.T, _ LeaseHarness, s fleet.LeaseStore) {
	ctx := t.Context()
	a := acquire(t, s, "fleet/a", "r1", long)
	require.NoError(t, s.ReleaseLease(ctx, a))
	assert.Empty(t, leaseNames(t, s))
	_, err := s.RenewLease(ctx, a)
	require.ErrorIs(t, err, fleet.ErrLeaseLost)
	b := acquire(t, s, "fleet/a", "r2", long)
	assert.Equal(t, int64(2), b.Token, "the token is kept across a release")
	require.NoError(t, s.ReleaseLease(ctx, a), "releasing a lost lease is no error")
	assert.Equal(t, []string{"fleet/a@r2"}, leaseNames(t, s), "and does not end the new holder's")
}

func testTokensIncrease(t *testing.T, h LeaseHarness, s fleet.LeaseStore) {
	var last int64
	for i, holder := range []string{"r1", "r2", "r1", "r1", "r3"} {
		l := acquire(t, s, "fleet/a", holder, h.Short)
		assert.Greater(t, l.Token, last, "acquisition %d", i)
		last = l.Token
		h.Wait(2 * h.Short)
	}
}

// requireFenced checks a write refused by its lease.
func requireFenced(t *testing.T, err error, lease string, token int64) {
	t.Helper()
	require.ErrorIs(t, err, fleet.ErrFenced)
	var fe *fleet.FencedError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, lease, fe.Lease)
	assert.Equal(t, token, fe.Token)
}

func testFencedWrites(t *testing.T, _ LeaseHarness, s fleet.LeaseStore) {
	ctx := t.Context()
	a := acquire(t, s, fleet.FleetLease("alpha"), "r1", long)
	ctxA := fleet.WithLease(ctx, a)
	require.NoError(t, s.PutFleet(ctxA, Fleet("alpha")))
	require.NoError(t, s.PutInstance(ctxA, Instance("alpha", "r-1", at(1))))
	require.NoError(t, s.PutInstance(ctxA, Instance("alpha", "r-2", at(2))))
	requireFenced(t, s.PutFleet(ctxA, Fleet("beta")), fleet.FleetLease("beta"), 0)
	requireFenced(t, s.PutInstance(ctxA, Instance("beta", "r-b", at(1))), fleet.FleetLease("beta"), 0)
	require.NoError(t, s.PutFleet(ctx, Fleet("beta")), "a write without leases is not fenced")
	requireFenced(t, s.DeleteFleet(ctxA, "beta"), fleet.FleetLease("beta"), 0)

	require.NoError(t, s.ReleaseLease(ctx, a))
	b := acquire(t, s, fleet.FleetLease("alpha"), "r2", long)
	f := Fleet("alpha")
	f.Version = 1
	requireFenced(t, s.PutFleet(ctxA, f), fleet.FleetLease("alpha"), a.Token)
	r := Instance("alpha", "r-1", at(1))
	r.Version = 1
	requireFenced(t, s.PutInstance(ctxA, r), fleet.FleetLease("alpha"), a.Token)
	requireFenced(t, s.DeleteInstance(ctxA, "r-2"), fleet.FleetLease("alpha"), a.Token)
	requireFenced(t, s.DeleteFleet(ctxA, "alpha"), fleet.FleetLease("alpha"), a.Token)
	requireFenced(t, s.AckIntents(ctxA, "alpha", 1), fleet.FleetLease("alpha"), a.Token)
	fs, _ := s.Fleets(ctx)
	is, _ := s.Instances(ctx)
	require.Len(t, fs, 2)
	assert.Equal(t, int64(1), fs[0].Version, "nothing written by the old holder")
	assert.Len(t, is, 2)

	ctxB := fleet.WithLease(fleet.WithLease(ctx, b), acquire(t, s, fleet.FleetLease("beta"), "r2", long))
	require.NoError(t, s.PutFleet(ctxB, f))
	require.NoError(t, s.PutInstance(ctxB, r))
	require.NoError(t, s.DeleteInstance(ctxB, "r-2"))
	require.NoError(t, s.DeleteFleet(ctxB, "beta"), "one context, two leases")
	require.NoError(t, s.DeleteInstance(ctxB, "absent"))
	require.NoError(t, s.PutMeta(ctxA, "k", "v"), "metadata is never fenced")
	fs, _ = s.Fleets(ctx)
	require.Len(t, fs, 1)
	assert.Equal(t, int64(2), fs[0].Version)
}

func testExpiredNotTaken(t *testing.T, h LeaseHarness, s fleet.LeaseStore) {
	a := acquire(t, s, fleet.FleetLease("alpha"), "r1", h.Short)
	h.Wait(2 * h.Short)
	require.NoError(t, s.PutFleet(fleet.WithLease(t.Context(), a), Fleet("alpha")),
		"nobody holds a newer token: nobody else can have written")
}

func testIntents(t *testing.T, _ LeaseHarness, s fleet.LeaseStore) {
	ctx := t.Context()
	spec := Fleet("alpha").Spec
	spec.PrivateKey = testKey()
	puts := []fleet.Intent{
		{Fleet: "alpha", Kind: fleet.IntentApply, Spec: spec, KeyGiven: true, At: at(1)},
		{Fleet: "beta", Kind: fleet.IntentDelete, Policy: fleet.ReleaseNow, At: at(2)},
		{Fleet: "alpha", Kind: fleet.IntentRelease, InstanceID: "r-1", Policy: fleet.ReleaseNow, At: at(3)},
		{Fleet: "alpha", Kind: fleet.IntentBusy, InstanceID: "r-2", At: at(4)},
	}
	var last int64
	for i := range puts {
		seq, err := s.PutIntent(ctx, puts[i])
		require.NoError(t, err)
		assert.Greater(t, seq, last)
		puts[i].Seq, last = seq, seq
	}
	puts[0].Spec.PrivateKey = fleet.PrivateKey{}
	all, err := s.Intents(ctx, "")
	require.NoError(t, err)
	assert.Equal(t, puts, all, "every fleet's, by Seq; no private key stored")
	alpha, err := s.Intents(ctx, "alpha")
	require.NoError(t, err)
	assert.Equal(t, []fleet.Intent{puts[0], puts[2], puts[3]}, alpha)
	testIntentsAfter(t, s, puts)
	testReleaseIntents(t, s, puts)

	l := acquire(t, s, fleet.FleetLease("alpha"), "r1", long)
	require.NoError(t, s.AckIntents(fleet.WithLease(ctx, l), "alpha", puts[2].Seq))
	alpha, _ = s.Intents(ctx, "alpha")
	assert.Equal(t, []fleet.Intent{puts[3]}, alpha, "acknowledged through Seq")
	require.NoError(t, s.AckIntents(ctx, "beta", puts[1].Seq), "unfenced")
	all, _ = s.Intents(ctx, "")
	assert.Equal(t, []fleet.Intent{puts[3]}, all)
	_, err = s.PutIntent(ctx, fleet.Intent{Kind: fleet.IntentDelete})
	require.Error(t, err, "an intent needs a fleet")
}

// testIntentsAfter checks fleet.IntentTailReader, when s has it, on the
// intents puts that testIntents recorded.
func testIntentsAfter(t *testing.T, s fleet.LeaseStore, puts []fleet.Intent) {
	tail, ok := s.(fleet.IntentTailReader)
	if !ok {
		return
	}
	ctx := t.Context()
	for _, c := range []struct {
		fleet string
		after int64
		want  []fleet.Intent
	}{
		{"alpha", 0, []fleet.Intent{puts[0], puts[2], puts[3]}},
		{"alpha", puts[0].Seq, []fleet.Intent{puts[2], puts[3]}},
		{"alpha", puts[1].Seq, []fleet.Intent{puts[2], puts[3]}},
		{"alpha", puts[2].Seq, []fleet.Intent{puts[3]}},
		{"alpha", puts[3].Seq, nil},
		{"beta", puts[0].Seq, []fleet.Intent{puts[1]}},
		{"beta", puts[1].Seq, nil},
		{"", puts[1].Seq, []fleet.Intent{puts[2], puts[3]}},
	} {
		got, err := tail.IntentsAfter(ctx, c.fleet, c.after)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "IntentsAfter(%q, %d)", c.fleet, c.after)
	}
}

// testReleaseIntents checks fleet.ReleaseIntentReader, when s has it, on
// the intents puts that testIntents recorded (alpha: apply, release r-1,
// busy r-2; beta: delete).
func testReleaseIntents(t *testing.T, s fleet.LeaseStore, puts []fleet.Intent) {
	rr, ok := s.(fleet.ReleaseIntentReader)
	if !ok {
		return
	}
	ctx := t.Context()
	for _, c := range []struct {
		fleet, id string
		after     int64
		want      []fleet.Intent
	}{
		{"alpha", "r-1", 0, []fleet.Intent{puts[2]}},
		{"alpha", "r-1", puts[2].Seq, nil},
		{"alpha", "r-2", 0, nil},
		{"beta", "r-9", 0, []fleet.Intent{puts[1]}},
		{"beta", "r-9", puts[1].Seq, nil},
	} {
		got, err := rr.ReleaseIntents(ctx, c.fleet, c.id, c.after)
		require.NoError(t, err)
		assert.Equal(t, c.want, got, "ReleaseIntents(%q, %q, %d)", c.fleet, c.id, c.after)
	}
}

// Of holders racing for a free lease, exactly one wins.
func testAcquireRace(t *testing.T, _ LeaseHarness, s fleet.LeaseStore) {
	const n = 8
	results := make(chan error, n)
	for i := range n {
		go func() {
			_, err := s.AcquireLease(t.Context(), "fleet/a", string(rune('a'+i)), long)
			results <- err
		}()
	}
	won := 0
	for range n {
		if err := <-results; err == nil {
			won++
		} else {
			require.ErrorIs(t, err, fleet.ErrLeaseHeld)
		}
	}
	assert.Equal(t, 1, won)
}

// No write under the old lease lands once a newer acquisition returned,
// while writers keep writing through the takeover.
func testFenceRace(t *testing.T, _ LeaseHarness, s fleet.LeaseStore) {
	ctx := t.Context()
	a := acquire(t, s, fleet.FleetLease("alpha"), "r1", long)
	ctxA := fleet.WithLease(ctx, a)
	const writers, each = 4, 15
	taken := make(chan struct{})
	type result struct {
		after bool // started after the takeover returned
		err   error
	}
	results := make(chan result, writers*each)
	start := make(chan struct{})
	for w := range writers {
		go func() {
			<-start
			for i := range each {
				after := isClosed(taken)
				err := s.PutInstance(ctxA, Instance("alpha", "r-"+string(rune('a'+w))+string(rune('a'+i)), at(i)))
				results <- result{after, err}
			}
		}()
	}
	close(start)
	require.NoError(t, s.ReleaseLease(ctx, a))
	acquire(t, s, fleet.FleetLease("alpha"), "r2", long)
	close(taken)
	for range writers * each {
		r := <-results
		if r.err != nil {
			require.ErrorIs(t, r.err, fleet.ErrFenced)
		}
		if r.after {
			require.ErrorIs(t, r.err, fleet.ErrFenced, "a write after the takeover landed")
		}
	}
}

func isClosed(c chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// testKey is a fixed private key (never stored by a LeaseStore).
func testKey() fleet.PrivateKey {
	seed := sha256.Sum256([]byte("storetest"))
	return fleet.NewPrivateKey(ed25519.NewKeyFromSeed(seed[:]))
}
