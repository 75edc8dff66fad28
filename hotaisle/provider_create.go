package hotaisle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
)

// recoverTimeout bounds the detached lookup of a VM whose provision answered
// ambiguously.
const recoverTimeout = time.Minute

// createVM provisions a VM and labels it. The VM request has no description
// field, so a provision that fails after committing leaves a VM no label
// lookup can ever find: it would bill until someone notices. To close that
// window without listing the team's VMs before every provision (at thousands
// of VMs that list is most of a create's cost), the Provider keeps the names
// it has seen: those of its latest list (List, or a recovery's) and of its own
// creates since. A fresh Provider that never listed lists once, before its
// first provision. When a provision fails ambiguously (not a definite
// refusal, see definiteRefusal), the VMs are listed and the one VM that is
// not among the names seen, unlabelled, not claimed by another Create of
// this Provider and matching the requested specs is taken as the created
// one: it is labelled and returned. With zero or several candidates the
// original error is returned and nothing is touched: among several there is
// no telling which one is ours. Provisions run one at a time per Provider,
// so that two ambiguous failures of one spec cannot leave two candidates,
// and none is made before some list has worked (it would have no recovery).
// A create that gives up before its provision is sent (its context ended
// while an earlier one ran, or no list has worked) wraps fleet.ErrNotSent.
//
// A label that cannot be written is reported in the instance's LabelError
// (the VM is returned all the same: it exists and bills).
func (p *Provider) createVM(ctx context.Context, req fleet.CreateRequest, specs VMSpecs) (fleet.Instance, error) {
	select {
	case p.createSlot <- struct{}{}:
	case <-ctx.Done():
		return fleet.Instance{}, notSent(fmt.Errorf("hotaisle: waiting for an earlier provision: %w", ctx.Err()))
	}
	defer func() { <-p.createSlot }()
	if !p.ensureSeen(ctx) {
		// No list ever worked: a provision that failed after committing
		// could not be recovered, so none is made.
		return fleet.Instance{}, notSent(fmt.Errorf("hotaisle: the team's VMs could not be listed, so no VM is provisioned (one that failed after committing could not be found again): %w", fleet.ErrUnavailable))
	}
	vm, err := p.c.ProvisionVM(ctx, VMProvisionRequest{VMSpecs: specs})
	if err != nil {
		if definiteRefusal(err) {
			return fleet.Instance{}, err
		}
		found := p.findProvisioned(ctx, specs)
		if found == nil {
			return fleet.Instance{}, err
		}
		vm = found
	} else {
		p.own(vm.Name)
	}
	p.remember(vm.Name, false)
	label := req.Label.String()
	labelErr := p.labelVM(ctx, vm.Name, label)
	if labelErr == nil {
		vm.Description = label
		p.unclaim(vm.Name) // labelled: the empty-description rule excludes it now
	}
	inst := p.vmInstance(*vm)
	if labelErr != nil {
		inst.LabelError = labelErr.Error()
	}
	inst.Offer = req.Offer
	p.fillOffer(&inst.Offer)
	return inst, nil
}

// definiteRefusal reports whether a create error means the API refused the
// request before doing anything: nothing was created.
func definiteRefusal(err error) bool {
	for _, class := range []error{fleet.ErrNoCapacity, fleet.ErrQuotaExceeded, fleet.ErrInsufficientBalance,
		fleet.ErrInvalidRequest, fleet.ErrUnauthorized, fleet.ErrForbidden, fleet.ErrRateLimited} {
		if errors.Is(err, class) {
			return true
		}
	}
	return false
}

// ensureSeen lists the team's VMs once if no list has succeeded yet, so
// that a recovery has names to compare with, and reports whether some list
// has. Concurrent first creates list once between them.
func (p *Provider) ensureSeen(ctx context.Context) bool {
	p.listMu.Lock()
	defer p.listMu.Unlock()
	p.mu.Lock()
	have := p.seen != nil
	p.mu.Unlock()
	if have {
		return true
	}
	vms, err := p.c.ListVMs(ctx)
	if err == nil {
		p.sawList(vms)
	}
	return err == nil
}

// sawList makes the names of a complete VM list the names seen.
func (p *Provider) sawList(vms []VM) {
	names := make(map[string]bool, len(vms))
	for i := range vms {
		names[vms[i].Name] = true
	}
	p.mu.Lock()
	p.seen = names
	p.mu.Unlock()
}

// own records a VM this Provider provisioned: seen, and claimed until
// labelled, so that a concurrent recovery does not take it for its own.
func (p *Provider) own(name string) {
	p.mu.Lock()
	if p.seen != nil {
		p.seen[name] = true
	}
	p.claimed[name] = true
	p.mu.Unlock()
}

// findProvisioned lists the VMs, detached from the caller's cancellation (a
// timed-out POST may still have assigned a VM), and returns the only VM that
// was not seen, has no description, is not claimed and matches specs; it is
// claimed, and the list becomes the names seen. nil when there is no such VM,
// several, no earlier list to compare with, or the list fails.
func (p *Provider) findProvisioned(ctx context.Context, specs VMSpecs) *VM {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recoverTimeout)
	defer cancel()
	vms, err := p.c.ListVMs(ctx)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.seen
	p.seen = make(map[string]bool, len(vms))
	for i := range vms {
		p.seen[vms[i].Name] = true
	}
	if before == nil {
		return nil
	}
	var found *VM
	for i := range vms {
		vm := &vms[i]
		if before[vm.Name] || vm.Description != "" || p.claimed[vm.Name] || !matchesVMSpecs(specs, vm.VMSpecs) {
			continue
		}
		if found != nil {
			return nil
		}
		found = vm
	}
	if found != nil {
		p.claimed[found.Name] = true
	}
	return found
}

// matchesVMSpecs compares what identifies a VM type: the cpu_cores and the
// GPU count and model, each only when requested (a request may be partial).
func matchesVMSpecs(want, got VMSpecs) bool {
	if want.CPUCores != 0 && want.CPUCores != got.CPUCores {
		return false
	}
	if len(want.GPUs) == 0 {
		return true
	}
	if totalGPUs(want.GPUs) != totalGPUs(got.GPUs) || len(got.GPUs) == 0 {
		return false
	}
	return want.GPUs[0].Model == "" || strings.EqualFold(want.GPUs[0].Model, got.GPUs[0].Model)
}

func (p *Provider) unclaim(name string) {
	p.mu.Lock()
	delete(p.claimed, name)
	p.mu.Unlock()
}

// labelVM writes the label, retrying the (idempotent) PATCH a few times,
// pausing on the client's clock. It runs detached from the caller's
// cancellation (bounded by a minute): the VM exists and bills, and without
// its label it could not be found again.
func (p *Provider) labelVM(ctx context.Context, name, label string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var err error
	for attempt := range 3 {
		if err = p.c.UpdateVM(ctx, name, VMUpdate{Description: label}); err == nil {
			return nil
		}
		if attempt == 2 || p.c.clock.Sleep(ctx, time.Duration(attempt+1)*time.Second) != nil {
			break
		}
	}
	return err
}
