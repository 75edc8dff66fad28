package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"

	"github.com/gpufleet/gpufleet/fleet"
)

// fault is one kind of refusal a cloud answers that the Manager must
// survive, as its error class (errors.Is), never its text.
type fault struct {
	class error
	name  string           // what the cloud said, in short
	say   func(int) string // one sentence: how often, and what the Manager did
}

// faults are the classes the meter counts, in report order.
var faults = []fault{
	{fleet.ErrNoCapacity, "sold out", func(n int) string {
		return fmt.Sprintf("%s refused as sold out; the next offer was taken.", count(n, "create", "creates"))
	}},
	{fleet.ErrAttachFailed, "VPC attach failed", func(n int) string {
		return fmt.Sprintf("%s failed; each was retried until listing the server's VPCs confirmed it.", count(n, "VPC attach", "VPC attaches"))
	}},
	{fleet.ErrLocked, "server locked", func(n int) string {
		return fmt.Sprintf("%s refused while the server was locked after boot; retried.", count(n, "call", "calls"))
	}},
	{fleet.ErrNotActive, "not currently active", func(n int) string {
		return fmt.Sprintf("%s refused as \"not currently active\"; retried with backoff until accepted.", count(n, "delete", "deletes"))
	}},
	{fleet.ErrMinReservation, "minimum reservation", func(n int) string {
		return fmt.Sprintf("%s refused before the minimum reservation ended; retried.", count(n, "release", "releases"))
	}},
	{fleet.ErrVPCInUse, "VPC in use", func(n int) string {
		return fmt.Sprintf("%s refused while members lingered; retried once they were gone.", count(n, "VPC delete", "VPC deletes"))
	}},
	{fleet.ErrRateLimited, "rate limited", func(n int) string {
		return fmt.Sprintf("%s rate limited; retried after Retry-After.", count(n, "call was", "calls were"))
	}},
	{fleet.ErrUnavailable, "unavailable", func(n int) string {
		return fmt.Sprintf("%s the API unavailable; retried.", count(n, "call found", "calls found"))
	}},
}

// count is "1 create" or "3 creates".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
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
	links  map[string]string         // request id → provider id
}

// made is a resource a create call returned.
type made struct {
	provider, kind, id string // kind: "instance" or "vpc"
}

func newMeter() *meter {
	return &meter{calls: map[string]int{}, counts: map[string]map[string]int{}, other: map[string]int{}, links: map[string]string{}}
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

// linkIDs records that a create with requestID returned providerID.
func (m *meter) linkIDs(requestID, providerID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.links[requestID] = providerID
}

// link returns the request id and provider id of the instance one of them
// names, as far as the run's create calls told ("" when not known).
func (m *meter) link(id string) (requestID, providerID string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for req, prov := range m.links {
		if id == req || id == prov {
			return req, prov
		}
	}
	if requestIDRE.MatchString(id) {
		return id, ""
	}
	return "", id
}

// requestIDRE matches the Manager's request ids (fleet.NewRequestID).
var requestIDRE = regexp.MustCompile(`^[0-9a-f]{12}$`)

// refusals returns the refusals of one kind seen from provider.
func (m *meter) refusals(provider, name string) int {
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
		p.m.linkIDs(req.Label.RequestID, i.ID)
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
