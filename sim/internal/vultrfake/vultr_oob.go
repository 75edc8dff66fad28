package vultrfake

import (
	"fmt"
	"net/http"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// VultrGoneAnswer is how the API answers for a server deleted out of band.
type VultrGoneAnswer int

const (
	// VultrGoneNotFound answers 404 "Invalid instance-id." (bare metal
	// "Invalid server."), as for a server deleted through the API.
	VultrGoneNotFound VultrGoneAnswer = iota
	// VultrGoneInvalidID answers 400 {"error":"invalid instance ID",
	// "status":400}, what Vultr answered for instances destroyed in its
	// console (terraform-provider-vultr issue #177); bare metal answers the
	// same (assumed).
	VultrGoneInvalidID
)

// DestroyOutOfBand deletes a server behind the client's back, as a console
// user would: from now on it is missing from lists and every
// call naming it answers as answer says (default VultrGoneNotFound),
// billing stops, the SSH host goes; its VPC attachments linger as after a
// DELETE. It fails for an unknown or already deleted server.
func (v *Vultr) DestroyOutOfBand(id string, answer ...VultrGoneAnswer) error {
	v.mu.Lock()
	defer v.unlock()
	srv := v.st.servers[id]
	if srv == nil || srv.destroying() {
		return vultrErrNoServer(id)
	}
	srv.timing.Destroy = 0
	srv.invalidID = len(answer) > 0 && answer[0] == VultrGoneInvalidID
	v.destroy(srv, v.clock.Now())
	return nil
}

// HaltOutOfBand powers a server off behind the client's back (a console
// user, or the host failing): power_status "stopped", its SSH host gone,
// billing going on (Vultr bills halted servers); POST …/start brings it
// back. It fails for an unknown or deleted server.
func (v *Vultr) HaltOutOfBand(id string) error {
	v.mu.Lock()
	defer v.unlock()
	srv := v.st.servers[id]
	if srv == nil || srv.destroying() {
		return vultrErrNoServer(id)
	}
	srv.halted = true
	v.registerHost(srv, v.clock.Now())
	return nil
}

// RelabelOutOfBand edits a server's label and tags behind the client's
// back, as a console user would (nil tags leave them unchanged; an empty
// slice clears them). Given a VPC id it sets the VPC's description to label
// (tags must be nil). It fails for an unknown or deleted server or VPC.
func (v *Vultr) RelabelOutOfBand(id, label string, tags []string) error {
	v.mu.Lock()
	defer v.unlock()
	if vpc := v.st.vpcs[id]; vpc != nil && vpc.deleted.IsZero() {
		if tags != nil {
			return fmt.Errorf("sim: vultr VPC %q has no tags", id)
		}
		vpc.desc = label
		return nil
	}
	srv := v.st.servers[id]
	if srv == nil || srv.destroying() {
		return vultrErrNoServer(id)
	}
	var tp *[]string
	if tags != nil {
		tp = &tags
	}
	v.relabel(srv, &label, tp)
	return nil
}

// SoldOutAfterListing makes creates of plan in region answer 400 "Plan is
// not available in the selected region." while
// /v2/regions/{region}/availability still lists it, as when the last
// machine goes between a client's listing and its create. Restock undoes
// it. It fails for an unknown plan or region.
func (v *Vultr) SoldOutAfterListing(plan, region string) error {
	if err := v.checkPlanRegion(plan, region); err != nil {
		return err
	}
	v.mu.Lock()
	v.st.listed[plan+"@"+region] = true
	v.unlock()
	return nil
}

// vultrMsgVPCInUse is the refusal of DELETE /v2/vpcs/{id} while servers are
// attached; the real message goes on with their ids.
const vultrMsgVPCInUse = "The following servers are attached to this VPC network"

// RefuseVPCDelete makes the next times DELETE /v2/vpcs/{id} calls answer
// 400 "The following servers are attached to this VPC network" whatever is
// attached, as when attachments linger longer than the API shows (dstack
// saw detaching fail "even after 15 minutes"). times 0 refuses until
// ClearFaults.
func (v *Vultr) RefuseVPCDelete(times int) error {
	return v.Inject(core.Fault{Route: "DELETE /v2/vpcs/{id}", Times: times, Status: http.StatusBadRequest,
		Message: vultrMsgVPCInUse})
}

// chaosFaultsVultr registers the provider refusals chaos mode answers
// (ChaosProfile.ProviderFault): attach failures, plans sold out after
// listing, VPC deletes refused as attached, deletes refused as locked when
// the lock is not visible.
func (v *Vultr) chaosFaultsVultr() {
	for _, base := range []string{"/v2/instances", "/v2/bare-metals"} {
		core.AddChaosFault(v.server, core.Fault{Route: "POST " + base + "/{id}/vpcs/attach", Status: 500, Message: "Unable to attach VPC"})
		core.AddChaosFault(v.server, core.Fault{Route: "POST " + base, Status: 400, Message: vultrMsgSoldOut})
		core.AddChaosFault(v.server, core.Fault{Route: "DELETE " + base + "/{id}", Status: 500, Message: vultrMsgLockedDel})
	}
	core.AddChaosFault(v.server, core.Fault{Route: "DELETE /v2/vpcs/{id}", Status: 400, Message: vultrMsgVPCInUse})
}

// vultrMsgSoldOut refuses a create of a plan sold out in the region.
const vultrMsgSoldOut = "Plan is not available in the selected region."

// checkPlanRegion fails for a plan or region the catalog lacks.
func (v *Vultr) checkPlanRegion(plan, region string) error {
	v.mu.Lock()
	defer v.unlock()
	_, vm := v.cfg.Catalog.plan(plan)
	_, bm := v.cfg.Catalog.metalPlan(plan)
	if _, ok := v.cfg.Catalog.region(region); !ok || !(vm || bm) {
		return fmt.Errorf("sim: vultr catalog has no plan %q or region %q", plan, region)
	}
	return nil
}
