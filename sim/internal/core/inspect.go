package core

import "time"

// Call is one request a fake answered, for inspection.
type Call struct {
	Time   time.Time // cloud time the call arrived
	Method string
	Route  string // the served route pattern, "" for an unknown path
	Path   string // the request path, without query
	Query  string // the raw query
	Status int    // the status answered; 0 for a dropped connection
	Fault  bool   // answered by an injected fault
}

// The kinds of Resource.
const (
	KindInstance       = "instance"        // a Vultr instance (VM or Cloud GPU)
	KindBareMetal      = "bare_metal"      // a Vultr or Hot Aisle bare-metal server
	KindVirtualMachine = "virtual_machine" // a Hot Aisle VM
	KindVPC            = "vpc"             // a Vultr VPC
	KindSSHKey         = "ssh_key"         // a registered SSH key
)

// Resource is a live or deleted resource of a fake, in provider-neutral terms.
type Resource struct {
	Kind        string   // "instance", "bare_metal", "vpc", "ssh_key", "virtual_machine"
	ID          string   // provider id (Vultr UUID; Hot Aisle name)
	Name        string   // server-chosen name (Hot Aisle) or hostname
	Label       string   // Vultr label
	Tags        []string // Vultr tags
	Description string   // Hot Aisle description, Vultr VPC description
	Plan        string   // Vultr plan id; Hot Aisle offer ("vm-mi300x-2", "bm-mi300x-8")
	Region      string   // Vultr region id; Hot Aisle "us-michigan-1"
	State       string   // the provider's own status string at inspection time
	Power       string   // servers: Vultr power_status ("running", "stopped"), Hot Aisle VM state ("running", "shut off", "in shutdown") or bare-metal power ("On", "Off"); "" for others
	Created     time.Time
	Deleted     time.Time // zero while live
}

// Live reports whether the resource has not been deleted.
func (r Resource) Live() bool { return r.Deleted.IsZero() }

// LiveOf returns the live resources of kind ("" for every kind) among rs,
// in their order.
func LiveOf(rs []Resource, kind string) []Resource {
	var out []Resource
	for _, r := range rs {
		if r.Live() && (kind == "" || r.Kind == kind) {
			out = append(out, r)
		}
	}
	return out
}

// Charge is one resource's entry in a fake's billing ledger.
type Charge struct {
	ResourceID  string
	Kind        string
	Plan        string
	RateUSD     float64       // USD per hour
	From        time.Time     // billing start (create or reserve)
	To          time.Time     // billing end (destroy), or inspection time while live
	Billed      time.Duration // time charged after the provider's rounding and minimums
	USD         float64       // amount charged
	Live        bool          // still billing
	Unrefunded  float64       // USD of a minimum reservation paid but not used (forced release)
	Description string        // how the amount was computed
}

// Ledger is a fake's bill: one charge per billable resource.
type Ledger struct {
	Charges []Charge
	// TotalUSD is the sum of the charges: rounded to the cent on Vultr
	// (which bills cents), to the micro-dollar on Hot Aisle (per-minute
	// charges have fractions of a cent).
	TotalUSD float64
}

// Snapshot is everything a fake can tell about itself at one moment, in a
// JSON-encodable form (the standalone server's admin API returns it).
type Snapshot struct {
	Time      time.Time  // cloud time of the snapshot
	Resources []Resource // live and deleted, oldest first
	Calls     []Call     // the call log, oldest first
	Ledger    Ledger     // the bill so far
}
