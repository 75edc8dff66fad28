package hotaisle

import (
	"context"
	"errors"
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
// window, the team's VM names are listed before the POST; when the POST fails
// ambiguously (not a definite refusal, see definiteRefusal), the VMs are
// listed again and the one VM that is new, unlabelled, not claimed by another
// Create of this Provider and matches the requested specs is taken as the
// created one: it is labelled and returned. With zero or several candidates
// the original error is returned and nothing is touched: the window between
// the two lists is seconds, so a lone candidate is very unlikely to be
// someone else's, but among several there is no telling which one is ours.
// When the first list fails, there is no recovery.
func (p *Provider) createVM(ctx context.Context, req fleet.CreateRequest, specs VMSpecs) (fleet.Instance, error) {
	before, listErr := p.vmNames(ctx)
	vm, err := p.c.ProvisionVM(ctx, VMProvisionRequest{VMSpecs: specs})
	if err != nil {
		if listErr != nil || definiteRefusal(err) {
			return fleet.Instance{}, err
		}
		found := p.findProvisioned(ctx, before, specs)
		if found == nil {
			return fleet.Instance{}, err
		}
		vm = found
	} else {
		p.claim(vm.Name)
	}
	p.remember(vm.Name, false)
	label := req.Label.String()
	if err := p.labelVM(ctx, vm.Name, label); err == nil {
		vm.Description = label
		p.unclaim(vm.Name) // labelled: the empty-description rule excludes it now
	}
	inst := p.vmInstance(*vm)
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

// vmNames lists the names of the team's VMs.
func (p *Provider) vmNames(ctx context.Context) (map[string]bool, error) {
	vms, err := p.c.ListVMs(ctx)
	if err != nil {
		return nil, err
	}
	names := make(map[string]bool, len(vms))
	for _, vm := range vms {
		names[vm.Name] = true
	}
	return names, nil
}

// findProvisioned lists the VMs again, detached from the caller's
// cancellation (a timed-out POST may still have assigned a VM), and returns
// the only VM that is not in before, has no description, is not claimed and
// matches specs; it is claimed. nil when there is no such VM, several, or the
// list fails.
func (p *Provider) findProvisioned(ctx context.Context, before map[string]bool, specs VMSpecs) *VM {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recoverTimeout)
	defer cancel()
	vms, err := p.c.ListVMs(ctx)
	if err != nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
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

// claim marks a VM as provisioned by a Create of this Provider and not yet
// labelled, so that a concurrent recovery does not take it for its own.
func (p *Provider) claim(name string) {
	p.mu.Lock()
	p.claimed[name] = true
	p.mu.Unlock()
}

func (p *Provider) unclaim(name string) {
	p.mu.Lock()
	delete(p.claimed, name)
	p.mu.Unlock()
}
