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
	name  string                    // what the cloud said, in short
	unit  [2]string                 // what its outcome counts: calls, or the servers, VPCs or fleets they were about
	say   func(int, outcome) string // one sentence: how often, and what became of it
}

// faults are the classes the meter counts, in report order. Each sentence
// says what the Manager did only as far as the events (or later calls)
// show it: "confirmed" only when it was (see outcome).
var faults = []fault{
	{fleet.ErrNoCapacity, "sold out", [2]string{"fleet", "fleets"}, func(n int, o outcome) string {
		head := count(n, "create", "creates") + " refused as sold out; "
		return o.tell(head+"the next offer was taken.", head,
			"another offer was taken for %s", "every other offer failed too for %s (NoOffers)", "no other offer was taken for %s before the run ended")
	}},
	{fleet.ErrAttachFailed, "VPC attach failed", [2]string{"server", "servers"}, func(n int, o outcome) string {
		head := count(n, "VPC attach", "VPC attaches") + " failed; "
		return o.tell(head+"each was retried until listing the server's VPCs confirmed it.", head+"retried: ",
			"listing its VPCs confirmed it on %s", "given up on %s, which ran without the VPC (VPCUnavailable)", "not confirmed before release on %s")
	}},
	{fleet.ErrLocked, "server locked", [2]string{"server", "servers"}, func(n int, o outcome) string {
		head := count(n, "call", "calls") + " refused while the server was locked after boot; retried"
		return o.tell(head+".", head+": ", "went through on %s", "given up on %s (VPCUnavailable)", "never went through on %s")
	}},
	{fleet.ErrNotActive, "not currently active", [2]string{"server", "servers"}, func(n int, o outcome) string {
		head := count(n, "delete", "deletes") + " refused as \"not currently active\"; retried with backoff"
		return o.tell(head+" until accepted.", head+": ", "%s confirmed gone", "%s given up", "%s never confirmed gone")
	}},
	{fleet.ErrMinReservation, "minimum reservation", [2]string{"server", "servers"}, func(n int, o outcome) string {
		head := count(n, "release", "releases") + " refused before the minimum reservation ended; retried"
		return o.tell(head+".", head+": ", "%s confirmed gone", "%s given up", "%s never confirmed gone")
	}},
	{fleet.ErrVPCInUse, "VPC in use", [2]string{"VPC", "VPCs"}, func(n int, o outcome) string {
		head := count(n, "VPC delete", "VPC deletes") + " refused while members lingered; retried"
		return o.tell(head+" once they were gone.", head+": ", "%s deleted once they were gone", "%s given up", "%s never deleted")
	}},
	{fleet.ErrRateLimited, "rate limited", [2]string{"call", "calls"}, func(n int, o outcome) string {
		head := count(n, "call was", "calls were") + " rate limited; retried after Retry-After"
		return o.tell(head+".", head+": ", "%s then went through", "%s given up", "%s never went through")
	}},
	{fleet.ErrUnavailable, "unavailable", [2]string{"call", "calls"}, func(n int, o outcome) string {
		head := count(n, "call found", "calls found") + " the API unavailable; retried"
		return o.tell(head+".", head+": ", "%s then went through", "%s given up", "%s never went through")
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
// refusals it meets, by error class, and keeps what each refusal was about
// for the report to tell what became of it. Not-found answers are not
// counted as faults: they are how a release is confirmed.
type meter struct {
	mu      sync.Mutex
	seq     int               // calls noted so far
	calls   map[string]int    // provider → calls
	refused []refusal         // every refusal of a listed class, in order
	lastOK  map[string]int    // call and subject → seq of the last success
	other   map[string]int    // provider → errors of no listed class
	made    []made            // what the run created, in order
	links   map[string]string // request id → provider id
}

// refusal is one refused call and what it was about.
type refusal struct {
	provider, fault string
	call            string // the Provider method ("Create", "AttachVPC", …)
	subject         string // Create: the fleet; calls on a server or VPC: its id; else ""
	seq             int
}

// made is a resource a create call returned.
type made struct {
	provider, kind, id string // kind: "instance" or "vpc"
}

func newMeter() *meter {
	return &meter{calls: map[string]int{}, other: map[string]int{}, links: map[string]string{},
		lastOK: map[string]int{}}
}

// note counts one call of provider's method about subject and its answer.
func (m *meter) note(provider, call, subject string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[provider]++
	m.seq++
	if err == nil || errors.Is(err, fleet.ErrNotFound) {
		m.lastOK[call+"\x00"+subject] = m.seq
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	for _, f := range faults {
		if errors.Is(err, f.class) {
			m.refused = append(m.refused, refusal{provider: provider, fault: f.name, call: call, subject: subject, seq: m.seq})
			return
		}
	}
	m.other[provider]++
}

// refusalsOf returns the refusals of one kind met from provider, in order.
func (m *meter) refusalsOf(provider, name string) []refusal {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []refusal
	for _, r := range m.refused {
		if r.provider == provider && r.fault == name {
			out = append(out, r)
		}
	}
	return out
}

// retried reports whether a call of the same method about the same subject
// went through after r (a not-found answer counts: it is how a delete of
// what is gone ends).
func (m *meter) retried(r refusal) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lastOK[r.call+"\x00"+r.subject] > r.seq
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
	p.m.note(p.Name(), "Offers", "", err)
	return o, err
}

func (p *metered) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	i, err := p.Provider.Create(ctx, req)
	p.m.note(p.Name(), "Create", req.Label.Fleet, err)
	if err == nil && i.ID != "" {
		p.m.remember(made{p.Name(), "instance", i.ID})
		p.m.linkIDs(req.Label.RequestID, i.ID)
	}
	return i, err
}

func (p *metered) Get(ctx context.Context, id string) (fleet.Instance, error) {
	i, err := p.Provider.Get(ctx, id)
	p.m.note(p.Name(), "Get", id, err)
	return i, err
}

func (p *metered) List(ctx context.Context) ([]fleet.Instance, error) {
	l, err := p.Provider.List(ctx)
	p.m.note(p.Name(), "List", "", err)
	return l, err
}

func (p *metered) Delete(ctx context.Context, id string, opts fleet.DeleteOptions) error {
	err := p.Provider.Delete(ctx, id, opts)
	p.m.note(p.Name(), "Delete", id, err)
	return err
}

type meteredVPC struct {
	*metered
	vp fleet.VPCProvider
}

func (p *meteredVPC) CreateVPC(ctx context.Context, region string, label fleet.Label) (fleet.VPC, error) {
	v, err := p.vp.CreateVPC(ctx, region, label)
	p.m.note(p.Name(), "CreateVPC", label.Fleet, err)
	if err == nil {
		p.m.remember(made{p.Name(), "vpc", v.ID})
	}
	return v, err
}

func (p *meteredVPC) AttachVPC(ctx context.Context, instanceID, vpcID string) error {
	err := p.vp.AttachVPC(ctx, instanceID, vpcID)
	p.m.note(p.Name(), "AttachVPC", instanceID, err)
	return err
}

func (p *meteredVPC) InstanceVPCs(ctx context.Context, instanceID string) ([]string, error) {
	ids, err := p.vp.InstanceVPCs(ctx, instanceID)
	p.m.note(p.Name(), "InstanceVPCs", instanceID, err)
	return ids, err
}

func (p *meteredVPC) ListVPCs(ctx context.Context) ([]fleet.VPC, error) {
	v, err := p.vp.ListVPCs(ctx)
	p.m.note(p.Name(), "ListVPCs", "", err)
	return v, err
}

func (p *meteredVPC) DeleteVPC(ctx context.Context, id string) error {
	err := p.vp.DeleteVPC(ctx, id)
	p.m.note(p.Name(), "DeleteVPC", id, err)
	return err
}
