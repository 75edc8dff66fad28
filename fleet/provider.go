package fleet

import (
	"context"
	"time"
)

// CreateRequest asks a provider for one instance of an offer.
type CreateRequest struct {
	Offer Offer
	Label Label // written on the resource (Vultr label and tags, Hot Aisle description)
	// SSHKeys are authorized_keys lines to install for the login user (Hot
	// Aisle: registered on the account; Vultr: cloud-config user_data).
	SSHKeys []string
	// VPCID, when set, attaches the instance to this VPC at create.
	VPCID string
}

// DeleteOptions tune a release.
type DeleteOptions struct {
	// Force releases before the minimum reservation ends (Hot Aisle
	// ?force=true); the unused minimum is charged, not refunded.
	Force bool
}

// Provider is one cloud behind gpufleet, implemented by the hotaisle and
// vultr packages.
//
// Errors answer errors.Is for the classes in errors.go; in particular Get and
// Delete return ErrNotFound when the instance is gone.
type Provider interface {
	// Name is ProviderHotAisle or ProviderVultr.
	Name() string
	// Offers lists what can be rented, one Offer per instance type and region.
	Offers(ctx context.Context) ([]Offer, error)
	// Create rents one instance. It never retries the create call itself:
	// after an ambiguous failure the caller looks the label up with List.
	Create(ctx context.Context, req CreateRequest) (Instance, error)
	// Get reads one instance by id; ErrNotFound when gone.
	Get(ctx context.Context, id string) (Instance, error)
	// List reads every instance of the account across all pages, with Fleet
	// and RequestID filled from the label ("" for resources that are not
	// gpufleet's), so status is one call per provider, not one per instance.
	List(ctx context.Context) ([]Instance, error)
	// Delete releases an instance. It is idempotent: ErrNotFound means the
	// instance is already gone, which callers treat as success.
	Delete(ctx context.Context, id string, opts DeleteOptions) error
}

// VPC is a provider private network.
type VPC struct {
	ID         string
	Provider   string
	Region     string
	Fleet      string // from the label ("" when not gpufleet's)
	Owner      string // from the label ("" in the format before owners)
	RequestID  string
	Subnet     string // "10.6.96.0/20"
	Created    time.Time
	Attachment []string // instance ids attached, where the provider lists them
}

// VPCProvider is the optional VPC capability of a Provider (Vultr).
type VPCProvider interface {
	// CreateVPC creates a labelled VPC in region.
	CreateVPC(ctx context.Context, region string, label Label) (VPC, error)
	// AttachVPC attaches an instance to a VPC (a single try: callers retry
	// and confirm with InstanceVPCs). ErrVPCUnsupported for plans without
	// private networking, ErrAttachFailed for the intermittent failure;
	// an instance already in the VPC answers nil or ErrAlreadyAttached
	// (the Manager takes either as attached).
	AttachVPC(ctx context.Context, instanceID, vpcID string) error
	// InstanceVPCs lists the VPC ids an instance is attached to.
	InstanceVPCs(ctx context.Context, instanceID string) ([]string, error)
	// ListVPCs lists every VPC of the account, labels parsed.
	ListVPCs(ctx context.Context) ([]VPC, error)
	// DeleteVPC deletes a VPC: ErrVPCInUse while servers are attached,
	// ErrNotFound when already gone.
	DeleteVPC(ctx context.Context, id string) error
}

// Agent starts and checks the host agent on an instance (the shim package
// implements it over SSH).
type Agent interface {
	// Start brings the agent up on a running instance and verifies its
	// health. It is idempotent: an agent already healthy is left alone.
	Start(ctx context.Context, inst Instance) error
	// Check verifies the agent answers its health check.
	Check(ctx context.Context, inst Instance) error
}

// InstanceForgetter is the optional capability of an Agent that keeps
// state per rental (a shim.Starter's host-key pins): once the provider
// confirmed an instance gone (released, or vanished), the Manager calls
// ForgetInstance with it, in the background under Policy.CallTimeout, so
// that state does not outlive the rental. An error is logged, not retried.
type InstanceForgetter interface {
	ForgetInstance(ctx context.Context, inst Instance) error
}

// SSHKey is a public key registered on a provider account.
type SSHKey struct {
	ID        string // what DeleteSSHKey takes (Hot Aisle: the SHA256 fingerprint)
	Provider  string
	PublicKey string // the base64 part of the authorized_keys line
	Fleet     string // from the label in the key's comment ("" when not gpufleet's)
	Owner     string
	RequestID string
}

// SSHKeyProvider is the optional capability of a provider whose Create
// registers the fleet's SSH keys on the account (Hot Aisle: the keys of the
// account log in to every server of the team, fetched at login). Create
// writes the request's label as the key's comment; a key already on the
// account keeps its comment (and is then not gpufleet's to remove).
type SSHKeyProvider interface {
	// ListSSHKeys lists every key of the account, labels parsed.
	ListSSHKeys(ctx context.Context) ([]SSHKey, error)
	// DeleteSSHKey removes a key; ErrNotFound when already gone.
	DeleteSSHKey(ctx context.Context, id string) error
}

// KindLister is the optional capability of a provider to list one kind of
// instance alone (VMs, or bare metal), so that a Manager watching only one
// kind makes one paged list instead of two, and one whose List failed
// (List fails whole when either kind's listing fails) still learns the
// kind that lists. Labels are parsed as in List.
type KindLister interface {
	ListKind(ctx context.Context, bareMetal bool) ([]Instance, error)
}

// Labeler is the optional capability of a provider to write an instance's
// label again (Vultr label and tags; Hot Aisle description), used when a
// label was lost out of band or its write failed after a create.
type Labeler interface {
	SetLabel(ctx context.Context, id string, label Label) error
}

// Restarter is the optional capability of a provider to power a stopped
// instance on again (Vultr POST …/start; Hot Aisle POST …/start/ for a VM,
// …/power/power_on/ for a bare-metal server), used by Policy.OnStopped =
// OnStoppedRestart.
type Restarter interface {
	Start(ctx context.Context, id string) error
}
