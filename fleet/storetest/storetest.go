// Package storetest is the contract that every fleet.Store must pass:
// round trips, copies, ordering, metadata, conditional writes, deletes and
// concurrent use, and the optional capabilities fleet.MetaCreator and
// fleet.RecordFinder when the store has them (Run), and for a
// fleet.LeaseStore leases, fencing and intents (RunLeases). A Store
// implementation calls them from its tests.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gpufleet/gpufleet/fleet"
)

// Run runs the Store contract, and the contracts of the optional
// capabilities the store has (fleet.MetaCreator, fleet.RecordFinder: told
// by one store made first); newStore returns an empty store for one
// subtest (it registers its own cleanup). Subtests run in parallel.
func Run(t *testing.T, newStore func(t *testing.T) fleet.Store) {
	cases := []storeCase{
		{"FleetRoundTrip", testFleetRoundTrip},
		{"InstanceRoundTrip", testInstanceRoundTrip},
		{"Copies", testCopies},
		{"Ordering", testOrdering},
		{"Meta", testMeta},
		{"ConditionalWrites", testConditionalWrites},
		{"Deletes", testDeletes},
		{"ConcurrentReadModifyWrite", testConcurrentRMW},
		{"ConcurrentCreate", testConcurrentCreate},
	}
	cases = append(cases, optionalCases(newStore(t))...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.f(t, newStore(t))
		})
	}
}

// at is a fixed time in UTC (stores may drop the monotonic reading and
// the location).
func at(minutes int) time.Time {
	return time.Date(2026, 3, 1, 12, 0, 0, 123456000, time.UTC).Add(time.Duration(minutes) * time.Minute)
}

// Fleet returns a fleet record with every kind of field set.
func Fleet(name string) fleet.FleetRecord {
	return fleet.FleetRecord{
		Spec: fleet.Spec{Name: name, Nodes: 3, MinNodes: 1, Placement: fleet.PlacementCluster,
			Requirements: fleet.Requirements{Providers: []string{"vultr"}, Regions: []string{"ord", "ewr"},
				InstanceTypes: []string{"vcg-a100-1c-6g-4vram"}, GPUCount: 1, MaxPricePerHour: 2.5},
			IdleTimeout: 90 * time.Second, ReleasePolicy: fleet.ReleaseNow, SSHKeys: []string{"ssh-ed25519 AAAA k"}},
		KeyRequired: true, Created: at(0),
		VPC: &fleet.VPCRecord{VPC: fleet.VPC{ID: "vpc-1", Provider: "vultr", Region: "ord", Fleet: name,
			Owner: "ab12", RequestID: "r-vpc", Subnet: "10.6.96.0/20", Created: at(1), Attachment: []string{"i-1"}},
			Since: at(1), Attempts: 2, NextAttempt: at(3), LastError: "boom"},
		Jobs:       []fleet.BusyPeriod{{Start: at(2), Used: 90 * time.Second, Minimum: 30 * time.Minute}, {Start: at(4), Used: time.Hour, Minimum: 8 * time.Hour}},
		RebuyKinds: []fleet.RebuyKind{{Minimum: 30 * time.Minute, FirstJob: at(2), IdledPastMinimum: true}, {Minimum: 8 * time.Hour, FirstJob: at(4)}},
	}
}

// Instance returns an instance record of fleet with every kind of field set.
func Instance(fleetName, requestID string, created time.Time) fleet.InstanceRecord {
	return fleet.InstanceRecord{
		Instance: fleet.Instance{ID: "id-" + requestID, Provider: "hotaisle", Fleet: fleetName, Owner: "ab12",
			RequestID: requestID, Status: fleet.StatusTerminating, ProviderStatus: "running",
			Offer: fleet.Offer{Provider: "hotaisle", Region: "us-michigan-1", InstanceType: "vm-mi300x-1", VCPUs: 13,
				MemoryGiB: 224, GPU: fleet.GPU{Vendor: "AMD", Model: "MI300X", Count: 1, MemoryGiB: 192},
				LocalDisks:   []fleet.LocalDisk{{Type: "NVMe", SizeBytes: 1 << 40, MountPath: "/mnt"}},
				PricePerHour: 2.99, MinimumReservation: time.Hour, BillingGranularity: time.Minute, Quantity: -1},
			PublicIP: "192.0.2.1", SSH: fleet.SSHEndpoint{User: "root", Host: "192.0.2.1", Port: 22,
				Jump: &fleet.SSHEndpoint{User: "jump", Host: "198.51.100.7", Port: 2222}},
			Created: created, Ready: created.Add(time.Minute), ReservedUntil: created.Add(time.Hour),
			History: []fleet.StatusChange{{Time: created, Status: fleet.StatusProvisioning, Reason: "created"}}},
		Termination: &fleet.Termination{Requested: created.Add(2 * time.Minute), Reason: "idle", Force: true,
			Attempts: 1, LastError: "refused"},
		Busy: true, RunningSince: created.Add(30 * time.Second), IdleSince: created.Add(time.Minute), BusySince: created.Add(40 * time.Second), AgentTries: 2,
	}
}

func testFleetRoundTrip(t *testing.T, s fleet.Store) {
	ctx := t.Context()
	f := Fleet("alpha")
	require.NoError(t, s.PutFleet(ctx, f))
	got, err := s.Fleets(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	want := f
	want.Version = 1
	assert.Equal(t, want, got[0])
}

func testInstanceRoundTrip(t *testing.T, s fleet.Store) {
	ctx := t.Context()
	r := Instance("alpha", "r-1", at(5))
	require.NoError(t, s.PutInstance(ctx, r))
	got, err := s.Instances(ctx)
	require.NoError(t, err)
	require.Len(t, got, 1)
	want := r
	want.Version = 1
	assert.Equal(t, want, got[0])
}

// Neither what was put nor what was returned shares memory with the store.
func testCopies(t *testing.T, s fleet.Store) {
	ctx := t.Context()
	f, r := Fleet("alpha"), Instance("alpha", "r-1", at(5))
	require.NoError(t, s.PutFleet(ctx, f))
	require.NoError(t, s.PutInstance(ctx, r))
	f.Spec.SSHKeys[0], f.Spec.Requirements.Regions[0], f.VPC.LastError = "x", "x", "x"
	f.Jobs[0].Used, f.RebuyKinds[0].IdledPastMinimum = 0, false
	r.Instance.History[0].Reason, r.Instance.SSH.Jump.Host, r.Termination.Reason = "x", "x", "x"
	r.Instance.Offer.LocalDisks[0].Type = "x"
	for range 2 {
		fs, err := s.Fleets(ctx)
		require.NoError(t, err)
		is, err := s.Instances(ctx)
		require.NoError(t, err)
		assert.Equal(t, Fleet("alpha").Spec, fs[0].Spec)
		assert.Equal(t, "boom", fs[0].VPC.LastError)
		assert.Equal(t, Fleet("alpha").Jobs, fs[0].Jobs)
		assert.Equal(t, Fleet("alpha").RebuyKinds, fs[0].RebuyKinds)
		want := Instance("alpha", "r-1", at(5))
		assert.Equal(t, want.Instance, is[0].Instance)
		assert.Equal(t, want.Termination, is[0].Termination)
		fs[0].Spec.SSHKeys[0], fs[0].VPC.LastError = "y", "y"
		fs[0].Jobs[1].Used, fs[0].RebuyKinds[1].FirstJob = 0, time.Time{}
		is[0].Instance.History[0].Reason, is[0].Instance.SSH.Jump.Host, is[0].Termination.Reason = "y", "y", "y"
	}
}

func testOrdering(t *testing.T, s fleet.Store) {
	ctx := t.Context()
	for _, name := range []string{"c9", "B", "a", "c10", "a-b", "ab"} {
		require.NoError(t, s.PutFleet(ctx, Fleet(name)))
	}
	fs, err := s.Fleets(ctx)
	require.NoError(t, err)
	var names []string
	for _, f := range fs {
		names = append(names, f.Spec.Name)
	}
	assert.Equal(t, []string{"B", "a", "a-b", "ab", "c10", "c9"}, names, "by name, byte order")

	puts := []struct {
		id      string
		created time.Time
	}{{"r-b", at(2)}, {"r-z", at(1)}, {"r-a", at(2)}, {"r-0", at(3)}, {"r-y", time.Time{}}}
	for _, p := range puts {
		require.NoError(t, s.PutInstance(ctx, Instance("alpha", p.id, p.created)))
	}
	is, err := s.Instances(ctx)
	require.NoError(t, err)
	var ids []string
	for _, r := range is {
		ids = append(ids, r.Instance.RequestID)
	}
	assert.Equal(t, []string{"r-y", "r-z", "r-a", "r-b", "r-0"}, ids, "oldest first, then by request id")
}

func testMeta(t *testing.T, s fleet.Store) {
	ctx := t.Context()
	_, ok, err := s.Meta(ctx, fleet.MetaOwner)
	require.NoError(t, err)
	assert.False(t, ok)
	require.NoError(t, s.PutMeta(ctx, fleet.MetaOwner, "ab12"))
	require.NoError(t, s.PutMeta(ctx, "other", ""))
	v, ok, err := s.Meta(ctx, fleet.MetaOwner)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "ab12", v)
	require.NoError(t, s.PutMeta(ctx, fleet.MetaOwner, "cd34"))
	v, _, _ = s.Meta(ctx, fleet.MetaOwner)
	assert.Equal(t, "cd34", v, "replaced")
	v, ok, _ = s.Meta(ctx, "other")
	assert.True(t, ok, "an empty value is present")
	assert.Empty(t, v)
}

// requireStale checks a refused write's error.
func requireStale(t *testing.T, err error, have, stored int64) {
	t.Helper()
	require.ErrorIs(t, err, fleet.ErrStaleWrite)
	var se *fleet.StaleWriteError
	require.ErrorAs(t, err, &se)
	assert.Equal(t, have, se.Have)
	assert.Equal(t, stored, se.Stored)
}

func testConditionalWrites(t *testing.T, s fleet.Store) {
	ctx := t.Context()
	f := Fleet("alpha")
	require.NoError(t, s.PutFleet(ctx, f))
	requireStale(t, s.PutFleet(ctx, f), 0, 1) // a second create
	f.Version, f.Spec.Nodes = 1, 7
	require.NoError(t, s.PutFleet(ctx, f))
	f.Spec.Nodes = 9
	requireStale(t, s.PutFleet(ctx, f), 1, 2) // written against what it read before
	fs, _ := s.Fleets(ctx)
	assert.Equal(t, 7, fs[0].Spec.Nodes, "a stale write changes nothing")
	assert.Equal(t, int64(2), fs[0].Version)
	f.Version = 5
	requireStale(t, s.PutFleet(ctx, f), 5, 2) // from the future
	ghost := Fleet("ghost")
	ghost.Version = 3
	requireStale(t, s.PutFleet(ctx, ghost), 3, 0) // no such record

	r := Instance("alpha", "r-1", at(1))
	require.NoError(t, s.PutInstance(ctx, r))
	requireStale(t, s.PutInstance(ctx, r), 0, 1)
	is, _ := s.Instances(ctx)
	r = is[0]
	r.AgentTries = 5
	require.NoError(t, s.PutInstance(ctx, r))
	requireStale(t, s.PutInstance(ctx, r), 1, 2)
	is, _ = s.Instances(ctx)
	assert.Equal(t, 5, is[0].AgentTries)
	assert.Equal(t, int64(2), is[0].Version)
}

func testDeletes(t *testing.T, s fleet.Store) {
	ctx := t.Context()
	require.NoError(t, s.PutFleet(ctx, Fleet("alpha")))
	require.NoError(t, s.PutFleet(ctx, Fleet("beta")))
	require.NoError(t, s.PutInstance(ctx, Instance("alpha", "r-1", at(1))))
	require.NoError(t, s.PutInstance(ctx, Instance("alpha", "r-2", at(2))))
	require.NoError(t, s.DeleteFleet(ctx, "alpha"))
	require.NoError(t, s.DeleteInstance(ctx, "r-1"))
	require.NoError(t, s.DeleteFleet(ctx, "alpha"), "deleting an absent fleet is no error")
	require.NoError(t, s.DeleteInstance(ctx, "nope"), "deleting an absent instance is no error")
	fs, _ := s.Fleets(ctx)
	require.Len(t, fs, 1)
	assert.Equal(t, "beta", fs[0].Spec.Name)
	is, _ := s.Instances(ctx)
	require.Len(t, is, 1)
	assert.Equal(t, "r-2", is[0].Instance.RequestID, "a fleet's delete leaves its instances")

	old := Fleet("alpha")
	old.Version = 1
	requireStale(t, s.PutFleet(ctx, old), 1, 0) // written against the deleted record
	require.NoError(t, s.PutFleet(ctx, Fleet("alpha")), "created again from version 0")
	fs, _ = s.Fleets(ctx)
	assert.Equal(t, int64(1), fs[0].Version)
}

// Writers that read, change and write back with retries on stale writes
// lose no update.
func testConcurrentRMW(t *testing.T, s fleet.Store) {
	ctx := t.Context()
	require.NoError(t, s.PutFleet(ctx, fleet.FleetRecord{Spec: fleet.Spec{Name: "counter"}}))
	const writers, each = 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for range each {
				if err := increment(ctx, s, "counter"); err != nil {
					errs <- fmt.Errorf("writer %d: %w", w, err)
					return
				}
			}
			// Unrelated records, written concurrently.
			errs <- s.PutInstance(ctx, Instance("counter", fmt.Sprintf("r-%d", w), at(w)))
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	fs, err := s.Fleets(ctx)
	require.NoError(t, err)
	assert.Equal(t, writers*each, fs[0].Spec.Nodes, "every increment counted once")
	assert.Equal(t, int64(writers*each+1), fs[0].Version)
	is, _ := s.Instances(ctx)
	assert.Len(t, is, writers)
}

func increment(ctx context.Context, s fleet.Store, name string) error {
	for {
		fs, err := s.Fleets(ctx)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(fs, func(f fleet.FleetRecord) bool { return f.Spec.Name == name })
		if i < 0 {
			return fmt.Errorf("fleet %s is gone", name)
		}
		f := fs[i]
		f.Spec.Nodes++
		if err := s.PutFleet(ctx, f); !errors.Is(err, fleet.ErrStaleWrite) {
			return err
		}
	}
}

// Of writers creating the same record at once, exactly one succeeds.
func testConcurrentCreate(t *testing.T, s fleet.Store) {
	ctx := t.Context()
	const writers = 8
	var wg sync.WaitGroup
	results := make(chan error, 2*writers)
	for w := range writers {
		wg.Go(func() {
			f := Fleet("same")
			f.Spec.Nodes = w
			results <- s.PutFleet(ctx, f)
			results <- s.PutInstance(ctx, Instance("same", "r-same", at(w)))
		})
	}
	wg.Wait()
	close(results)
	won := 0
	for err := range results {
		if err == nil {
			won++
			continue
		}
		require.ErrorIs(t, err, fleet.ErrStaleWrite)
	}
	assert.Equal(t, 2, won, "one fleet create and one instance create won")
	fs, _ := s.Fleets(ctx)
	assert.Equal(t, int64(1), fs[0].Version)
}
