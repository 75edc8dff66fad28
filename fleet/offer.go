package fleet

import (
	"fmt"
	"time"
)

// Provider names.
const (
	ProviderHotAisle = "hotaisle"
	ProviderVultr    = "vultr"
)

// GPU describes the accelerators of an offer: Count devices of one model.
type GPU struct {
	Vendor    string  // "AMD", "NVIDIA"
	Model     string  // "MI300X", "A100", "H100", "L40S"
	Count     int     // devices per instance; a fractional Vultr plan is 1
	MemoryGiB float64 // memory per device in GiB (a fractional plan: its share)
}

// LocalDisk is one local data drive of an offer, usable as an instance
// volume (Hot Aisle bare metal's NVMe drives).
type LocalDisk struct {
	Type      string // "NVMe", "SATA SSD"
	SizeBytes uint64 // capacity in bytes as the provider reports it (decimal)
	MountPath string // where the image mounts it, "" when not mounted
}

// Offer is something a provider can rent out, in provider-neutral terms.
// Offers from different providers compare field by field.
type Offer struct {
	Provider     string // ProviderHotAisle, ProviderVultr
	Region       string // Vultr region id ("ord"); Hot Aisle "us-michigan-1"
	InstanceType string // "vm-mi300x-2", "bm-mi300x-8", Vultr plan id
	BareMetal    bool

	CPUArch    string      // "x86"
	VCPUs      int         // schedulable CPUs (vCPUs or hardware threads)
	CPUCores   int         // physical cores where the provider says so, else 0
	CPUModel   string      // where known
	MemoryGiB  float64     // RAM in GiB
	DiskGiB    float64     // boot disk in GiB (not the total of all drives)
	LocalDisks []LocalDisk // data drives besides the boot disk
	GPU        GPU         // zero Count: no GPU

	PricePerHour       float64       // USD per hour for the whole instance
	MinimumReservation time.Duration // billed at least this long (Hot Aisle)
	BillingGranularity time.Duration // time.Minute (Hot Aisle), time.Hour (Vultr)
	// MonthlyCap is the most the provider bills for the instance in one
	// calendar month (UTC), in USD; 0: no cap. Vultr: the plan's
	// monthly_cost — hourly billing stops at 730 h for Cloud GPU and 672 h
	// for other plans (bare metal included), each started hour counting in
	// the month it starts in. The Manager keeps an idle node whose month
	// has reached the cap for free until its first hour of the next month,
	// and prices keeping it accordingly (scale-down and Acquire's order).
	MonthlyCap float64
	Available  bool // can be created now, as far as the provider says
	Quantity   int  // how many can be created now; -1 when unknown

	SupportsVPC bool // can join a private network (cluster placement)
	// ProvisionTimeout is how long the provider may take to say the instance
	// is running, image pull included (Vultr bare metal: 55 min).
	ProvisionTimeout time.Duration
	// TypicalBoot is how long the provider usually takes to say the instance
	// is running (Vultr VMs about 2 min, bare metal 40 min; Hot Aisle bare
	// metal 10 min; 0: at once). The Manager first checks an instance near
	// then, and more often after.
	TypicalBoot time.Duration
	// DeleteLock is how long after an instance starts running the provider
	// refuses to delete it (Vultr: 5 min, "Server is currently locked"); no
	// delete is attempted inside it.
	DeleteLock time.Duration
	// DeleteNeedsRunning is set when the provider refuses to delete an
	// instance before it runs (Vultr: "not currently active"): the delete
	// waits for running (or for the provisioning deadline).
	DeleteNeedsRunning bool
	// LabelAfterCreate is set when the create request cannot carry the
	// label and the provider writes it with a second call (Hot Aisle VMs):
	// a create lost between the two (a crash) is found by matching a new
	// unlabelled instance of the offer, which the Manager then labels.
	LabelAfterCreate bool
	// SlowProvisioning is set when the provider is known to take long (Vultr
	// bare metal: 40 min and more) so callers can warn up front.
	SlowProvisioning bool

	// ProviderData is what the provider needs to create this offer again
	// (Hot Aisle: the offer row's specs). Opaque to callers.
	ProviderData any
}

// Key identifies an offer across catalog refreshes: provider, region and
// instance type.
func (o Offer) Key() string {
	return o.Provider + "/" + o.Region + "/" + o.InstanceType
}

// String is a one-line summary: "hotaisle us-michigan-1 vm-mi300x-1 $2.99/h".
func (o Offer) String() string {
	return fmt.Sprintf("%s %s %s $%.2f/h", o.Provider, o.Region, o.InstanceType, o.PricePerHour)
}
