package vultr

import (
	"context"
	"iter"
)

// VPC is a Vultr VPC (v1) network of /v2/vpcs. V4Subnet and V4SubnetMask
// are the IPv4 network ("10.6.96.0", 20).
type VPC struct {
	ID           string `json:"id"` // UUID (legacy ids look like "net539626f0798d7")
	Region       string `json:"region"`
	Description  string `json:"description"`
	V4Subnet     string `json:"v4_subnet"`
	V4SubnetMask int    `json:"v4_subnet_mask"` // prefix length
	DateCreated  Time   `json:"date_created"`
}

// VPCCreate is the body of POST /v2/vpcs. Region is required; V4Subnet and
// V4SubnetMask go together (RFC 1918), or both empty for an auto-assigned
// subnet.
type VPCCreate struct {
	Region       string
	Description  string // free text; several VPCs may share one
	V4Subnet     string // e.g. "10.99.0.0"; "" to let Vultr choose
	V4SubnetMask int    // e.g. 24; 0 to let Vultr choose
}

type vpcCreateWire struct {
	Region       string `json:"region"`
	Description  string `json:"description,omitempty"`
	V4Subnet     string `json:"v4_subnet,omitempty"`
	V4SubnetMask int    `json:"v4_subnet_mask,omitempty"`
}

// VPCAttachment is one VPC of a server, from GET /v2/instances/{id}/vpcs or
// /v2/bare-metals/{id}/vpcs. MACAddress is colon-hex text here.
type VPCAttachment struct {
	ID         string `json:"id"` // the VPC id
	MACAddress string `json:"mac_address"`
	IPAddress  string `json:"ip_address"` // the server's address in the VPC
}

type vpcsPage struct {
	VPCs *[]VPC `json:"vpcs"`
	Meta *Meta  `json:"meta"`
}

func (p *vpcsPage) items() ([]VPC, error) {
	return pageItems(p.VPCs, "vpcs", func(v *VPC) string { return v.ID })
}

func (p *vpcsPage) meta() *Meta { return p.Meta }

type attachmentsPage struct {
	VPCs *[]VPCAttachment `json:"vpcs"`
	Meta *Meta            `json:"meta"`
}

func (p *attachmentsPage) items() ([]VPCAttachment, error) {
	return pageItems(p.VPCs, "vpcs", func(v *VPCAttachment) string { return v.ID })
}

func (p *attachmentsPage) meta() *Meta { return p.Meta }

// CreateVPC creates a VPC (POST /v2/vpcs → 201), never retried.
func (c *Client) CreateVPC(ctx context.Context, req *VPCCreate) (*VPC, error) {
	if req == nil || req.Region == "" {
		return nil, invalid("VPC create needs a region")
	}
	if (req.V4Subnet == "") != (req.V4SubnetMask == 0) {
		return nil, invalid("VPC v4_subnet and v4_subnet_mask go together")
	}
	body := &vpcCreateWire{Region: req.Region, Description: req.Description,
		V4Subnet: req.V4Subnet, V4SubnetMask: req.V4SubnetMask}
	return one[VPC](ctx, c, "POST", "/v2/vpcs", body, "vpc", true)
}

// GetVPC reads one VPC; an unknown id is fleet.ErrNotFound ("Invalid VPC ID").
func (c *Client) GetVPC(ctx context.Context, id string) (*VPC, error) {
	if err := requireID("VPC", id); err != nil {
		return nil, err
	}
	return one[VPC](ctx, c, "GET", "/v2/vpcs/"+pathEscape(id), nil, "vpc", true)
}

// ListVPCs iterates over GET /v2/vpcs, all pages.
func (c *Client) ListVPCs(ctx context.Context) iter.Seq2[VPC, error] {
	return list[VPC, *vpcsPage](ctx, c, "/v2/vpcs", nil)
}

// UpdateVPC sets a VPC's description (PUT /v2/vpcs/{id} → 204), never retried.
func (c *Client) UpdateVPC(ctx context.Context, id, description string) error {
	if err := requireID("VPC", id); err != nil {
		return err
	}
	body := map[string]string{"description": description}
	return c.do(ctx, "PUT", "/v2/vpcs/"+pathEscape(id), nil, body, nil)
}

// DeleteVPC deletes a VPC (DELETE → 204), retried on 429 and transient
// failures. While any server is attached (including for a while after the
// server is deleted) it fails with fleet.ErrVPCInUse: retry later.
// fleet.ErrNotFound means already gone.
func (c *Client) DeleteVPC(ctx context.Context, id string) error {
	if err := requireID("VPC", id); err != nil {
		return err
	}
	return c.do(ctx, "DELETE", "/v2/vpcs/"+pathEscape(id), nil, nil, nil)
}

// ListInstanceVPCs iterates over the VPCs attached to a VM (GET
// /v2/instances/{id}/vpcs). A gone VM is fleet.ErrNotFound ("Invalid
// instance-id").
func (c *Client) ListInstanceVPCs(ctx context.Context, instanceID string) iter.Seq2[VPCAttachment, error] {
	return c.serverVPCs(ctx, "instance", "/v2/instances/", instanceID)
}

// AttachInstanceVPC attaches a VPC to a VM (POST …/vpcs/attach → 204), never
// retried. Errors: fleet.ErrAttachFailed (intermittent "Unable to attach
// VPC": confirm with ListInstanceVPCs, then retry), fleet.ErrVPCUnsupported,
// fleet.ErrLocked, fleet.ErrNotFound, fleet.ErrAlreadyAttached (400 "The VPC
// network is already attached to this server": the server is in the VPC). A 204 does not mean the attachment is
// visible yet: confirm with ListInstanceVPCs.
func (c *Client) AttachInstanceVPC(ctx context.Context, instanceID, vpcID string) error {
	return c.serverVPCAction(ctx, "instance", "/v2/instances/", instanceID, "attach", vpcID)
}

// DetachInstanceVPC detaches a VPC from a VM (POST …/vpcs/detach → 204),
// never retried.
func (c *Client) DetachInstanceVPC(ctx context.Context, instanceID, vpcID string) error {
	return c.serverVPCAction(ctx, "instance", "/v2/instances/", instanceID, "detach", vpcID)
}

// ListBareMetalVPCs iterates over the VPCs of a bare-metal server (GET
// /v2/bare-metals/{id}/vpcs; the API sends no meta, so one page).
func (c *Client) ListBareMetalVPCs(ctx context.Context, id string) iter.Seq2[VPCAttachment, error] {
	return c.serverVPCs(ctx, "bare-metal", "/v2/bare-metals/", id)
}

// AttachBareMetalVPC attaches a VPC to a bare-metal server, never retried;
// errors as AttachInstanceVPC (plans like vbm-4c-32gb answer
// fleet.ErrVPCUnsupported).
func (c *Client) AttachBareMetalVPC(ctx context.Context, id, vpcID string) error {
	return c.serverVPCAction(ctx, "bare-metal", "/v2/bare-metals/", id, "attach", vpcID)
}

// DetachBareMetalVPC detaches a VPC from a bare-metal server, never retried.
func (c *Client) DetachBareMetalVPC(ctx context.Context, id, vpcID string) error {
	return c.serverVPCAction(ctx, "bare-metal", "/v2/bare-metals/", id, "detach", vpcID)
}

func (c *Client) serverVPCs(ctx context.Context, kind, prefix, id string) iter.Seq2[VPCAttachment, error] {
	if err := requireID(kind, id); err != nil {
		return failed[VPCAttachment](err)
	}
	return list[VPCAttachment, *attachmentsPage](ctx, c, prefix+pathEscape(id)+"/vpcs", nil)
}

func (c *Client) serverVPCAction(ctx context.Context, kind, prefix, id, action, vpcID string) error {
	if err := requireID(kind, id); err != nil {
		return err
	}
	if err := requireID("VPC", vpcID); err != nil {
		return err
	}
	body := map[string]string{"vpc_id": vpcID}
	return c.do(ctx, "POST", prefix+pathEscape(id)+"/vpcs/"+action, nil, body, nil)
}
