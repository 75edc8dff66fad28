package hotaisle

import (
	"context"
	"fmt"
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

// Start powers a stopped VM on (POST /teams/{team}/virtual_machines/{vm}/start/,
// never retried) (fleet.Restarter). Bare-metal servers have no power route
// here: fleet.ErrInvalidRequest.
func (p *Provider) Start(ctx context.Context, name string) error {
	if bm, known := p.kind(name); known && bm {
		return fmt.Errorf("hotaisle: bare metal has no start route: %w", fleet.ErrInvalidRequest)
	}
	path, err := p.c.itemPath("VM", "virtual_machines", name, "start")
	if err != nil {
		return err
	}
	return p.c.do(ctx, http.MethodPost, path, nil, nil, nil)
}
