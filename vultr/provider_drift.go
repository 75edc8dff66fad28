package vultr

import (
	"context"
	"net/http"

	"github.com/gpufleet/gpufleet/fleet"
)

// SetLabel writes a server's label and gpufleet tags again (PATCH of the
// instance or bare-metal server), for a label lost out of band
// (fleet.Labeler). Errors: those of UpdateInstance and UpdateBareMetal
// (fleet.ErrLocked while locked, fleet.ErrNotFound when gone).
func (p *Provider) SetLabel(ctx context.Context, id string, label fleet.Label) error {
	tags := labelTags(label)
	if metal, known := p.isMetal(id); known && metal {
		_, err := p.c.UpdateBareMetal(ctx, id, &BareMetalUpdate{Label: label.String(), Tags: tags})
		return err
	}
	_, err := p.c.UpdateInstance(ctx, id, &InstanceUpdate{Label: label.String(), Tags: tags})
	return err
}

// Start powers a stopped server on (POST /v2/instances/{id}/start or
// /v2/bare-metals/{id}/start, 204), never retried (fleet.Restarter).
func (p *Provider) Start(ctx context.Context, id string) error {
	if err := requireID("instance", id); err != nil {
		return err
	}
	base := "/v2/instances/"
	if metal, known := p.isMetal(id); known && metal {
		base = "/v2/bare-metals/"
	}
	return p.c.do(ctx, http.MethodPost, base+pathEscape(id)+"/start", nil, nil, nil)
}
