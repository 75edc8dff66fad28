package fleet

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// MemoryLeaseStore is a LeaseStore in memory: a MemoryStore with leases,
// fenced writes and intents, timed by a Clock. It serves tests and
// replicas inside one process; everything is lost with the process.
type MemoryLeaseStore struct {
	*MemoryStore
	clock Clock

	mu      sync.Mutex // serialises lease changes with fenced writes; taken before MemoryStore's lock
	leases  map[string]Lease
	intents []Intent
	seq     int64
}

// NewMemoryLeaseStore returns an empty MemoryLeaseStore whose leases
// expire by clock (nil: the process clock).
func NewMemoryLeaseStore(clock Clock) *MemoryLeaseStore {
	if clock == nil {
		clock = realClock{}
	}
	return &MemoryLeaseStore{MemoryStore: NewMemoryStore(), clock: clock, leases: map[string]Lease{}}
}

// fence checks a write guarded by lease name under ctx. s.mu held.
func (s *MemoryLeaseStore) fence(ctx context.Context, name string) error {
	token, fenced := FenceToken(ctx, name)
	if !fenced {
		return nil
	}
	if newest := s.leases[name].Token; token == 0 || token != newest {
		return &FencedError{Lease: name, Token: token, Newer: newest}
	}
	return nil
}

// PutFleet stores f as MemoryStore does, fenced by FleetLease(f.Spec.Name).
func (s *MemoryLeaseStore) PutFleet(ctx context.Context, f FleetRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fence(ctx, FleetLease(f.Spec.Name)); err != nil {
		return err
	}
	return s.MemoryStore.PutFleet(ctx, f)
}

// DeleteFleet forgets a fleet, fenced by FleetLease(name).
func (s *MemoryLeaseStore) DeleteFleet(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fence(ctx, FleetLease(name)); err != nil {
		return err
	}
	return s.MemoryStore.DeleteFleet(ctx, name)
}

// PutInstance stores r as MemoryStore does, fenced by
// FleetLease(r.Instance.Fleet).
func (s *MemoryLeaseStore) PutInstance(ctx context.Context, r InstanceRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fence(ctx, FleetLease(r.Instance.Fleet)); err != nil {
		return err
	}
	return s.MemoryStore.PutInstance(ctx, r)
}

// DeleteInstance forgets an instance record, fenced by the lease of the
// stored record's fleet; an absent record is not an error.
func (s *MemoryLeaseStore) DeleteInstance(ctx context.Context, requestID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.MemoryStore.mu.Lock()
	r, ok := s.MemoryStore.instances[requestID]
	s.MemoryStore.mu.Unlock()
	if !ok {
		return nil
	}
	if err := s.fence(ctx, FleetLease(r.Instance.Fleet)); err != nil {
		return err
	}
	return s.MemoryStore.DeleteInstance(ctx, requestID)
}

// AcquireLease grants name to holder for ttl (see LeaseStore).
func (s *MemoryLeaseStore) AcquireLease(_ context.Context, name, holder string, ttl time.Duration) (Lease, error) {
	if name == "" || holder == "" || ttl <= 0 {
		return Lease{}, errors.New("gpufleet: a lease needs a name, a holder and a positive TTL")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	cur, ok := s.leases[name]
	live := ok && now.Before(cur.Expires)
	if live && cur.Holder != holder {
		return Lease{}, &LeaseHeldError{Name: name, Holder: cur.Holder, Expires: cur.Expires}
	}
	l := Lease{Name: name, Holder: holder, Token: cur.Token, Expires: now.Add(ttl), TTL: ttl}
	if !live {
		l.Token++
	}
	s.leases[name] = l
	return l, nil
}

// RenewLease extends l by l.TTL while it is the unexpired lease of its
// name; otherwise ErrLeaseLost.
func (s *MemoryLeaseStore) RenewLease(_ context.Context, l Lease) (Lease, error) {
	if l.TTL <= 0 {
		return Lease{}, errors.New("gpufleet: a lease needs a positive TTL")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	cur := s.leases[l.Name]
	if cur.Token != l.Token || cur.Holder != l.Holder || !now.Before(cur.Expires) {
		return Lease{}, fmt.Errorf("%w: %q token %d", ErrLeaseLost, l.Name, l.Token)
	}
	cur.Expires, cur.TTL = now.Add(l.TTL), l.TTL
	s.leases[l.Name] = cur
	return cur, nil
}

// ReleaseLease ends l at once when it is still current; the token is kept.
func (s *MemoryLeaseStore) ReleaseLease(_ context.Context, l Lease) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if cur := s.leases[l.Name]; cur.Token == l.Token && cur.Holder == l.Holder && now.Before(cur.Expires) {
		cur.Expires = now
		s.leases[l.Name] = cur
	}
	return nil
}

// Leases returns the unexpired leases, by name.
func (s *MemoryLeaseStore) Leases(context.Context) ([]Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	var out []Lease
	for _, l := range s.leases {
		if now.Before(l.Expires) {
			out = append(out, l)
		}
	}
	slices.SortFunc(out, func(a, b Lease) int { return compareStrings(a.Name, b.Name) })
	return out, nil
}

// PutIntent records in (its Spec without the PrivateKey) and returns its Seq.
func (s *MemoryLeaseStore) PutIntent(_ context.Context, in Intent) (int64, error) {
	if in.Fleet == "" {
		return 0, errors.New("gpufleet: an intent needs a fleet")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	in.Seq = s.seq
	in.Spec = cloneSpec(in.Spec)
	in.Spec.PrivateKey = PrivateKey{}
	s.intents = append(s.intents, in)
	return in.Seq, nil
}

// Intents returns the pending intents of fleet ("" for all), by Seq.
func (s *MemoryLeaseStore) Intents(ctx context.Context, fleet string) ([]Intent, error) {
	return s.IntentsAfter(ctx, fleet, 0)
}

// IntentsAfter returns the pending intents of fleet ("" for all) whose Seq
// is greater than after, by Seq (IntentTailReader).
func (s *MemoryLeaseStore) IntentsAfter(_ context.Context, fleet string, after int64) ([]Intent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Intent
	for _, in := range s.intents[s.firstAfter(after):] {
		if fleet == "" || in.Fleet == fleet {
			in.Spec = cloneSpec(in.Spec)
			out = append(out, in)
		}
	}
	return out, nil
}

// firstAfter is the index of the first intent with a Seq over after
// (s.intents is in Seq order). s.mu held.
func (s *MemoryLeaseStore) firstAfter(after int64) int {
	i, _ := slices.BinarySearchFunc(s.intents, after+1, func(in Intent, seq int64) int { return cmp.Compare(in.Seq, seq) })
	return i
}

// AckIntents forgets fleet's intents up to Seq through, fenced by
// FleetLease(fleet).
func (s *MemoryLeaseStore) AckIntents(ctx context.Context, fleet string, through int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.fence(ctx, FleetLease(fleet)); err != nil {
		return err
	}
	s.intents = slices.DeleteFunc(s.intents, func(in Intent) bool { return in.Fleet == fleet && in.Seq <= through })
	return nil
}
