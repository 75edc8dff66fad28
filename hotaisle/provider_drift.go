package hotaisle

import (
	"context"
	"errors"
	"net/http"

	"github.com/gpufleet/gpufleet/fleet"
)

// SetLabel writes a server's label into its description again (PATCH of
// the VM or bare-metal server, 204), for a label lost out of band or whose
// write failed after the provision (fleet.Labeler). Errors: those of
// UpdateVM and UpdateBareMetal (fleet.ErrNotFound when gone).
func (p *Provider) SetLabel(ctx context.Context, name string, label fleet.Label) error {
	if bm, known := p.kind(name); known && bm {
		return p.c.UpdateBareMetal(ctx, name, BareMetalUpdate{Description: label.String()})
	}
	return p.c.UpdateVM(ctx, name, VMUpdate{Description: label.String()})
}

// Start powers a stopped VM on (POST /teams/{team}/virtual_machines/{vm}/start/)
// or a powered-off bare-metal server (POST
// /teams/{team}/bare_metal/{server}/power/power_on/), one call, never
// retried (fleet.Restarter). A name of unknown kind is tried as a VM first,
// then as a server. Errors: fleet.ErrNotFound when neither exists, and the
// API's refusals.
func (p *Provider) Start(ctx context.Context, name string) error {
	bm, known := p.kind(name)
	if !known || !bm {
		err := p.startVM(ctx, name)
		if !errors.Is(err, fleet.ErrNotFound) || known {
			return err
		}
	}
	return p.c.PowerOnBareMetal(ctx, name)
}

func (p *Provider) startVM(ctx context.Context, name string) error {
	path, err := p.c.itemPath("VM", "virtual_machines", name, "start")
	if err != nil {
		return err
	}
	return p.c.do(ctx, http.MethodPost, path, nil, nil, nil)
}

// PoweredOff reports whether a VM's state is "shut off" (GET of its
// state/) or a bare-metal server's power is "Off" (GET of its power/): one
// call for a name this Provider has listed (fleet.PowerChecker; Hot Aisle's
// VM and server lists carry no power state, so a stop out of band shows only
// here). A name of unknown kind is tried as a VM first, then as a server.
// Errors: fleet.ErrNotFound when neither exists; others are transient
// (power reads fail for minutes while a server is reset at the mains).
func (p *Provider) PoweredOff(ctx context.Context, name string) (bool, error) {
	bm, known := p.kind(name)
	if !known || !bm {
		st, err := p.c.GetVMState(ctx, name)
		if err == nil {
			return st.State == VMShutOff, nil
		}
		if !errors.Is(err, fleet.ErrNotFound) || known {
			return false, err
		}
	}
	power, err := p.c.GetBareMetalPower(ctx, name)
	if err != nil {
		return false, err
	}
	return power == PowerOff, nil
}

var _ fleet.PowerChecker = (*Provider)(nil)
