package hotaisle

import (
	"context"
	"errors"
	"sync"

	"github.com/gpufleet/gpufleet/fleet"
)

// LoginUser is the login user Hot Aisle installs the team's keys for.
const LoginUser = "hotaisle"

// Provider adapts a Client to fleet.Provider: VMs always, bare metal only when
// opted in (it is prepaid for 8 hours). Labels go into the description.
type Provider struct {
	c         *Client
	bareMetal bool

	mu      sync.Mutex
	kinds   map[string]bool        // name → bare metal, as seen
	offers  map[string]fleet.Offer // instance type → offer last built
	loaded  map[string]bool        // "vm", "bm": types listed at least once
	claimed map[string]bool        // VMs created here and not labelled yet
	seen    map[string]bool        // VM names of the latest list and own creates since; nil before any list

	listMu sync.Mutex // serialises the first list of ensureSeen
	// createSlot lets one VM provision run at a time (a channel, so that a
	// wait is durably blocked in a testing/synctest bubble): two provisions
	// of one spec that both fail after committing would leave two
	// candidates a recovery cannot tell apart.
	createSlot chan struct{}
}

// ProviderOption configures a Provider.
type ProviderOption func(*Provider)

// WithBareMetal offers bare-metal servers too (default false: a reservation
// charges 8 hours at once).
func WithBareMetal(on bool) ProviderOption { return func(p *Provider) { p.bareMetal = on } }

// NewProvider returns the Hot Aisle fleet.Provider over c.
func NewProvider(c *Client, opts ...ProviderOption) *Provider {
	p := &Provider{c: c, kinds: map[string]bool{}, offers: map[string]fleet.Offer{},
		loaded: map[string]bool{}, claimed: map[string]bool{}, createSlot: make(chan struct{}, 1)}
	for _, o := range opts {
		o(p)
	}
	return p
}

var _ fleet.Provider = (*Provider)(nil)

// Name is fleet.ProviderHotAisle.
func (p *Provider) Name() string { return fleet.ProviderHotAisle }

// Offers lists the VM types (and bare-metal types when opted in), one offer
// per instance type ("vm-mi300x-1", "bm-mi300x-8"), in region Region. The
// offers are kept by instance type: the instances returned later get their
// price and minimum reservation from them (the API's VM and server objects
// carry neither).
func (p *Provider) Offers(ctx context.Context) ([]fleet.Offer, error) {
	vms, err := p.c.ListVMTypes(ctx)
	if err != nil {
		return nil, err
	}
	offers := vmOffers(vms)
	p.cacheOffers("vm", offers)
	if p.bareMetal {
		bms, err := p.c.ListBareMetalTypes(ctx)
		if err != nil {
			return nil, err
		}
		bmOffers := bareMetalOffers(bms)
		p.cacheOffers("bm", bmOffers)
		offers = append(offers, bmOffers...)
	}
	return offers, nil
}

// Create registers the SSH keys on the account with the request's label as
// their comment (409 means already there: the key keeps its comment),
// then provisions a VM and writes the label into its description with a
// PATCH (the VM request has no description field), or reserves a bare-metal
// server with the label in the request. The create call itself is never
// retried. A VM provision that fails ambiguously (5xx, timeout) after
// creating the VM is recovered by comparing the team's VMs with the names
// this Provider has seen; no list is made before a provision
// except the very first one of a Provider that never listed. A VM whose label
// could not be written is still returned, with LabelError saying why: the
// Manager tracks it by name and writes the label again later. The instance
// returned always has an ID. Errors: those of ProvisionVM and
// ReserveBareMetal; those of AddSSHKey, wrapping fleet.ErrNotSent (the key
// is registered before the provision, which is then not sent);
// fleet.ErrInvalidRequest for a bare-metal offer without
// WithBareMetal or an offer of another provider.
func (p *Provider) Create(ctx context.Context, req fleet.CreateRequest) (fleet.Instance, error) {
	for _, k := range req.SSHKeys {
		if _, _, err := p.c.AddSSHKey(ctx, labelledKey(k, req.Label)); err != nil {
			// POST /user/ssh_keys/ in its text says which call; no provision was sent.
			return fleet.Instance{}, notSent(err)
		}
	}
	switch specs := req.Offer.ProviderData.(type) {
	case VMSpecs:
		return p.createVM(ctx, req, specs)
	case BareMetalSpecs:
		if !p.bareMetal {
			return fleet.Instance{}, invalid("bare metal is not enabled (WithBareMetal)")
		}
		bm, err := p.c.ReserveBareMetal(ctx, BareMetalReservation{Description: req.Label.String(), Specs: specs})
		if err != nil {
			return fleet.Instance{}, err
		}
		p.remember(bm.Name, true)
		inst := p.bareMetalInstance(*bm)
		inst.Offer = req.Offer
		p.fillOffer(&inst.Offer)
		return inst, nil
	default:
		return fleet.Instance{}, invalid("offer %s did not come from this provider", req.Offer.InstanceType)
	}
}

func (p *Provider) remember(name string, bareMetal bool) {
	p.mu.Lock()
	p.kinds[name] = bareMetal
	p.mu.Unlock()
}

// kind reports what a name is, if known.
func (p *Provider) kind(name string) (bareMetal, known bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	bareMetal, known = p.kinds[name]
	return bareMetal, known
}

// Get reads a VM with its state (GET of the VM, then of its state/), or a
// bare-metal server with its power state once its OS is installed (GET of
// the server, then of its power/), by name; two calls. Stopped is set for a
// VM in state "shut off" and for an installed server whose power is "Off"
// (ProviderStatus then reads "installed/Off"); a server still installing
// its OS is not asked, since the install itself powers it off and on.
// fleet.ErrNotFound when neither exists.
func (p *Provider) Get(ctx context.Context, name string) (fleet.Instance, error) {
	if bm, known := p.kind(name); !known || !bm {
		vm, err := p.c.GetVM(ctx, name)
		if err == nil {
			inst := p.vmInstance(*vm)
			if st, serr := p.c.GetVMState(ctx, name); serr == nil {
				inst.ProviderStatus = st.State
				inst.Stopped = st.State == VMShutOff
				if st.State != VMRunning && !inst.Stopped {
					inst.Status = fleet.StatusProvisioning
				}
			}
			return inst, nil
		}
		if !errors.Is(err, fleet.ErrNotFound) || known {
			return fleet.Instance{}, err
		}
	}
	bm, err := p.c.GetBareMetal(ctx, name)
	if err != nil {
		return fleet.Instance{}, err
	}
	p.remember(name, true)
	inst := p.bareMetalInstance(*bm)
	if inst.Status != fleet.StatusProvisioning {
		if power, perr := p.c.GetBareMetalPower(ctx, name); perr == nil {
			inst.ProviderStatus += "/" + power
			inst.Stopped = power == PowerOff
		}
	}
	return inst, nil
}

// List reads every VM and bare-metal server of the team (two calls). A
// listed VM counts as running: the API says "running" as soon as it is
// assigned, and the list carries no state. When no offers of a listed kind
// were built yet (a fresh Provider adopting after a lost Store), the types
// are listed once for their price and minimum reservation.
func (p *Provider) List(ctx context.Context) ([]fleet.Instance, error) {
	return p.list(ctx, true, true)
}

// ListKind lists only VMs (bareMetal false) or only bare-metal servers
// (true): one call (fleet.KindLister).
func (p *Provider) ListKind(ctx context.Context, bareMetal bool) ([]fleet.Instance, error) {
	return p.list(ctx, !bareMetal, bareMetal)
}

func (p *Provider) list(ctx context.Context, listVMs, listMetal bool) ([]fleet.Instance, error) {
	var vms []VM
	var bms []BareMetal
	var err error
	if listVMs {
		if vms, err = p.c.ListVMs(ctx); err != nil {
			return nil, err
		}
		p.sawList(vms)
	}
	if listMetal {
		if bms, err = p.c.ListBareMetal(ctx); err != nil {
			return nil, err
		}
	}
	p.loadTypes(ctx, vms, bms)
	out := make([]fleet.Instance, 0, len(vms)+len(bms))
	for _, vm := range vms {
		p.remember(vm.Name, false)
		out = append(out, p.vmInstance(vm))
	}
	for _, bm := range bms {
		p.remember(bm.Name, true)
		out = append(out, p.bareMetalInstance(bm))
	}
	return out, nil
}

// Delete releases a VM or a bare-metal server; Force releases before the
// minimum reservation (the minimum is charged, not refunded). Without it a
// release inside the minimum fails with fleet.ErrMinReservation. A VM
// delete blocks until the VM is reset. fleet.ErrNotFound when gone.
func (p *Provider) Delete(ctx context.Context, name string, opts fleet.DeleteOptions) error {
	bm, known := p.kind(name)
	if !known || !bm {
		err := p.c.DeleteVM(ctx, name, opts.Force)
		if !errors.Is(err, fleet.ErrNotFound) || known {
			return err
		}
	}
	return p.c.ReleaseBareMetal(ctx, name, opts.Force)
}

func labelled(inst *fleet.Instance, description string) {
	if l, ok := fleet.ParseLabel(description); ok {
		inst.Fleet, inst.Owner, inst.RequestID = l.Fleet, l.Owner, l.RequestID
	}
}

func (p *Provider) vmInstance(vm VM) fleet.Instance {
	inst := fleet.Instance{ID: vm.Name, Provider: fleet.ProviderHotAisle, Offer: vmOffer(VMType{Specs: vm.VMSpecs}),
		Status: fleet.StatusBooting, ProviderStatus: VMRunning, PublicIP: vm.IPAddress,
		SSH: fleet.SSHEndpoint{User: LoginUser, Host: vm.IPAddress, Port: 22}}
	inst.Offer.Available, inst.Offer.Quantity = true, -1
	p.fillOffer(&inst.Offer)
	if vm.SSHAccess != nil && vm.SSHAccess.IPAddress != "" {
		inst.SSH.Host, inst.SSH.Port = vm.SSHAccess.IPAddress, int(vm.SSHAccess.Port)
	}
	labelled(&inst, vm.Description)
	return inst
}

// bareMetalInstance: the server's ip_address is private; SSH goes through
// ssh_access, a shared front host with one port per server, as a jump host.
func (p *Provider) bareMetalInstance(bm BareMetal) fleet.Instance {
	inst := fleet.Instance{ID: bm.Name, Provider: fleet.ProviderHotAisle, Offer: bareMetalOffer(BareMetalType{Specs: bm.BareMetalSpecs}),
		Status: fleet.StatusBooting, ProviderStatus: OSInstalled, PrivateIP: bm.IPAddress,
		SSH: fleet.SSHEndpoint{User: LoginUser, Host: bm.IPAddress, Port: 22}}
	inst.Offer.Available, inst.Offer.Quantity = true, -1
	p.fillOffer(&inst.Offer)
	if bm.OSStatus != nil {
		inst.ProviderStatus = bm.OSStatus.OSInstallStatus
		if bm.OSStatus.OSInstallStatus != OSInstalled {
			inst.Status = fleet.StatusProvisioning
		}
	}
	if a := bm.SSHAccess; a != nil {
		host := a.IPAddress
		if host == "" {
			host = a.DNSName
		}
		inst.PublicIP = host
		inst.SSH.Jump = &fleet.SSHEndpoint{User: LoginUser, Host: host, Port: portOr22(a.Port)}
	}
	labelled(&inst, bm.Description)
	return inst
}

func portOr22(p int64) int {
	if p == 0 {
		return 22
	}
	return int(p)
}
