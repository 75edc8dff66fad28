package vultr

import (
	"context"
	"iter"
)

// BareMetal is a bare-metal server as GET /v2/bare-metals/{id} returns it
// (under the key "bare_metal"). Unlike Instance, RAM and Disk are strings
// ("2097152 MB", "8x 3576 GB NVMe": see RAMMB and Disks) and MACAddress is an
// integer. Status goes "pending" → "active" (often 40 minutes or more;
// "suspended" also exists). MainIP is "" or "0.0.0.0" until assigned.
type BareMetal struct {
	ID            string   `json:"id"`
	OS            string   `json:"os"`
	RAM           string   `json:"ram"`  // e.g. "2097152 MB"
	Disk          string   `json:"disk"` // e.g. "2x 240 GB SSD"
	MainIP        string   `json:"main_ip"`
	CPUCount      int      `json:"cpu_count"`
	Region        string   `json:"region"`
	Plan          string   `json:"plan"`
	Label         string   `json:"label"`
	Hostname      string   `json:"hostname"`
	Tags          []string `json:"tags"`
	DateCreated   Time     `json:"date_created"`
	Status        string   `json:"status"`       // pending, active, suspended
	PowerStatus   string   `json:"power_status"` // observed, undocumented: "running"
	NetmaskV4     string   `json:"netmask_v4"`
	GatewayV4     string   `json:"gateway_v4"`
	V6Network     string   `json:"v6_network"`
	V6MainIP      string   `json:"v6_main_ip"`
	V6NetworkSize int      `json:"v6_network_size"`
	MACAddress    MAC      `json:"mac_address"` // integer on the wire; 0 until assigned
	OSID          int      `json:"os_id"`
	AppID         int      `json:"app_id"`
	ImageID       string   `json:"image_id"`
	SnapshotID    string   `json:"snapshot_id"`
	Features      []string `json:"features"`
	UserScheme    string   `json:"user_scheme"`
	// InternalIP is undocumented for bare metal: nil when the key is absent
	// (read the address from ListBareMetalVPCs then), "" before a VPC is up.
	InternalIP *string `json:"internal_ip"`
	// DefaultPassword is the root password (create answer); prints redacted.
	DefaultPassword Secret `json:"default_password"`
}

// PublicIP returns the main IPv4 address, false while none is assigned.
func (b *BareMetal) PublicIP() (string, bool) { return assignedIP(b.MainIP) }

// PrivateIP returns the VPC address, false when absent or "".
func (b *BareMetal) PrivateIP() (string, bool) { return optionalIP(b.InternalIP) }

// RAMMB parses RAM into MB.
func (b *BareMetal) RAMMB() (int, error) { return ParseRAM(b.RAM) }

// Disks parses Disk into drive groups.
func (b *BareMetal) Disks() ([]DiskGroup, error) { return ParseDisks(b.Disk) }

// BareMetalCreate is the body of POST /v2/bare-metals. Region and Plan are
// required, and exactly one boot source among OSID, ImageID, SnapshotID and
// AppID (checked before sending: fleet.ErrInvalidRequest).
type BareMetalCreate struct {
	Region     string // region id
	Plan       string // metal plan id, e.g. "vbm-256c-2048gb-8-mi300x-gpu"
	Label      string // free text; find it again with ListBareMetals
	Hostname   string
	Tags       []string
	OSID       int
	ImageID    string // e.g. "docker" (Docker on Ubuntu 22.04)
	SnapshotID string
	AppID      int
	UserData   []byte // raw cloud-init; the client base64-encodes it
	// AttachVPC is sent as "attach_vpc". Neither the spec nor govultr
	// document it for bare metal, but dstack relies on it; attach after the
	// server is active (AttachBareMetalVPC) where it is ignored.
	AttachVPC  []string
	SSHKeyIDs  []string // ids of /v2/ssh-keys
	ScriptID   string
	EnableIPv6 bool
	MdiskMode  string // "none", "jbod" or "raid1"; "" leaves the default
	UserScheme string // "root" or "limited"
}

type bareMetalCreateWire struct {
	Region     string   `json:"region"`
	Plan       string   `json:"plan"`
	Label      string   `json:"label,omitempty"`
	Hostname   string   `json:"hostname,omitempty"`
	Tags       []string `json:"tags,omitempty"`
	OSID       int      `json:"os_id,omitempty"`
	ImageID    string   `json:"image_id,omitempty"`
	SnapshotID string   `json:"snapshot_id,omitempty"`
	AppID      int      `json:"app_id,omitempty"`
	UserData   string   `json:"user_data,omitempty"`
	AttachVPC  []string `json:"attach_vpc,omitempty"`
	SSHKeyIDs  []string `json:"sshkey_id,omitempty"`
	ScriptID   string   `json:"script_id,omitempty"`
	EnableIPv6 bool     `json:"enable_ipv6,omitempty"`
	MdiskMode  string   `json:"mdisk_mode,omitempty"`
	UserScheme string   `json:"user_scheme,omitempty"`
}

func (r *BareMetalCreate) wire() (*bareMetalCreateWire, error) {
	if r == nil || r.Region == "" || r.Plan == "" {
		return nil, invalid("bare-metal create needs a region and a plan")
	}
	if err := oneBootSource(r.OSID, r.ImageID, r.SnapshotID, r.AppID); err != nil {
		return nil, err
	}
	return &bareMetalCreateWire{Region: r.Region, Plan: r.Plan, Label: r.Label, Hostname: r.Hostname,
		Tags: r.Tags, OSID: r.OSID, ImageID: r.ImageID, SnapshotID: r.SnapshotID, AppID: r.AppID,
		UserData: encodeUserData(r.UserData), AttachVPC: r.AttachVPC, SSHKeyIDs: r.SSHKeyIDs,
		ScriptID: r.ScriptID, EnableIPv6: r.EnableIPv6, MdiskMode: r.MdiskMode, UserScheme: r.UserScheme}, nil
}

// BareMetalUpdate is the body of PATCH /v2/bare-metals/{id}: only the fields
// set are sent; Tags nil leaves them, non-nil empty clears them.
type BareMetalUpdate struct {
	Label    string
	Tags     []string
	UserData []byte // raw; base64-encoded by the client
}

type bareMetalUpdateWire struct {
	Label    string    `json:"label,omitempty"`
	Tags     *[]string `json:"tags,omitempty"`
	UserData string    `json:"user_data,omitempty"`
}

// BareMetalListOptions filters GET /v2/bare-metals (the same filters as
// instances, one per request; the API documents only paging for bare metal,
// so a filter it ignores may return more: check the fields you filter on).
type BareMetalListOptions = InstanceListOptions

type bareMetalsPage struct {
	BareMetals *[]BareMetal `json:"bare_metals"`
	Meta       *Meta        `json:"meta"`
}

func (p *bareMetalsPage) items() ([]BareMetal, error) {
	return pageItems(p.BareMetals, "bare_metals", func(v *BareMetal) string { return v.ID })
}

func (p *bareMetalsPage) meta() *Meta { return p.Meta }

// CreateBareMetal deploys a bare-metal server (POST /v2/bare-metals → 202,
// "pending"). Never retried (see CreateInstance). Errors: *APIError with
// fleet.ErrNoCapacity, fleet.ErrInvalidRequest, ...; a *DecodeError means the
// server may exist.
func (c *Client) CreateBareMetal(ctx context.Context, req *BareMetalCreate) (*BareMetal, error) {
	body, err := req.wire()
	if err != nil {
		return nil, err
	}
	return one[BareMetal](ctx, c, "POST", "/v2/bare-metals", body, "bare_metal", true)
}

// GetBareMetal reads one server; a gone one is fleet.ErrNotFound ("Invalid
// server", "Not found.", 404).
func (c *Client) GetBareMetal(ctx context.Context, id string) (*BareMetal, error) {
	if err := requireID("bare-metal", id); err != nil {
		return nil, err
	}
	return one[BareMetal](ctx, c, "GET", "/v2/bare-metals/"+pathEscape(id), nil, "bare_metal", true)
}

// ListBareMetals iterates over GET /v2/bare-metals, all pages; opts may be
// nil and sets at most one filter (two or more: fleet.ErrInvalidRequest,
// nothing sent).
func (c *Client) ListBareMetals(ctx context.Context, opts *BareMetalListOptions) iter.Seq2[BareMetal, error] {
	q, err := opts.query()
	if err != nil {
		return failed[BareMetal](err)
	}
	return list[BareMetal, *bareMetalsPage](ctx, c, "/v2/bare-metals", q)
}

// UpdateBareMetal changes a server (PATCH → 202), never retried; nil result
// when the API answered no body.
func (c *Client) UpdateBareMetal(ctx context.Context, id string, u *BareMetalUpdate) (*BareMetal, error) {
	if err := requireID("bare-metal", id); err != nil {
		return nil, err
	}
	w := &bareMetalUpdateWire{}
	if u != nil {
		w.Label, w.UserData = u.Label, encodeUserData(u.UserData)
		if u.Tags != nil {
			w.Tags = &u.Tags
		}
	}
	return one[BareMetal](ctx, c, "PATCH", "/v2/bare-metals/"+pathEscape(id), w, "bare_metal", false)
}

// DeleteBareMetal destroys a server (DELETE → 204), retried on 429 and
// transient failures; fleet.ErrNotFound means already gone, fleet.ErrLocked
// and fleet.ErrNotActive are returned for the caller to retry later, and
// fleet.ErrDeletePending means an earlier delete was accepted (wait for the
// 404).
func (c *Client) DeleteBareMetal(ctx context.Context, id string) error {
	if err := requireID("bare-metal", id); err != nil {
		return err
	}
	return c.do(ctx, "DELETE", "/v2/bare-metals/"+pathEscape(id), nil, nil, nil)
}
