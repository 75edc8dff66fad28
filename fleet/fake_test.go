package fleet

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"
)

// fakeProvider is a scriptable in-package Provider and VPCProvider for unit
// tests of the Manager's logic (the scenario tests use the real providers
// against sim). Instances run bootTime after create.
type fakeProvider struct {
	name     string
	offers   []Offer
	bootTime time.Duration

	mu          sync.Mutex
	seq         int
	insts       map[string]*fakeInst
	vpcs        map[string]VPC
	calls       map[string]int
	deleteErr   []error // returned by successive Delete calls, then nil
	forced      []bool  // DeleteOptions.Force of each Delete call
	createErr   []error // returned by successive Create calls, then nil
	commitErr   bool    // a createErr entry still creates the instance
	attachErr   []error
	listErr     error
	createCtx   []error // ctx.Err() seen by each Create
	onCreate    func()  // called at the start of each Create
	offersDelay time.Duration
}

type fakeInst struct {
	inst    Instance
	created time.Time
	deleted bool
	vpcs    []string
}

func newFakeProvider(name string, offers ...Offer) *fakeProvider {
	return &fakeProvider{name: name, offers: offers, bootTime: 2 * time.Minute,
		insts: map[string]*fakeInst{}, vpcs: map[string]VPC{}, calls: map[string]int{}}
}

func (p *fakeProvider) count(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls[op]
}

func (p *fakeProvider) Name() string { return p.name }

func (p *fakeProvider) Offers(ctx context.Context) ([]Offer, error) {
	if p.offersDelay > 0 {
		select {
		case <-time.After(p.offersDelay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls["offers"]++
	return slices.Clone(p.offers), nil
}

func (p *fakeProvider) view(fi *fakeInst) Instance {
	inst := fi.inst
	if time.Since(fi.created) >= p.bootTime {
		inst.Status, inst.ProviderStatus = StatusBooting, "running"
		inst.SSH = SSHEndpoint{User: "root", Host: "192.0.2.1", Port: 22}
	} else {
		inst.Status, inst.ProviderStatus = StatusProvisioning, "pending"
	}
	return inst
}

func (p *fakeProvider) Create(ctx context.Context, req CreateRequest) (Instance, error) {
	if p.onCreate != nil {
		p.onCreate()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls["create"]++
	p.createCtx = append(p.createCtx, ctx.Err())
	var err error
	if len(p.createErr) > 0 {
		err, p.createErr = p.createErr[0], p.createErr[1:]
		if !p.commitErr {
			return Instance{}, err
		}
	}
	p.seq++
	id := fmt.Sprintf("%s-%d", p.name, p.seq)
	fi := &fakeInst{created: time.Now(), inst: Instance{ID: id, Provider: p.name, Fleet: req.Label.Fleet, Owner: req.Label.Owner,
		RequestID: req.Label.RequestID, Offer: req.Offer, Created: time.Now()}}
	if req.VPCID != "" {
		fi.vpcs = []string{req.VPCID}
	}
	p.insts[id] = fi
	if err != nil {
		return Instance{}, err
	}
	return p.view(fi), nil
}

func (p *fakeProvider) Get(_ context.Context, id string) (Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls["get"]++
	fi, ok := p.insts[id]
	if !ok || fi.deleted {
		return Instance{}, ErrNotFound
	}
	return p.view(fi), nil
}

func (p *fakeProvider) List(context.Context) ([]Instance, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls["list"]++
	if p.listErr != nil {
		return nil, p.listErr
	}
	var out []Instance
	for _, fi := range p.insts {
		if !fi.deleted {
			out = append(out, p.view(fi))
		}
	}
	return out, nil
}

func (p *fakeProvider) Delete(_ context.Context, id string, o DeleteOptions) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls["delete"]++
	p.forced = append(p.forced, o.Force)
	if len(p.deleteErr) > 0 {
		err := p.deleteErr[0]
		p.deleteErr = p.deleteErr[1:]
		return err
	}
	fi, ok := p.insts[id]
	if !ok || fi.deleted {
		return ErrNotFound
	}
	fi.deleted = true
	return nil
}

func (p *fakeProvider) CreateVPC(_ context.Context, region string, l Label) (VPC, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls["createvpc"]++
	p.seq++
	v := VPC{ID: fmt.Sprintf("vpc-%d", p.seq), Provider: p.name, Region: region, Fleet: l.Fleet, Owner: l.Owner, RequestID: l.RequestID}
	p.vpcs[v.ID] = v
	return v, nil
}

func (p *fakeProvider) AttachVPC(_ context.Context, id, vpcID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls["attach"]++
	if len(p.attachErr) > 0 {
		err := p.attachErr[0]
		p.attachErr = p.attachErr[1:]
		return err
	}
	p.insts[id].vpcs = append(p.insts[id].vpcs, vpcID)
	return nil
}

func (p *fakeProvider) InstanceVPCs(_ context.Context, id string) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.insts[id].vpcs), nil
}

func (p *fakeProvider) ListVPCs(context.Context) ([]VPC, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []VPC
	for _, v := range p.vpcs {
		out = append(out, v)
	}
	return out, nil
}

func (p *fakeProvider) DeleteVPC(_ context.Context, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls["deletevpc"]++
	for _, fi := range p.insts {
		if !fi.deleted && slices.Contains(fi.vpcs, id) {
			return ErrVPCInUse
		}
	}
	if _, ok := p.vpcs[id]; !ok {
		return ErrNotFound
	}
	delete(p.vpcs, id)
	return nil
}

func (p *fakeProvider) live() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, fi := range p.insts {
		if !fi.deleted {
			n++
		}
	}
	return n
}
