package fleet

import "time"

// Status is where an instance is in its lifecycle:
// pending → provisioning → booting → idle ⇄ busy → terminating → terminated.
type Status string

// Instance statuses.
const (
	StatusPending      Status = "pending"      // wanted, no create call made yet
	StatusProvisioning Status = "provisioning" // created; the provider has not said running
	StatusBooting      Status = "booting"      // the provider says running; agent being started
	StatusIdle         Status = "idle"         // ready (agent healthy), no work
	StatusBusy         Status = "busy"         // ready, doing work
	StatusTerminating  Status = "terminating"  // release requested; not yet confirmed gone
	StatusTerminated   Status = "terminated"   // the provider confirmed it is gone
)

// Active reports whether the instance may still exist at the provider (every
// status but pending and terminated), i.e. whether it may be billing.
func (s Status) Active() bool { return s != StatusPending && s != StatusTerminated && s != "" }

// SSHEndpoint is how to reach an instance over SSH.
type SSHEndpoint struct {
	User string
	Host string // IP address or host name
	Port int
	// Jump, when set, is the host to go through (Hot Aisle bare metal's
	// ssh_access front host).
	Jump *SSHEndpoint
}

// Addr is "host:port".
func (e SSHEndpoint) Addr() string {
	if e.Host == "" {
		return ""
	}
	return joinHostPort(e.Host, e.Port)
}

// StatusChange is one entry of an instance's history.
type StatusChange struct {
	Time   time.Time
	Status Status
	Reason string
}

// Instance is a machine rented from a provider, as gpufleet tracks it.
type Instance struct {
	// ID is the provider's id (Vultr UUID, Hot Aisle VM or server name). A
	// Hot Aisle bare-metal server released and reserved again comes back
	// under its name: RequestID and Created tell its rentals apart, and
	// Manager calls by ID reach the current one.
	ID        string
	Provider  string
	Fleet     string // from the label; "" when the resource is not gpufleet's
	Owner     string // from the label (Config.Owner); "" in the format before owners
	RequestID string // per-create id from the label; "" when only other evidence (Vultr's tags) gave Owner and Fleet
	Offer     Offer  // what was rented (as complete as the provider can say)

	Status         Status
	ProviderStatus string // the provider's own words ("pending", "active/ok", "running")

	// Stopped is set when the provider says the machine is powered off (Vultr
	// power_status "stopped"; Hot Aisle VM state "shut off"): it still bills.
	Stopped bool

	PublicIP  string
	PrivateIP string // VPC or private address, "" when none
	VPCID     string // the VPC it is attached to, "" when none
	SSH       SSHEndpoint

	Created       time.Time // create call accepted
	Ready         time.Time // agent first healthy (or running when there is no agent); kept across a restart after a stop out of band
	ReservedUntil time.Time // release before this pays for unused time
	LastError     string
	// LabelError is non-empty when the provider could not write the label
	// (Hot Aisle labels are a second call after the provision); the Manager
	// writes it again later.
	LabelError string
	History    []StatusChange

	// HandOut is set only on the Instance that Manager.Acquire returns: an
	// opaque token of that hand-out, unique per Acquire (never reused).
	// Give the node back with Manager.GiveBack(inst), which marks it idle
	// only while this hand-out is the node's current one: a GiveBack
	// repeated late (after the node was handed out again) changes nothing.
	// "" in the Manager's records and in what other calls return.
	HandOut string `json:",omitempty"`
}

// Running reports whether the provider says the machine is up
// (booting, idle or busy).
func (i Instance) Running() bool {
	return i.Status == StatusBooting || i.Status == StatusIdle || i.Status == StatusBusy
}
