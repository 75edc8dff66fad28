package vultr

import (
	"context"
	"encoding/base64"
	"iter"
	"net/url"
	"strings"
)

// Instance is a VM (CPU or Cloud GPU) as GET /v2/instances/{id} returns it.
// RAM in MB, Disk in GB (0 while pending), AllowedBandwidth in GB per month.
//
// Status goes "pending" → "active" ("suspended", "resizing" also exist);
// ServerStatus "none" → "installingbooting" → "ok", with "locked" around
// deploy and destroy (the lock is not always visible: a DELETE can fail with
// fleet.ErrLocked while ServerStatus says "ok"). MainIP is "0.0.0.0" until an
// address is assigned: use PublicIP.
type Instance struct {
	ID               string   `json:"id"` // UUID
	OS               string   `json:"os"`
	RAM              int      `json:"ram"`  // MB
	Disk             int      `json:"disk"` // GB
	MainIP           string   `json:"main_ip"`
	VCPUCount        int      `json:"vcpu_count"`
	Region           string   `json:"region"`
	Plan             string   `json:"plan"`
	Label            string   `json:"label"`
	Hostname         string   `json:"hostname"`
	Tags             []string `json:"tags"`
	OSID             int      `json:"os_id"`
	AppID            int      `json:"app_id"`
	ImageID          string   `json:"image_id"`
	SnapshotID       string   `json:"snapshot_id"`
	FirewallGroupID  string   `json:"firewall_group_id"`
	Features         []string `json:"features"` // "auto_backups", "ipv6", "ddos_protection"
	DateCreated      Time     `json:"date_created"`
	Status           string   `json:"status"`        // pending, active, suspended, resizing
	PowerStatus      string   `json:"power_status"`  // running, stopped
	ServerStatus     string   `json:"server_status"` // none, locked, installingbooting, ok
	AllowedBandwidth int      `json:"allowed_bandwidth"`
	NetmaskV4        string   `json:"netmask_v4"`
	GatewayV4        string   `json:"gateway_v4"`
	V6Network        string   `json:"v6_network"`
	V6MainIP         string   `json:"v6_main_ip"`
	V6NetworkSize    int      `json:"v6_network_size"`
	// InternalIP is the VPC address: "" until a VPC is attached and the
	// server active; nil when the answer had no "internal_ip" key at all.
	InternalIP *string `json:"internal_ip"`
	KVM        string  `json:"kvm"` // noVNC console URL
	// DefaultPassword is the root password, only in the create answer (and
	// for ten minutes after deploy); it prints as "[redacted]".
	DefaultPassword Secret `json:"default_password"`
	UserScheme      string `json:"user_scheme"` // "root" or "limited"
	VPCOnly         bool   `json:"vpc_only"`
}

// PublicIP returns the main IPv4 address, false while none is assigned
// ("", "0.0.0.0").
func (i *Instance) PublicIP() (string, bool) { return assignedIP(i.MainIP) }

// PrivateIP returns the VPC address, false when absent or "".
func (i *Instance) PrivateIP() (string, bool) { return optionalIP(i.InternalIP) }

// InstanceCreate is the body of POST /v2/instances. Region and Plan are
// required, and exactly one boot source among OSID, ImageID, SnapshotID and
// AppID (checked before sending: fleet.ErrInvalidRequest).
type InstanceCreate struct {
	Region          string   // region id, e.g. "ewr"
	Plan            string   // plan id, e.g. "vcg-a100-3c-30g-20vram"
	Label           string   // free text (≤ 64 characters is safe); find it again with ListInstances
	Hostname        string   // defaults to the label on the API side
	Tags            []string // free-form tags; filter with InstanceListOptions.Tag
	OSID            int      // e.g. 1743 (Ubuntu 22.04)
	ImageID         string   // marketplace image, e.g. "docker"
	SnapshotID      string
	AppID           int
	UserData        []byte   // raw cloud-init; the client base64-encodes it
	AttachVPC       []string // VPC ids to attach at create (precedence over EnableVPC)
	EnableVPC       bool     // attach the region's VPC, creating one if none exists
	SSHKeyIDs       []string // ids of /v2/ssh-keys
	ScriptID        string
	FirewallGroupID string
	EnableIPv6      bool
	Backups         string // "enabled" or "disabled"; "" leaves the default
	UserScheme      string // "root" or "limited"; "" leaves the default
}

type instanceCreateWire struct {
	Region          string   `json:"region"`
	Plan            string   `json:"plan"`
	Label           string   `json:"label,omitempty"`
	Hostname        string   `json:"hostname,omitempty"`
	Tags            []string `json:"tags,omitempty"`
	OSID            int      `json:"os_id,omitempty"`
	ImageID         string   `json:"image_id,omitempty"`
	SnapshotID      string   `json:"snapshot_id,omitempty"`
	AppID           int      `json:"app_id,omitempty"`
	UserData        string   `json:"user_data,omitempty"`
	AttachVPC       []string `json:"attach_vpc,omitempty"`
	EnableVPC       bool     `json:"enable_vpc,omitempty"`
	SSHKeyIDs       []string `json:"sshkey_id,omitempty"`
	ScriptID        string   `json:"script_id,omitempty"`
	FirewallGroupID string   `json:"firewall_group_id,omitempty"`
	EnableIPv6      bool     `json:"enable_ipv6,omitempty"`
	Backups         string   `json:"backups,omitempty"`
	UserScheme      string   `json:"user_scheme,omitempty"`
}

func (r *InstanceCreate) wire() (*instanceCreateWire, error) {
	if r == nil || r.Region == "" || r.Plan == "" {
		return nil, invalid("instance create needs a region and a plan")
	}
	if err := oneBootSource(r.OSID, r.ImageID, r.SnapshotID, r.AppID); err != nil {
		return nil, err
	}
	return &instanceCreateWire{Region: r.Region, Plan: r.Plan, Label: r.Label, Hostname: r.Hostname,
		Tags: r.Tags, OSID: r.OSID, ImageID: r.ImageID, SnapshotID: r.SnapshotID, AppID: r.AppID,
		UserData: encodeUserData(r.UserData), AttachVPC: r.AttachVPC, EnableVPC: r.EnableVPC,
		SSHKeyIDs: r.SSHKeyIDs, ScriptID: r.ScriptID, FirewallGroupID: r.FirewallGroupID,
		EnableIPv6: r.EnableIPv6, Backups: r.Backups, UserScheme: r.UserScheme}, nil
}

// InstanceUpdate is the body of PATCH /v2/instances/{id}: only the fields
// set are sent. Tags nil leaves the tags alone; a non-nil empty slice clears
// them.
type InstanceUpdate struct {
	Label           string
	Tags            []string
	Plan            string   // resize to this plan
	AttachVPC       []string // VPC ids to attach
	DetachVPC       []string // VPC ids to detach
	UserData        []byte   // raw; base64-encoded by the client
	FirewallGroupID string
}

type instanceUpdateWire struct {
	Label           string    `json:"label,omitempty"`
	Tags            *[]string `json:"tags,omitempty"`
	Plan            string    `json:"plan,omitempty"`
	AttachVPC       []string  `json:"attach_vpc,omitempty"`
	DetachVPC       []string  `json:"detach_vpc,omitempty"`
	UserData        string    `json:"user_data,omitempty"`
	FirewallGroupID string    `json:"firewall_group_id,omitempty"`
}

func (u *InstanceUpdate) wire() *instanceUpdateWire {
	w := &instanceUpdateWire{Label: u.Label, Plan: u.Plan, AttachVPC: u.AttachVPC,
		DetachVPC: u.DetachVPC, UserData: encodeUserData(u.UserData), FirewallGroupID: u.FirewallGroupID}
	if u.Tags != nil {
		w.Tags = &u.Tags
	}
	return w
}

// InstanceListOptions filters GET /v2/instances; empty fields are not sent.
// The API takes ONE filter per request (it answers 400 to two): set at most
// one field, or the list yields a fleet.ErrInvalidRequest before any call.
// To combine filters, filter by one and check the others on the results.
type InstanceListOptions struct {
	Label  string // exact label
	Tag    string // one tag
	Region string // region id
	MainIP string // main IPv4 address
}

// query returns the filter as a query, or an error when more than one
// field is set.
func (o *InstanceListOptions) query() (url.Values, error) {
	q := url.Values{}
	if o == nil {
		return q, nil
	}
	var set []string
	for _, f := range [...]struct{ key, value string }{
		{"label", o.Label}, {"tag", o.Tag}, {"region", o.Region}, {"main_ip", o.MainIP}} {
		if f.value != "" {
			q.Set(f.key, f.value)
			set = append(set, f.key)
		}
	}
	if len(set) > 1 {
		return nil, invalid("a Vultr list takes one filter per request, got %s", strings.Join(set, " and "))
	}
	return q, nil
}

// failed is an iterator that yields err once.
func failed[T any](err error) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		yield(zero, err)
	}
}

type instancesPage struct {
	Instances *[]Instance `json:"instances"`
	Meta      *Meta       `json:"meta"`
}

func (p *instancesPage) items() ([]Instance, error) {
	return pageItems(p.Instances, "instances", func(v *Instance) string { return v.ID })
}

func (p *instancesPage) meta() *Meta { return p.Meta }

// CreateInstance deploys a VM (POST /v2/instances → 202, status "pending").
// It is never retried: after a transport error, a 5xx or an answer without
// the instance (a *DecodeError) the server may exist anyway, so look it
// up by label before creating again. Errors: a *APIError
// (fleet.ErrNoCapacity when sold out, fleet.ErrInvalidRequest for
// "Invalid plan chosen." such as a vbm-* plan), or a local
// fleet.ErrInvalidRequest when req is incomplete.
func (c *Client) CreateInstance(ctx context.Context, req *InstanceCreate) (*Instance, error) {
	body, err := req.wire()
	if err != nil {
		return nil, err
	}
	return one[Instance](ctx, c, "POST", "/v2/instances", body, "instance", true)
}

// GetInstance reads one VM. A gone VM is fleet.ErrNotFound ("Invalid
// instance ID", 404); one being destroyed may answer fleet.ErrDeletePending.
func (c *Client) GetInstance(ctx context.Context, id string) (*Instance, error) {
	if err := requireID("instance", id); err != nil {
		return nil, err
	}
	return one[Instance](ctx, c, "GET", "/v2/instances/"+pathEscape(id), nil, "instance", true)
}

// ListInstances iterates over GET /v2/instances, all pages; opts may be nil
// and sets at most one filter (two or more: fleet.ErrInvalidRequest, nothing
// sent).
func (c *Client) ListInstances(ctx context.Context, opts *InstanceListOptions) iter.Seq2[Instance, error] {
	q, err := opts.query()
	if err != nil {
		return failed[Instance](err)
	}
	return list[Instance, *instancesPage](ctx, c, "/v2/instances", q)
}

// UpdateInstance changes a VM (PATCH /v2/instances/{id} → 202), never
// retried. It returns the updated VM, or nil if the API answered no body.
// A locked server is fleet.ErrLocked.
func (c *Client) UpdateInstance(ctx context.Context, id string, u *InstanceUpdate) (*Instance, error) {
	if err := requireID("instance", id); err != nil {
		return nil, err
	}
	if u == nil {
		u = &InstanceUpdate{}
	}
	return one[Instance](ctx, c, "PATCH", "/v2/instances/"+pathEscape(id), u.wire(), "instance", false)
}

// DeleteInstance destroys a VM (DELETE /v2/instances/{id} → 204); retried on
// 429 and transient failures. Domain refusals are returned, not retried:
// fleet.ErrNotActive while pending, fleet.ErrLocked for minutes after it
// became active. fleet.ErrDeletePending ("Server is already pending
// destruction") means an earlier delete was accepted: wait for
// fleet.ErrNotFound, which means already gone (also when a retried attempt
// follows one whose answer was lost).
func (c *Client) DeleteInstance(ctx context.Context, id string) error {
	if err := requireID("instance", id); err != nil {
		return err
	}
	return c.do(ctx, "DELETE", "/v2/instances/"+pathEscape(id), nil, nil, nil)
}

// encodeUserData base64-encodes raw user data ("" when empty).
func encodeUserData(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return base64.StdEncoding.EncodeToString(b)
}

// oneBootSource checks that exactly one boot source is set.
func oneBootSource(osID int, imageID, snapshotID string, appID int) error {
	n := 0
	for _, set := range []bool{osID != 0, imageID != "", snapshotID != "", appID != 0} {
		if set {
			n++
		}
	}
	if n != 1 {
		return invalid("exactly one of os_id, image_id, snapshot_id, app_id is required (got %d)", n)
	}
	return nil
}
