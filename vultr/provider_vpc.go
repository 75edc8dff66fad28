package vultr

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gpufleet/gpufleet/fleet"
)

// Server statuses of the API.
const (
	StatusPending = "pending"
	StatusActive  = "active"
)

// labelled sets the instance's fleet, owner and request id from its label.
// When the label is not gpufleet's (edited or removed in the console), the
// tags written at create (labelTags) still say who it is: the label tag
// gives all three, and the older owner and fleet tags (servers created
// before the label tag) give the owner and the fleet when they can be read
// one way only. Either way LabelError says the label must be written again.
func labelled(inst *fleet.Instance, label string, tags []string) {
	if l, ok := fleet.ParseLabel(label); ok {
		inst.Fleet, inst.Owner, inst.RequestID = l.Fleet, l.Owner, l.RequestID
		return
	}
	for _, t := range tags {
		if l, ok := fleet.ParseLabel(t); ok && l.Owner != "" {
			inst.Fleet, inst.Owner, inst.RequestID = l.Fleet, l.Owner, l.RequestID
			inst.LabelError = labelFromTags
			return
		}
	}
	if owner, name, ok := ownerAndFleetTags(tags); ok {
		inst.Fleet, inst.Owner = name, owner
		inst.LabelError = labelFromTags
	}
}

// labelFromTags is the LabelError of a server known by its tags only.
const labelFromTags = "the label is not gpufleet's (edited out of band); identified by its tags"

// ownerAndFleetTags reads "gpufleet-owner-<owner>" and "gpufleet-<fleet>"
// tags. A fleet name may itself start with "owner-", so every owner tag is
// tried as the owner, the other tags as the fleet; the reading is taken
// only when exactly one owner leaves exactly one fleet.
func ownerAndFleetTags(tags []string) (owner, name string, ok bool) {
	var owners, names []string
	for _, t := range tags {
		if n, found := strings.CutPrefix(t, TagFleet+"-"); found && n != "" {
			names = append(names, n)
			if o, isOwner := strings.CutPrefix(n, "owner-"); isOwner && fleet.ValidateOwner(o) == nil {
				owners = append(owners, o)
			}
		}
	}
	readings := 0
	for _, o := range owners {
		var rest []string
		for _, n := range names {
			if n != "owner-"+o && fleet.ValidateFleetName(n) == nil {
				rest = append(rest, n)
			}
		}
		if len(rest) == 1 {
			owner, name = o, rest[0]
			readings++
		}
	}
	return owner, name, readings == 1
}

// vmInstance: running once status is active with an address; the provider
// status reads "status/server_status" ("active/installingbooting").
func vmInstance(in Instance) fleet.Instance {
	inst := fleet.Instance{ID: in.ID, Provider: fleet.ProviderVultr, Created: in.DateCreated.Time,
		ProviderStatus: in.Status + "/" + in.ServerStatus, Status: fleet.StatusProvisioning,
		Offer: fleet.Offer{Provider: fleet.ProviderVultr, Region: in.Region, InstanceType: in.Plan,
			VCPUs: in.VCPUCount, MemoryGiB: float64(in.RAM) / 1024, DiskGiB: float64(in.Disk), CPUArch: "x86",
			ProvisionTimeout: VMProvisionTimeout, TypicalBoot: VMTypicalBoot}}
	if ip, ok := in.PublicIP(); ok {
		inst.PublicIP = ip
		inst.SSH = fleet.SSHEndpoint{User: LoginUser, Host: ip, Port: 22}
		if in.Status == StatusActive {
			inst.Status = fleet.StatusBooting
		}
	}
	if ip, ok := in.PrivateIP(); ok {
		inst.PrivateIP = ip
	}
	inst.Stopped = in.PowerStatus == "stopped"
	labelled(&inst, in.Label, in.Tags)
	return inst
}

func bareMetalInstance(bm BareMetal) fleet.Instance {
	inst := fleet.Instance{ID: bm.ID, Provider: fleet.ProviderVultr, Created: bm.DateCreated.Time,
		ProviderStatus: bm.Status, Status: fleet.StatusProvisioning,
		Offer: fleet.Offer{Provider: fleet.ProviderVultr, Region: bm.Region, InstanceType: bm.Plan, BareMetal: true,
			VCPUs: bm.CPUCount, CPUArch: "x86", ProvisionTimeout: BareMetalProvisionTimeout, TypicalBoot: BareMetalTypicalBoot}}
	if mb, err := bm.RAMMB(); err == nil {
		inst.Offer.MemoryGiB = float64(mb) / 1024
	}
	if ip, ok := bm.PublicIP(); ok {
		inst.PublicIP = ip
		inst.SSH = fleet.SSHEndpoint{User: LoginUser, Host: ip, Port: 22}
		if bm.Status == StatusActive {
			inst.Status = fleet.StatusBooting
		}
	}
	if ip, ok := bm.PrivateIP(); ok {
		inst.PrivateIP = ip
	}
	inst.Stopped = bm.PowerStatus == "stopped"
	labelled(&inst, bm.Label, bm.Tags)
	return inst
}

// CreateVPC creates a VPC in region with the label as its description and a
// subnet Vultr chooses.
func (p *Provider) CreateVPC(ctx context.Context, region string, label fleet.Label) (fleet.VPC, error) {
	v, err := p.c.CreateVPC(ctx, &VPCCreate{Region: region, Description: label.String()})
	if err != nil {
		return fleet.VPC{}, err
	}
	out := neutralVPC(*v)
	p.noteVPCs(out)
	return out, nil
}

func neutralVPC(v VPC) fleet.VPC {
	out := fleet.VPC{ID: v.ID, Provider: fleet.ProviderVultr, Region: v.Region, Created: v.DateCreated.Time,
		Subnet: fmt.Sprintf("%s/%d", v.V4Subnet, v.V4SubnetMask)}
	if l, ok := fleet.ParseLabel(v.Description); ok {
		out.Fleet, out.Owner, out.RequestID = l.Fleet, l.Owner, l.RequestID
	}
	return out
}

// AttachVPC attaches an instance or bare-metal server to a VPC, once: the
// caller confirms with InstanceVPCs and retries fleet.ErrAttachFailed and
// fleet.ErrLocked; fleet.ErrVPCUnsupported is final for the plan. A server
// already in the VPC (Vultr answers 400 "The VPC network is already
// attached to this server", for example after an attach that took effect
// but answered 500) is a success: the call is idempotent.
func (p *Provider) AttachVPC(ctx context.Context, id, vpcID string) error {
	var err error
	if metal, _ := p.isMetal(id); metal {
		err = p.c.AttachBareMetalVPC(ctx, id, vpcID)
	} else {
		err = p.c.AttachInstanceVPC(ctx, id, vpcID)
	}
	if errors.Is(err, fleet.ErrAlreadyAttached) {
		err = nil
	}
	if err == nil {
		p.markMember(id, vpcID)
	}
	return err
}

// InstanceVPCs lists the VPC ids a server is attached to (and records the
// server's VPC address for Get and List).
func (p *Provider) InstanceVPCs(ctx context.Context, id string) ([]string, error) {
	metal, _ := p.isMetal(id)
	atts, err := p.attachments(ctx, id, metal)
	if err != nil {
		return nil, err
	}
	p.learn(id, atts)
	ids := make([]string, 0, len(atts))
	for _, a := range atts {
		ids = append(ids, a.ID)
	}
	return ids, nil
}

// ListVPCs lists every VPC of the account, labels parsed.
func (p *Provider) ListVPCs(ctx context.Context) ([]fleet.VPC, error) {
	var out []fleet.VPC
	for v, err := range p.c.ListVPCs(ctx) {
		if err != nil {
			return nil, err
		}
		out = append(out, neutralVPC(v))
	}
	p.noteVPCs(out...)
	return out, nil
}

// DeleteVPC deletes a VPC: fleet.ErrVPCInUse while servers are attached (an
// attachment lingers about a minute after its server is destroyed),
// fleet.ErrNotFound when already gone.
func (p *Provider) DeleteVPC(ctx context.Context, id string) error { return p.c.DeleteVPC(ctx, id) }
