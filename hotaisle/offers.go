package hotaisle

import (
	"context"
)

// VMType is one row of GET /teams/{team}/virtual_machines/available/
// (swagger AvailableVirtualMachineTypes). Its JSON keys are PascalCase. A row
// has no id: its Specs are its identity, and posting them back verbatim
// (ProvisionVM with VMProvisionRequest{VMSpecs: row.Specs}) asks for it.
type VMType struct {
	// Quantity is how many VMs of this type can be provisioned now; rows with
	// 0 are listed too.
	Quantity int64 `json:"Quantity"`
	// MinimumReservationMinutes is the minimum billed time (e.g. 30 for 1x
	// MI300X, 60 for larger); a DELETE before it needs force and does not
	// refund the minimum.
	MinimumReservationMinutes int64 `json:"MinimumReservationMinutes"`
	// OnDemandPrice is the price in US CENTS PER HOUR for the whole VM (not
	// per GPU): 299 = $2.99/h. Optional in the API: 0 means not given.
	OnDemandPrice int64 `json:"OnDemandPrice"`
	// Specs is the hardware; capacities in bytes.
	Specs VMSpecs `json:"Specs"`
}

// BareMetalType is one row of GET /teams/{team}/bare_metal/available/
// (swagger AvailableBareMetalTypes), PascalCase keys like VMType.
type BareMetalType struct {
	// Quantity is how many servers of this type can be reserved now.
	Quantity int64 `json:"Quantity"`
	// MinimumReservationMinutes is the minimum billed time (480: reserving
	// "submits 8-hour minimum usage").
	MinimumReservationMinutes int64 `json:"MinimumReservationMinutes"`
	// OnDemandPrice is the price in US CENTS PER HOUR for the whole server
	// (2712 = $27.12/h for 8x MI300X). 0 means not given.
	OnDemandPrice int64 `json:"OnDemandPrice"`
	// Specs is the hardware; capacities in bytes.
	Specs BareMetalSpecs `json:"Specs"`
}

// ListVMTypes returns the VM types the team can provision: GET
// /teams/{team}/virtual_machines/available/. Retried on 429 and 5xx
// gateway errors. Errors: *APIError (fleet.ErrUnauthorized,
// fleet.ErrForbidden, fleet.ErrNotFound for an unknown team, ...).
func (c *Client) ListVMTypes(ctx context.Context) ([]VMType, error) {
	p, err := c.teamPath("virtual_machines", "available")
	if err != nil {
		return nil, err
	}
	return list[VMType](ctx, c, p, "", nil)
}

// ListBareMetalTypes returns the bare-metal types the team can reserve: GET
// /teams/{team}/bare_metal/available/. Errors as ListVMTypes.
func (c *Client) ListBareMetalTypes(ctx context.Context) ([]BareMetalType, error) {
	p, err := c.teamPath("bare_metal", "available")
	if err != nil {
		return nil, err
	}
	return list[BareMetalType](ctx, c, p, "", nil)
}
