package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// crashStore is a generation's view of the Store: after its crash nothing
// it writes lands (the process is gone); reads go through.
type crashStore struct {
	fleet.Store
	dead atomic.Bool
}

var errCrashed = errors.New("the process crashed")

func (s *crashStore) PutFleet(ctx context.Context, f fleet.FleetRecord) error {
	if s.dead.Load() {
		return errCrashed
	}
	return s.Store.PutFleet(ctx, f)
}

func (s *crashStore) DeleteFleet(ctx context.Context, name string) error {
	if s.dead.Load() {
		return errCrashed
	}
	return s.Store.DeleteFleet(ctx, name)
}

func (s *crashStore) PutInstance(ctx context.Context, r fleet.InstanceRecord) error {
	if s.dead.Load() {
		return errCrashed
	}
	return s.Store.PutInstance(ctx, r)
}

func (s *crashStore) DeleteInstance(ctx context.Context, id string) error {
	if s.dead.Load() {
		return errCrashed
	}
	return s.Store.DeleteInstance(ctx, id)
}

func (s *crashStore) PutMeta(ctx context.Context, key, value string) error {
	if s.dead.Load() {
		return errCrashed
	}
	return s.Store.PutMeta(ctx, key, value)
}

// wrapped is a provider as the schedule's cloud answers it: slow while a
// slow window is open, new instances missing from List and Get for a while
// after their create while a hide window is open, and an armed crash fired
// on its call.
type wrapped struct {
	p fleet.Provider
	w *world
	g *generation
}

type wrappedVPC struct {
	wrapped
	vp fleet.VPCProvider
}

// slow waits (on the bubble clock) while a slow window is open.
func (p *wrapped) slow(ctx context.Context) error {
	p.w.mu.Lock()
	var d time.Duration
	if time.Now().Before(p.w.slowTill) {
		d = time.Duration(p.w.rng.Int64N(int64(p.w.slowMax) + 1))
	}
	p.w.mu.Unlock()
	if d == 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// call runs one provider call: crash hooks around it, slow before it and,
// half the time, slow after it too (the answer, not the effect, is late: a
// deadline then hides a done call).
func (p *wrapped) call(ctx context.Context, method string, fn func() error) error {
	p.w.callCrash(p.g, method, false)
	if err := p.slow(ctx); err != nil {
		return err
	}
	err := fn()
	p.w.callCrash(p.g, method, true)
	p.w.mu.Lock()
	late := p.w.rng.IntN(2) == 0
	p.w.mu.Unlock()
	if late {
		if serr := p.slow(ctx); serr != nil && err == nil {
			return serr
		}
	}
	return err
}

func (p *wrapped) Name() string { return p.p.Name() }

func (p *wrapped) Offers(ctx context.Context) (out []fleet.Offer, err error) {
	err = p.call(ctx, "Offers", func() error { out, err = p.p.Offers(ctx); return err })
	return out, err
}

func (p *wrapped) Create(ctx context.Context, req fleet.CreateRequest) (inst fleet.Instance, err error) {
	defer func() {
		if p.g.dead.Load() { // under way when its process crashed: may land unknown to the next one
			p.w.mu.Lock()
			p.w.extra[req.Label.Fleet]++
			p.w.mu.Unlock()
		}
	}()
	err = p.call(ctx, "Create", func() error {
		inst, err = p.p.Create(ctx, req)
		if err == nil && inst.ID != "" {
			p.w.created(p.p.Name(), inst.ID, req.Label.Fleet)
		}
		return err
	})
	if err != nil {
		return fleet.Instance{}, err
	}
	return inst, nil
}

// created notes a new instance's fleet and, in a hide window, hides it.
func (w *world) created(provider, id, fleetName string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	key := provider + "/" + id
	w.fleetOf[key] = fleetName
	if now := time.Now(); now.Before(w.hideTill) {
		w.hidden[key] = now.Add(time.Duration(w.rng.Int64N(int64(w.hideMax) + 1)))
	}
}

func (w *world) isHidden(provider, id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return time.Now().Before(w.hidden[provider+"/"+id])
}

func (p *wrapped) Get(ctx context.Context, id string) (inst fleet.Instance, err error) {
	err = p.call(ctx, "Get", func() error {
		if p.w.isHidden(p.p.Name(), id) {
			return fmt.Errorf("%s: instance %s not visible yet: %w", p.p.Name(), id, fleet.ErrNotFound)
		}
		inst, err = p.p.Get(ctx, id)
		return err
	})
	return inst, err
}

func (p *wrapped) List(ctx context.Context) (out []fleet.Instance, err error) {
	err = p.call(ctx, "List", func() error {
		out, err = p.p.List(ctx)
		out = slices.DeleteFunc(out, func(i fleet.Instance) bool { return p.w.isHidden(p.p.Name(), i.ID) })
		return err
	})
	return out, err
}

func (p *wrapped) Delete(ctx context.Context, id string, opts fleet.DeleteOptions) error {
	return p.call(ctx, "Delete", func() error { return p.p.Delete(ctx, id, opts) })
}

func (p *wrappedVPC) CreateVPC(ctx context.Context, region string, label fleet.Label) (v fleet.VPC, err error) {
	err = p.call(ctx, "CreateVPC", func() error { v, err = p.vp.CreateVPC(ctx, region, label); return err })
	return v, err
}

func (p *wrappedVPC) AttachVPC(ctx context.Context, instanceID, vpcID string) error {
	return p.call(ctx, "AttachVPC", func() error { return p.vp.AttachVPC(ctx, instanceID, vpcID) })
}

func (p *wrappedVPC) InstanceVPCs(ctx context.Context, instanceID string) (ids []string, err error) {
	err = p.call(ctx, "InstanceVPCs", func() error { ids, err = p.vp.InstanceVPCs(ctx, instanceID); return err })
	return ids, err
}

func (p *wrappedVPC) ListVPCs(ctx context.Context) (out []fleet.VPC, err error) {
	err = p.call(ctx, "ListVPCs", func() error { out, err = p.vp.ListVPCs(ctx); return err })
	return out, err
}

func (p *wrappedVPC) DeleteVPC(ctx context.Context, id string) error {
	return p.call(ctx, "DeleteVPC", func() error { return p.vp.DeleteVPC(ctx, id) })
}

// The providers' optional capabilities go through the same faults.

func (p *wrapped) ListKind(ctx context.Context, bareMetal bool) (out []fleet.Instance, err error) {
	err = p.call(ctx, "List", func() error {
		out, err = p.p.(fleet.KindLister).ListKind(ctx, bareMetal)
		out = slices.DeleteFunc(out, func(i fleet.Instance) bool { return p.w.isHidden(p.p.Name(), i.ID) })
		return err
	})
	return out, err
}

func (p *wrapped) SetLabel(ctx context.Context, id string, l fleet.Label) error {
	return p.call(ctx, "SetLabel", func() error { return p.p.(fleet.Labeler).SetLabel(ctx, id, l) })
}

func (p *wrapped) Start(ctx context.Context, id string) error {
	return p.call(ctx, "Start", func() error { return p.p.(fleet.Restarter).Start(ctx, id) })
}

// wrappedKeys is the Hot Aisle provider, which registers SSH keys.
type wrappedKeys struct{ wrapped }

func (p *wrappedKeys) ListSSHKeys(ctx context.Context) (out []fleet.SSHKey, err error) {
	err = p.call(ctx, "ListSSHKeys", func() error { out, err = p.p.(fleet.SSHKeyProvider).ListSSHKeys(ctx); return err })
	return out, err
}

func (p *wrappedKeys) DeleteSSHKey(ctx context.Context, id string) error {
	return p.call(ctx, "DeleteSSHKey", func() error { return p.p.(fleet.SSHKeyProvider).DeleteSSHKey(ctx, id) })
}
