package pgstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/pgstore"
	"github.com/gpufleet/gpufleet/fleet/storetest"
	"github.com/gpufleet/gpufleet/internal/pgtest"
)

// benchStores are the stores compared: memory, PostgreSQL, and
// PostgreSQL with every write fenced by the fleet's lease.
var benchStores = []string{"memory", "postgres", "postgres-fenced"}

// benchStore returns the store named kind and the context its writes use.
func benchStore(b *testing.B, kind string) (fleet.LeaseStore, context.Context) {
	ctx := context.Background()
	if kind == "memory" {
		return fleet.NewMemoryLeaseStore(nil), ctx
	}
	dsn := pgtest.DSN(b)
	s, err := pgstore.Open(ctx, dsn, pgstore.WithSchema(pgtest.Schema(b, dsn)))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	if kind == "postgres-fenced" {
		l, err := s.AcquireLease(ctx, fleet.FleetLease("bench"), "r1", time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		ctx = fleet.WithLease(ctx, l)
	}
	return s, ctx
}

// records puts n instance records of fleet "bench" and returns them with
// their stored versions.
func records(b *testing.B, s fleet.Store, ctx context.Context, n int) []fleet.InstanceRecord {
	recs := make([]fleet.InstanceRecord, n)
	for i := range recs {
		recs[i] = storetest.Instance("bench", fmt.Sprintf("r-%04d", i), time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC))
		if err := s.PutInstance(ctx, recs[i]); err != nil {
			b.Fatal(err)
		}
		recs[i].Version = 1
	}
	return recs
}

// BenchmarkPutInstance is one conditional write of a changed record.
func BenchmarkPutInstance(b *testing.B) {
	for _, kind := range benchStores {
		b.Run(kind, func(b *testing.B) {
			s, ctx := benchStore(b, kind)
			recs := records(b, s, ctx, 1000)
			i := 0
			for b.Loop() {
				r := &recs[i%len(recs)]
				r.AgentTries++
				if err := s.PutInstance(ctx, *r); err != nil {
					b.Fatal(err)
				}
				r.Version++
				i++
			}
		})
	}
}

// BenchmarkPass1000Changed is the store's part of a pass in which every
// one of 1,000 instance records changed: 1,000 conditional writes.
func BenchmarkPass1000Changed(b *testing.B) {
	for _, kind := range benchStores {
		b.Run(kind, func(b *testing.B) {
			s, ctx := benchStore(b, kind)
			recs := records(b, s, ctx, 1000)
			for b.Loop() {
				for i := range recs {
					recs[i].AgentTries++
					if err := s.PutInstance(ctx, recs[i]); err != nil {
						b.Fatal(err)
					}
					recs[i].Version++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/pass")
		})
	}
}

// BenchmarkInstances1000 reads 1,000 instance records (what a Manager
// reads at start).
func BenchmarkInstances1000(b *testing.B) {
	for _, kind := range benchStores[:2] {
		b.Run(kind, func(b *testing.B) {
			s, ctx := benchStore(b, kind)
			records(b, s, ctx, 1000)
			for b.Loop() {
				got, err := s.Instances(ctx)
				if err != nil || len(got) != 1000 {
					b.Fatal(len(got), err)
				}
			}
		})
	}
}

// BenchmarkRenewLease is one lease renewal (a replica renews each of its
// leases every TTL/3).
func BenchmarkRenewLease(b *testing.B) {
	for _, kind := range benchStores[:2] {
		b.Run(kind, func(b *testing.B) {
			s, ctx := benchStore(b, kind)
			l, err := s.AcquireLease(ctx, fleet.FleetLease("bench"), "r1", time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if l, err = s.RenewLease(ctx, l); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// countingStore counts the store operations a Manager makes.
type countingStore struct {
	fleet.Store
	writes, reads atomic.Int64
}

func (s *countingStore) PutFleet(ctx context.Context, f fleet.FleetRecord) error {
	s.writes.Add(1)
	return s.Store.PutFleet(ctx, f)
}

func (s *countingStore) PutInstance(ctx context.Context, r fleet.InstanceRecord) error {
	s.writes.Add(1)
	return s.Store.PutInstance(ctx, r)
}

func (s *countingStore) DeleteFleet(ctx context.Context, name string) error {
	s.writes.Add(1)
	return s.Store.DeleteFleet(ctx, name)
}

func (s *countingStore) DeleteInstance(ctx context.Context, id string) error {
	s.writes.Add(1)
	return s.Store.DeleteInstance(ctx, id)
}

func (s *countingStore) Instances(ctx context.Context) ([]fleet.InstanceRecord, error) {
	s.reads.Add(1)
	return s.Store.Instances(ctx)
}

// BenchmarkManagerLifecycle1000 runs 1,000 instances (500 Vultr, 500 Hot
// Aisle VMs) through one Manager on each store: provision until all are
// idle, 30 passes for the providers' statuses to settle, 10 quiet
// passes, delete until gone. Cloud time is stepped 10 s per
// pass. Reports store writes per instance, per busy pass (provision and
// delete) and per quiet pass, and wall time per pass.
func BenchmarkManagerLifecycle1000(b *testing.B) {
	for _, kind := range benchStores[:2] {
		b.Run(kind, func(b *testing.B) {
			var passes, quietWrites, writes, most int64
			var busy, quiet time.Duration
			for b.Loop() {
				s, _ := benchStore(b, kind)
				cs := &countingStore{Store: s}
				var last int64
				track := func(done func() bool) func() bool { // tracks the most writes of one pass
					return func() bool {
						now := cs.writes.Load()
						most, last = max(most, now-last), now
						return done()
					}
				}
				w := newWorld(b, 1000)
				m := w.manager(b, cs, nil)
				for name, r := range map[string]fleet.Requirements{"v": vultrVMs(), "h": hotVMs()} {
					if err := m.Apply(context.Background(), fleet.Spec{Name: name, Nodes: 500, Requirements: r}); err != nil {
						b.Fatal(err)
					}
				}
				start := time.Now()
				n := w.passes(b, m, track(func() bool { return all(m, "v", 500, fleet.StatusIdle) && all(m, "h", 500, fleet.StatusIdle) }))
				for range 30 { // the providers' own statuses settle ("installingbooting" to "ok")
					n += w.passes(b, m, func() bool { return true })
				}
				busy += time.Since(start)
				before, start := cs.writes.Load(), time.Now()
				for range 10 {
					w.passes(b, m, func() bool { return true })
				}
				quiet += time.Since(start)
				quietWrites += cs.writes.Load() - before
				for _, name := range []string{"v", "h"} {
					if err := m.Delete(context.Background(), name); err != nil {
						b.Fatal(err)
					}
				}
				start = time.Now()
				n += w.passes(b, m, track(func() bool { return len(m.Fleets()) == 0 }))
				busy += time.Since(start)
				m.Close()
				passes += int64(n)
				writes += cs.writes.Load()
			}
			b.ReportMetric(float64(writes)/float64(b.N)/1000, "writes/instance")
			b.ReportMetric(float64(writes-quietWrites)/float64(passes), "writes/busy-pass")
			b.ReportMetric(float64(quietWrites)/float64(10*b.N), "writes/quiet-pass")
			b.ReportMetric(float64(most), "max-writes/pass")
			b.ReportMetric(float64(busy.Milliseconds())/float64(passes), "ms/busy-pass")
			b.ReportMetric(float64(quiet.Microseconds())/1000/float64(10*b.N), "ms/quiet-pass")
		})
	}
}

// BenchmarkNonHolderCall2000 is one call about one instance on a replica
// that does not hold its fleet, with 2,000 instance records stored:
// MarkBusy (find the record, record an intent) and Release (find the
// record and its fleet's policy, record an intent). "read-all" hides the
// store's fleet.RecordFinder, so the Manager reads every record to find
// one (as every release before RecordFinder did); "by-id" reads the
// records the call names.
func BenchmarkNonHolderCall2000(b *testing.B) {
	for _, kind := range benchStores[:2] {
		for _, lookup := range []string{"read-all", "by-id"} {
			for _, call := range []string{"MarkBusy", "Release"} {
				b.Run(kind+"/"+lookup+"/"+call, func(b *testing.B) {
					s, ctx := benchStore(b, kind)
					ids := idleRecords(b, s, ctx, 2000)
					var store fleet.Store = s
					if lookup == "read-all" {
						store = struct{ fleet.LeaseStore }{s}
					}
					w := newWorld(b, 1)
					m, err := fleet.NewManager(fleet.Config{Providers: w.providers, Clock: w.clock, Store: store,
						Owner: "bench", ReplicaID: "nh"})
					if err != nil {
						b.Fatal(err)
					}
					defer m.Close()
					i := 0
					for b.Loop() {
						id := ids[i%len(ids)]
						i++
						if call == "MarkBusy" {
							err = m.MarkBusy(id)
						} else {
							_, err = m.Release(ctx, id)
						}
						if err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}

// idleRecords puts fleet "bench" and n idle instance records of it, and
// returns their provider ids.
func idleRecords(b *testing.B, s fleet.Store, ctx context.Context, n int) []string {
	f := storetest.Fleet("bench")
	f.VPC, f.Spec.Placement = nil, ""
	if err := s.PutFleet(ctx, f); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, n)
	for i := range ids {
		r := storetest.Instance("bench", fmt.Sprintf("r-%04d", i), time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC))
		r.Termination, r.Busy, r.Instance.Status = nil, false, fleet.StatusIdle
		if err := s.PutInstance(ctx, r); err != nil {
			b.Fatal(err)
		}
		ids[i] = r.Instance.ID
	}
	return ids
}
