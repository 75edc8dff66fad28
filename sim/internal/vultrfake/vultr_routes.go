package vultrfake

import (
	"net/http"
	"slices"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// routesVultr registers the served routes (vultr.md §2).
func (v *Vultr) routesVultr() {
	v.route("GET /v2/plans", true, v.listPlans)
	v.route("GET /v2/plans-metal", true, v.listMetalPlans)
	v.route("GET /v2/regions", true, v.listRegions)
	v.route("GET /v2/regions/{id}/availability", true, v.availability)

	for _, k := range []struct {
		base  string
		metal bool
	}{{"/v2/instances", false}, {"/v2/bare-metals", true}} {
		metal := k.metal
		on := func(f func(http.ResponseWriter, *http.Request, bool)) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) { f(w, r, metal) }
		}
		v.route("POST "+k.base, false, on(v.createServer))
		v.route("GET "+k.base, false, on(v.listServers))
		v.route("GET "+k.base+"/{id}", false, on(v.getServer))
		v.route("PATCH "+k.base+"/{id}", false, on(v.updateServer))
		v.route("DELETE "+k.base+"/{id}", false, on(v.deleteServer))
		v.route("GET "+k.base+"/{id}/vpcs", false, on(v.listServerVPCs))
		v.route("POST "+k.base+"/{id}/vpcs/attach", false, on(v.attach))
		v.route("POST "+k.base+"/{id}/vpcs/detach", false, on(v.detach))
		v.route("GET "+k.base+"/{id}/user-data", false, on(v.userData))
		for _, op := range []string{"halt", "start", "reboot"} {
			v.route("POST "+k.base+"/{id}/"+op, false, func(w http.ResponseWriter, r *http.Request) { v.power(w, r, metal, op) })
			v.route("POST "+k.base+"/"+op, false, func(w http.ResponseWriter, r *http.Request) { v.massPower(w, r, metal, op) })
		}
	}

	v.route("POST /v2/vpcs", false, v.createVPC)
	v.route("GET /v2/vpcs", false, v.listVPCs)
	v.route("GET /v2/vpcs/{id}", false, v.getVPC)
	v.route("PUT /v2/vpcs/{id}", false, v.updateVPC)
	v.route("DELETE /v2/vpcs/{id}", false, v.deleteVPC)
	v.route("GET /v2/vpcs/{id}/attachments", false, v.listVPCAttachments)

	v.route("POST /v2/ssh-keys", false, v.createKey)
	v.route("GET /v2/ssh-keys", false, v.listKeys)
	v.route("GET /v2/ssh-keys/{id}", false, v.getKey)
	v.route("PATCH /v2/ssh-keys/{id}", false, v.updateKey)
	v.route("DELETE /v2/ssh-keys/{id}", false, v.deleteKey)
}

// route registers fn for pattern (public: no key needed).
func (v *Vultr) route(pattern string, public bool, fn http.HandlerFunc) {
	core.Handle(v.server, pattern, public, fn)
}

// validType checks the type filter of /v2/plans and availability.
func (v *Vultr) validType(w http.ResponseWriter, typ string) bool {
	if !slices.Contains(vultrPlanTypes, typ) {
		writeVultrError(w, http.StatusBadRequest, "Invalid plan type.")
		return false
	}
	return true
}

// listPlans serves GET /v2/plans?type=&per_page=&cursor= (public).
func (v *Vultr) listPlans(w http.ResponseWriter, r *http.Request) {
	typ := r.URL.Query().Get("type")
	if !v.validType(w, typ) {
		return
	}
	v.mu.Lock()
	var plans []VultrPlan
	for _, p := range v.cfg.Catalog.Plans {
		if vultrPlanTypeMatches(p.ID, p.Type, typ) {
			plans = append(plans, p)
		}
	}
	v.unlock()
	vultrServePage(w, r, "plans", plans)
}

// listMetalPlans serves GET /v2/plans-metal (public).
func (v *Vultr) listMetalPlans(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	plans := slices.Clone(v.cfg.Catalog.MetalPlans)
	v.unlock()
	vultrServePage(w, r, "plans_metal", plans)
}

// listRegions serves GET /v2/regions (public).
func (v *Vultr) listRegions(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	regions := slices.Clone(v.cfg.Catalog.Regions)
	v.unlock()
	vultrServePage(w, r, "regions", regions)
}

// availability serves GET /v2/regions/{id}/availability?type= (public, no
// meta): the plans offered in the region and not sold out.
func (v *Vultr) availability(w http.ResponseWriter, r *http.Request) {
	typ := r.URL.Query().Get("type")
	if !v.validType(w, typ) {
		return
	}
	v.mu.Lock()
	defer v.unlock()
	region := r.PathValue("id")
	if _, ok := v.cfg.Catalog.region(region); !ok {
		writeVultrError(w, http.StatusNotFound, "Invalid region.")
		return
	}
	var out []string
	for _, id := range v.cfg.Catalog.available(region, typ) {
		if !v.st.soldOut[id+"@"+region] {
			out = append(out, id)
		}
	}
	if out == nil {
		out = []string{}
	}
	core.WriteJSON(w, http.StatusOK, map[string]any{"available_plans": out})
}

// planAvailable reports whether plan can be deployed in region now.
// Callers hold v.mu.
func (v *Vultr) planAvailable(plan, region string) bool {
	key := plan + "@" + region
	return !v.cfg.Catalog.soldOut(plan, region) && !v.st.soldOut[key] && !v.st.listed[key]
}
