package sim

import "github.com/gpufleet/gpufleet/sim/internal/vultrfake"

// Vultr is a fake of the Vultr API v2 (https://api.vultr.com/v2). It serves
// plans, regions and availability (public), instances, bare metal, VPCs and
// SSH keys, with the state timelines of VultrTiming, the error dialect
// {"error":"<message>","status":<code>}, a rate limit per key (429 with
// Retry-After), cursor pagination and a billing ledger. Servers get fake SSH
// hosts on Network. Every method is safe for concurrent use.
//
// Where the public sources are silent the fake decides, and clients should
// not rely on more than the quoted substrings:
//   - a gone instance answers 404 "Invalid instance-id." (dstack), a gone
//     bare metal 404 "Invalid server." (the Terraform provider); …/{id}/vpcs
//     of either answers "Invalid instance-id."; a server destroyed out of
//     band may answer 400 "invalid instance ID" instead (DestroyOutOfBand);
//   - between an accepted DELETE and the server's disappearance (Destroy),
//     GET still shows it with power_status "stopped" and server_status
//     "locked", and every mutation answers 500 "… Server is pending
//     destruction" (the Terraform provider saw that text);
//   - the lock after activation refuses DELETE, PATCH, attach, detach, halt,
//     start and reboot with 500 "Unable to <op>: Server is currently locked";
//     while pending, attach and detach answer 500 "Unable to attach VPC:
//     Server is not active yet." and power actions 500 "… not currently
//     active"; PATCH of label and tags works while pending;
//   - a sold-out plan answers 400 "Plan is not available in the selected
//     region.", a plan never offered there 400 "Plan is not offered in the
//     selected region.";
//   - a list given more than one of label, tag, region and main_ip answers
//     400 "Only one filter per request is allowed." (govultr issue #220);
//   - internal_ip is blank with two or more VPCs attached (Terraform provider
//     issue #173);
//   - bare metal honours attach_vpc at create (dstack relies on it) and takes
//     one VPC; it shows internal_ip and power_status (dstack and the Ansible
//     collection read them);
//   - VPC delete while in use answers 400; a deleted VPC or key is 404.
type Vultr = vultrfake.Vultr

// DefaultVultrRateLimit is the Vultr fake's request rate per API key, in
// requests per second, unless WithVultrRateLimit is given ("more than 30
// requests per second … the API may return HTTP status code 429", Vultr API
// docs). The burst equals the rate.
const DefaultVultrRateLimit = vultrfake.DefaultVultrRateLimit

// VultrCatalog is what the Vultr fake sells: plans, bare-metal plans,
// regions, and the plans sold out per region. A plan is available in a region
// when the region is in its Locations and it is not sold out there;
// GET /v2/regions/{id}/availability lists exactly the available plans.
type VultrCatalog = vultrfake.VultrCatalog

// DefaultVultrCatalog returns (a fresh copy of) the Vultr fake's default
// catalog: 19 VM plans (vc2, vhf, vhp, voc; Cloud GPU vcg with the fractional
// vcg-a100-1c-6g-4vram, the full vcg-a100-12c-120g-80vram and
// vcg-l40s-16c-180g-48vram), 5 bare-metal plans (vbm-4c-32gb without private
// networking, vbm-24c-256gb-amd, vbm-48c-1024gb-4-a100-gpu,
// vbm-112c-2048gb-8-h100-gpu in sea, vbm-256c-2048gb-8-mi300x-gpu at 17.52
// USD/h in ord, atl and sea), 10 regions, nothing sold out.
func DefaultVultrCatalog() VultrCatalog { return vultrfake.DefaultVultrCatalog() }

// VultrPlan is a Vultr cloud plan (VM or Cloud GPU) as GET /v2/plans returns
// it (govultr's Plan plus hourly_cost, as gpuhunt reads it).
type VultrPlan = vultrfake.VultrPlan

// VultrMetalPlan is a Vultr bare-metal plan as GET /v2/plans-metal returns it
// (govultr's BareMetalPlan). GPU count and model appear only in the id.
type VultrMetalPlan = vultrfake.VultrMetalPlan

// VultrRegion is a Vultr region as GET /v2/regions returns it.
type VultrRegion = vultrfake.VultrRegion

// VultrTiming is the timeline of one Vultr server, in cloud time. A server
// is created (202, status "pending"), becomes "active" after Pending, shows
// server_status "ok" Booting later, and refuses every mutation as locked for
// Lock after becoming active (server_status may already say "ok": the lock
// is not always visible, Ansible collection issue #131). A DELETE accepted
// at time d stops billing and removes the SSH host; the server stays visible
// (power_status "stopped", server_status "locked") until d+Destroy, then
// GET answers 404; its VPC attachments stay until d+AttachLinger.
type VultrTiming = vultrfake.VultrTiming

// DefaultVultrVMTiming returns the default timing of VM and Cloud GPU plans
// (vc2, vhf, vhp, voc, vcg): active after 90 s, ok 60 s later, locked for 5
// min after active, destroyed 60 s after DELETE, sshd 60 s after active.
func DefaultVultrVMTiming() VultrTiming { return vultrfake.DefaultVultrVMTiming() }

// DefaultVultrBareMetalTiming returns the default timing of bare-metal plans
// (vbm-*): active after 40 min (Terraform and dstack wait up to 55-60 min),
// locked for 5 min after active, destroyed 60 s after DELETE, sshd 3 min
// after active.
func DefaultVultrBareMetalTiming() VultrTiming { return vultrfake.DefaultVultrBareMetalTiming() }

// VultrSeed describes a server to plant with SeedServer. The plan decides
// the kind (vbm-* is bare metal).
type VultrSeed = vultrfake.VultrSeed

// VultrGoneAnswer is how the API answers for a server deleted out of band.
type VultrGoneAnswer = vultrfake.VultrGoneAnswer

// The answers a server destroyed out of band may give (DestroyOutOfBand).
const (
	// VultrGoneNotFound answers 404 "Invalid instance-id." (bare metal
	// "Invalid server."), as for a server deleted through the API.
	VultrGoneNotFound = vultrfake.VultrGoneNotFound
	// VultrGoneInvalidID answers 400 {"error":"invalid instance ID",
	// "status":400}, what Vultr answered for instances destroyed in its
	// console (terraform-provider-vultr issue #177); bare metal answers the
	// same (assumed).
	VultrGoneInvalidID = vultrfake.VultrGoneInvalidID
)
