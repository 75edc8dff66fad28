package main

import (
	"context"
	"errors"
	"sort"
	"sync"

	"github.com/gpufleet/gpufleet/fleet"
)

// fault is one kind of refusal a cloud answers that the Manager must
// survive, as its error class (errors.Is), never its text.
type fault struct {
	class error
	name  string // what the cloud said, in short
	how   string // what the Manager did about it
}

// faults are the classes the meter counts, in report order.
var faults = []fault{
	{fleet.ErrNoCapacity, "sold out", "create refused; the next offer was taken"},
	{fleet.ErrAttachFailed, "VPC attach failed", "attach retried until listing the server's VPCs confirmed it"},
	{fleet.ErrLocked, "server locked", "refused while locked after boot; retried"},
	{fleet.ErrNotActive, "not currently active", "delete refused; retried with backoff until accepted"},
	{fleet.ErrMinReservation, "minimum reservation", "release refused before the minimum; retried"},
	{fleet.ErrVPCInUse, "VPC in use", "VPC delete retried once its members were gone"},
	{fleet.ErrRateLimited, "rate limited", "retried after Retry-After"},
	{fleet.ErrUnavailable, "unavailable", "retried"},
}

// meter counts the calls the Manager makes through each provider and the
// refusals it meets, by error class. Not-found answers are not counted as
// faults: they are how a release is confirmed.
type meter struct {
	mu     sync.Mutex
	calls  map[string]int            // provider → calls
	counts map[string]map[string]int // provider → fault name → refusals
	other  map[string]int            // provider → errors of no listed class
	made   []made                    // what the run created, in order
}

// made is a resource a create call returned.
type made struct {
	provider, kind, id string // kind: "instance" or "vpc"
}

func newMeter() *meter {
	return &meter{calls: map[string]int{}, counts: map[string]map[string]int{}, other: map[string]int{}}
}

func (m *meter) note(provider string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[provider]++
	if err == nil || errors.Is(err, fleet.ErrNotFound) || errors.Is(err, context.Canceled) {
		return
	}
	for _, f := range faults {
		if errors.Is(err, f.class) {
			if m.counts[provider] == nil {
				m.counts[provider] = map[string]int{}
			}
			m.counts[provider][f.name]++
			return
		}
	}
	m.other[provider]++
}

func (m *meter) remember(r made) {
	m.mu.Lock()
	m.made = append(m.made, r)
	m.mu.Unlock()
}

// created returns what the run's create calls returned.
func (m *meter) created() []made {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]made(nil), m.made...)
}

// count returns the refusals of one kind seen from provider.
func (m *meter) count(provider, name string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[provider][name]
}

// callsTo returns the calls made to provider.
func (m *meter) callsTo(provider string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.calls[provider]
}

// providers returns the providers seen, sorted.
func (m *meter) providers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for p := range m.calls {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// wrap returns p with every call counted; a VPCProvider stays one.
func (m *meter) wrap(p fleet.Provider) fleet.Provider {
	mp := &metered{Provider: p, m: m}
	if vp, ok := p.(fleet.VPCProvider); ok {
		return &meteredVPC{metered: mp, vp: vp}
	}
	return mp
}

type metered struct {
	fleet.Provider
	m *meter
}

func (p *metered) Offers(ctx context.Context) ([]fleet.Offer, error) {
	o, err := p.Provider.Offers(ctx)
	p.m.note(p.Name(), err)
	return o, err
}

func (p *metered) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	i, err := p.Provider.Create(ctx, req)
	p.m.note(p.Name(), err)
	if err == nil && i.ID != "" {
		p.m.remember(made{p.Name(), "instance", i.ID})
	}
	return i, err
}

func (p *metered) Get(ctx context.Context, id string) (fleet.Instance, error) {
	i, err := p.Provider.Get(ctx, id)
	p.m.note(p.Name(), err)
	return i, err
}

func (p *metered) List(ctx context.Context) ([]fleet.Instance, error) {
	l, err := p.Provider.List(ctx)
	p.m.note(p.Name(), err)
	return l, err
}

func (p *metered) Delete(ctx context.Context, id string, opts fleet.DeleteOptions) error {
	err := p.Provider.Delete(ctx, id, opts)
	p.m.note(p.Name(), err)
	return err
}

type meteredVPC struct {
	*metered
	vp fleet.VPCProvider
}

func (p *meteredVPC) CreateVPC(ctx context.Context, region string, label fleet.Label) (fleet.VPC, error) {
	v, err := p.vp.CreateVPC(ctx, region, label)
	p.m.note(p.Name(), err)
	if err == nil {
		p.m.remember(made{p.Name(), "vpc", v.ID})
	}
	return v, err
}

func (p *meteredVPC) AttachVPC(ctx context.Context, instanceID, vpcID string) error {
	err := p.vp.AttachVPC(ctx, instanceID, vpcID)
	p.m.note(p.Name(), err)
	return err
}

func (p *meteredVPC) InstanceVPCs(ctx context.Context, instanceID string) ([]string, error) {
	ids, err := p.vp.InstanceVPCs(ctx, instanceID)
	p.m.note(p.Name(), err)
	return ids, err
}

func (p *meteredVPC) ListVPCs(ctx context.Context) ([]fleet.VPC, error) {
	v, err := p.vp.ListVPCs(ctx)
	p.m.note(p.Name(), err)
	return v, err
}

func (p *meteredVPC) DeleteVPC(ctx context.Context, id string) error {
	err := p.vp.DeleteVPC(ctx, id)
	p.m.note(p.Name(), err)
	return err
}
