package vultr

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/gpufleet/gpufleet/fleet"
	"golang.org/x/sync/errgroup"
)

// Images the provider boots (the dstack choices): Cloud GPU plans run Ubuntu
// 22.04 (Docker preinstalled on GPU images); every other plan, bare metal
// included, the "docker" marketplace image (Docker on Ubuntu 22.04).
const (
	CloudGPUOSID  = 1743
	DockerImageID = "docker"
	// TagFleet is the tag every gpufleet resource carries.
	TagFleet = "gpufleet"
	// LoginUser is the user cloud-init installs the keys for.
	LoginUser = "root"
)

// Provider adapts a Client to fleet.Provider and fleet.VPCProvider. Labels
// go into the label field (and the tags), VPC labels into the description.
type Provider struct {
	c       *Client
	regions []string

	mu         sync.Mutex
	metal      map[string]bool            // server id → bare metal, as seen
	members    map[string]string          // server id → the VPC it was asked to join ("" when not known)
	atts       map[string][]VPCAttachment // a server's attachments, once read
	vpcFleet   map[string]string          // VPC id → the fleet its label names (from lists and creates)
	plans      map[string]Plan            // VM plan rows by id; nil until fetched
	metalPlans map[string]MetalPlan       // bare-metal plan rows by id; nil until fetched
}

// ProviderOption configures a Provider.
type ProviderOption func(*Provider)

// WithRegions limits offers to these region ids (default: every region).
func WithRegions(ids ...string) ProviderOption { return func(p *Provider) { p.regions = ids } }

// NewProvider returns the Vultr fleet.Provider over c.
func NewProvider(c *Client, opts ...ProviderOption) *Provider {
	p := &Provider{c: c, metal: map[string]bool{}, members: map[string]string{}, atts: map[string][]VPCAttachment{},
		vpcFleet: map[string]string{}}
	for _, o := range opts {
		o(p)
	}
	return p
}

var (
	_ fleet.Provider    = (*Provider)(nil)
	_ fleet.VPCProvider = (*Provider)(nil)
)

// Name is fleet.ProviderVultr.
func (p *Provider) Name() string { return fleet.ProviderVultr }

// Offers lists one offer per agent-capable plan and region that sells it,
// marked available when the region's availability lists the plan. A plan
// listed without a positive hourly_cost is not offered: its price is
// unknown, and an offer at 0 USD per hour would be chosen first. The plan
// rows are kept to fill the offers of the instances Create, Get and List
// return (see provider_catalog.go).
func (p *Provider) Offers(ctx context.Context) ([]fleet.Offer, error) {
	plans, err := Collect(p.c.ListPlans(ctx, &PlanListOptions{Type: "all"}))
	if err != nil {
		return nil, err
	}
	p.cachePlans(plans)
	metal, err := Collect(p.c.ListMetalPlans(ctx))
	if err != nil {
		return nil, err
	}
	p.cacheMetalPlans(metal)
	avail, err := p.availability(ctx, plans, metal)
	if err != nil {
		return nil, err
	}
	var offers []fleet.Offer
	for _, pl := range plans {
		for _, r := range p.locations(pl.ID, pl.Locations) {
			offers = append(offers, planOffer(pl, r, avail[r][pl.ID]))
		}
	}
	for _, pl := range metal {
		for _, r := range p.locations(pl.ID, pl.Locations) {
			offers = append(offers, metalOffer(pl, r, avail[r][pl.ID]))
		}
	}
	return slices.DeleteFunc(offers, func(o fleet.Offer) bool { return !(o.PricePerHour > 0) }), nil
}

func (p *Provider) locations(plan string, locs []string) []string {
	if !agentCapable(plan) {
		return nil
	}
	if len(p.regions) == 0 {
		return locs
	}
	var out []string
	for _, l := range locs {
		for _, r := range p.regions {
			if l == r {
				out = append(out, l)
			}
		}
	}
	return out
}

// availability asks each region that sells a wanted plan what it can
// deploy now, a few regions at a time.
func (p *Provider) availability(ctx context.Context, plans []Plan, metal []MetalPlan) (map[string]map[string]bool, error) {
	regions := map[string]bool{}
	for _, pl := range plans {
		for _, r := range p.locations(pl.ID, pl.Locations) {
			regions[r] = true
		}
	}
	for _, pl := range metal {
		for _, r := range p.locations(pl.ID, pl.Locations) {
			regions[r] = true
		}
	}
	out := make(map[string]map[string]bool, len(regions))
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for r := range regions {
		g.Go(func() error {
			ids, err := p.c.RegionAvailability(gctx, r, "")
			if err != nil {
				return err
			}
			set := make(map[string]bool, len(ids))
			for _, id := range ids {
				set[id] = true
			}
			mu.Lock()
			out[r] = set
			mu.Unlock()
			return nil
		})
	}
	return out, g.Wait()
}

// Create deploys a server with the label in its label and tags, the SSH
// keys in cloud-config user_data for root, and the VPC attached at create
// when one is asked for. The create call is never retried. An SSH key that is
// not exactly one authorized_keys line (see CheckSSHKey) is refused with
// fleet.ErrInvalidRequest before any call.
func (p *Provider) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	if err := checkSSHKeys(req.SSHKeys); err != nil {
		return fleet.Instance{}, err
	}
	label := req.Label.String()
	tags := labelTags(req.Label)
	userData := CloudConfig(req.SSHKeys)
	host := strings.ReplaceAll(label, ".", "-")
	var vpcs []string
	if req.VPCID != "" {
		vpcs = []string{req.VPCID}
	}
	if req.Offer.BareMetal {
		bm, err := p.c.CreateBareMetal(ctx, &BareMetalCreate{Region: req.Offer.Region, Plan: req.Offer.InstanceType,
			Label: label, Hostname: host, Tags: tags, ImageID: DockerImageID, UserData: userData, AttachVPC: vpcs})
		if err != nil {
			return fleet.Instance{}, err
		}
		p.remember(bm.ID, true)
		if req.VPCID != "" {
			p.markMember(bm.ID, req.VPCID)
		}
		inst := bareMetalInstance(*bm)
		inst.Offer = req.Offer
		p.fillOffer(&inst.Offer)
		return inst, nil
	}
	create := &InstanceCreate{Region: req.Offer.Region, Plan: req.Offer.InstanceType, Label: label, Hostname: host,
		Tags: tags, UserData: userData, AttachVPC: vpcs}
	if strings.HasPrefix(req.Offer.InstanceType, "vcg-") {
		create.OSID = CloudGPUOSID
	} else {
		create.ImageID = DockerImageID
	}
	in, err := p.c.CreateInstance(ctx, create)
	if err != nil {
		return fleet.Instance{}, err
	}
	p.remember(in.ID, false)
	if req.VPCID != "" {
		p.markMember(in.ID, req.VPCID)
	}
	inst := vmInstance(*in)
	inst.Offer = req.Offer
	p.fillOffer(&inst.Offer)
	return inst, nil
}

func (p *Provider) remember(id string, metal bool) {
	p.mu.Lock()
	p.metal[id] = metal
	p.mu.Unlock()
}

func (p *Provider) isMetal(id string) (metal, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	metal, known = p.metal[id]
	return metal, known
}

// Get reads an instance or a bare-metal server; fleet.ErrNotFound when gone.
// Its Offer is filled from the cached plan rows (no plan call is made). A
// running VPC member whose answer has no internal address gets it from its
// VPC attachments (one more call, once).
func (p *Provider) Get(ctx context.Context, id string) (fleet.Instance, error) {
	inst, err := p.get(ctx, id)
	if err != nil {
		return inst, err
	}
	p.fillOffer(&inst.Offer)
	one := []fleet.Instance{inst}
	p.fillPrivateIPs(ctx, one)
	return one[0], nil
}

func (p *Provider) get(ctx context.Context, id string) (fleet.Instance, error) {
	metal, known := p.isMetal(id)
	if !known || !metal {
		in, err := p.c.GetInstance(ctx, id)
		if err == nil {
			return vmInstance(*in), nil
		}
		if known && errors.Is(err, fleet.ErrNotFound) {
			p.forget(id)
		}
		if known || !errors.Is(err, fleet.ErrNotFound) {
			return fleet.Instance{}, err
		}
	}
	bm, err := p.c.GetBareMetal(ctx, id)
	if errors.Is(err, fleet.ErrNotFound) {
		p.forget(id)
	}
	if err != nil {
		return fleet.Instance{}, err
	}
	return bareMetalInstance(*bm), nil
}

// List reads every instance and bare-metal server across all pages (two
// paginated lists, no filter), labels parsed, offers filled from the cached
// plan rows (fetched first when none are cached), private
// addresses as Get fills them.
func (p *Provider) List(ctx context.Context) ([]fleet.Instance, error) {
	return p.list(ctx, true, true)
}

// ListKind lists only VMs (bareMetal false) or only bare metal (true), one
// paged list instead of two (fleet.KindLister); otherwise as List.
func (p *Provider) ListKind(ctx context.Context, bareMetal bool) ([]fleet.Instance, error) {
	return p.list(ctx, !bareMetal, bareMetal)
}

func (p *Provider) list(ctx context.Context, vms, metal bool) ([]fleet.Instance, error) {
	var out []fleet.Instance
	if vms {
		for in, err := range p.c.ListInstances(ctx, nil) {
			if err != nil {
				return nil, err
			}
			p.remember(in.ID, false)
			out = append(out, vmInstance(in))
		}
	}
	if metal {
		for bm, err := range p.c.ListBareMetals(ctx, nil) {
			if err != nil {
				return nil, err
			}
			p.remember(bm.ID, true)
			out = append(out, bareMetalInstance(bm))
		}
	}
	p.loadPlans(ctx, out)
	for i := range out {
		p.fillOffer(&out[i].Offer)
	}
	p.fillPrivateIPs(ctx, out)
	return out, nil
}

// Delete destroys a server. Expect fleet.ErrNotActive while it is pending and
// fleet.ErrLocked for minutes after it becomes active: retry later.
// fleet.ErrDeletePending means an earlier delete was accepted and the server
// is being destroyed: nothing to repeat. The server is gone once Get answers
// fleet.ErrNotFound. opts.Force is ignored:
// Vultr bills whole started hours and has no minimum to force.
func (p *Provider) Delete(ctx context.Context, id string, _ fleet.DeleteOptions) error {
	err := p.delete(ctx, id)
	if errors.Is(err, fleet.ErrNotFound) {
		p.forget(id) // after an accepted delete the kind is kept: the Gets that confirm it need it
	}
	return err
}

func (p *Provider) delete(ctx context.Context, id string) error {
	metal, known := p.isMetal(id)
	if !known || !metal {
		err := p.c.DeleteInstance(ctx, id)
		if known || !errors.Is(err, fleet.ErrNotFound) {
			return err
		}
	}
	return p.c.DeleteBareMetal(ctx, id)
}

// labelTags are the tags a labelled server carries: "gpufleet",
// "gpufleet-<fleet>" and, in label format 2, "gpufleet-owner-<owner>" and
// the label itself (so that a server whose label is edited in the console
// is still known, request id and all).
func labelTags(l fleet.Label) []string {
	tags := []string{TagFleet, TagFleet + "-" + l.Fleet}
	if l.Owner != "" {
		tags = append(tags, TagFleet+"-owner-"+l.Owner, l.String())
	}
	return tags
}
