package vultrfake

import (
	"net/http"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// Vultr messages for servers (vultr.md §4). Sources: ANS #113 (locked),
// dstack#2132 (not active), DS 0621f97d3 (Invalid instance-id), TF
// (Invalid server, pending destruction).
const (
	vultrMsgNoInstance   = "Invalid instance-id."
	vultrMsgNoMetal      = "Invalid server."
	vultrMsgNotActiveDel = "Unable to destroy server: This subscription is not currently active, you cannot destroy it."
	vultrMsgLockedDel    = "Unable to destroy server: Unable to remove VM: Server is currently locked"
	vultrLocked          = "Server is currently locked"
	vultrPendingDestroy  = "Server is pending destruction"
)

// Vultr messages of the list filter rule and of servers deleted in the
// console.
const (
	// vultrMsgOneFilter answers a list with more than one of label, tag,
	// region and main_ip (govultr issue #220).
	vultrMsgOneFilter = "Only one filter per request is allowed."
	// vultrMsgInvalidID answers any call naming a server deleted in the
	// console, with 400 (terraform-provider-vultr issue #177).
	vultrMsgInvalidID = "invalid instance ID"
)

// lookup finds the live server of the route's kind named by {id}, or answers
// 404 with notFound ("" for the kind's message) and returns nil. A server
// DestroyOutOfBand chose to answer 400 "invalid instance ID" does so; a read
// (GET) within the call's visibility lag of the server's creation answers
// 404 as if the server did not exist yet. Callers hold v.mu.
func (v *Vultr) lookup(w http.ResponseWriter, r *http.Request, metal bool, now time.Time, notFound string) *vultrServer {
	srv := v.st.servers[r.PathValue("id")]
	if srv != nil && srv.metal == metal && srv.gone(now) && srv.invalidID {
		writeVultrError(w, http.StatusBadRequest, vultrMsgInvalidID)
		return nil
	}
	if srv == nil || srv.metal != metal || srv.gone(now) || v.hidden(r, srv, now) {
		if notFound == "" {
			notFound = vultrMsgNoInstance
			if metal {
				notFound = vultrMsgNoMetal
			}
		}
		writeVultrError(w, http.StatusNotFound, notFound)
		return nil
	}
	return srv
}

// hidden reports whether a read does not see srv yet (visibility lag).
func (v *Vultr) hidden(r *http.Request, srv *vultrServer, now time.Time) bool {
	if r.Method != http.MethodGet {
		return false
	}
	lag := core.LagOf(r)
	return lag > 0 && now.Sub(srv.created) < lag
}

// vultrRefuse answers 500 "Unable to <op>: …" when srv cannot be mutated at now:
// pending destruction, locked (the first Lock after active, whatever
// server_status says), or, when pendingMsg is not "", still pending.
// It reports whether it answered.
func vultrRefuse(w http.ResponseWriter, srv *vultrServer, now time.Time, op, pendingMsg string) bool {
	msg := ""
	switch {
	case srv.destroying():
		msg = op + ": " + vultrPendingDestroy
	case srv.locked(now):
		msg = op + ": " + vultrLocked
	case pendingMsg != "" && !srv.active(now):
		msg = op + ": " + pendingMsg
	}
	if msg == "" {
		return false
	}
	writeVultrError(w, http.StatusInternalServerError, msg)
	return true
}

// vultrFilters are the list filters of GET /v2/instances and
// /v2/bare-metals.
var vultrFilters = []string{"label", "tag", "region", "main_ip"}

// listServers serves GET /v2/instances and /v2/bare-metals, oldest first,
// paginated, with at most one of the label, tag, region and main_ip
// filters (two or more answer 400 "Only one filter per request is
// allowed."). A page costs O(page + log n): the servers are indexed per
// filter value.
func (v *Vultr) listServers(w http.ResponseWriter, r *http.Request, metal bool) {
	q := r.URL.Query()
	filter := ""
	for _, f := range vultrFilters {
		if q.Has(f) {
			if filter != "" {
				writeVultrError(w, http.StatusBadRequest, vultrMsgOneFilter)
				return
			}
			filter = f
		}
	}
	v.mu.Lock()
	now := v.clock.Now()
	l := v.st.list(metal)
	l.purge(now)
	all := l.all
	var keep func(*vultrServer) bool
	if filter != "" {
		all = l.filtered(filter, q.Get(filter))
	}
	if filter == "main_ip" {
		keep = func(s *vultrServer) bool { return s.active(now) }
	}
	vis := visibleOf(all, now, core.LagOf(r), keep)
	name := "instances"
	if metal {
		name = "bare_metals"
	}
	page, ok := vultrPage(w, r, name, vis.len(), func(i int) uint64 { return vis.at(i).seq },
		func(i int) vultrServerJSON { return vultrView(vis.at(i), now, false) })
	v.unlock()
	if ok {
		core.WriteJSON(w, http.StatusOK, page)
	}
}

// writeServer answers status with the server at now under its kind's key.
// Callers hold v.mu.
func writeServer(w http.ResponseWriter, status int, srv *vultrServer, now time.Time, password bool) {
	core.WriteAppended(w, status, func(b []byte) []byte { return vultrAppendAnswer(b, srv, now, password) })
}

// getServer serves GET /v2/instances/{id} and /v2/bare-metals/{id}.
func (v *Vultr) getServer(w http.ResponseWriter, r *http.Request, metal bool) {
	v.mu.Lock()
	defer v.unlock()
	now := v.clock.Now()
	if srv := v.lookup(w, r, metal, now, ""); srv != nil {
		writeServer(w, http.StatusOK, srv, now, false)
	}
}

// deleteServer serves DELETE /v2/instances/{id} and /v2/bare-metals/{id}:
// 500 not active while pending (or NotActive), 500 locked during Lock, else
// 204; billing stops, the SSH host goes, GET answers 404 after Destroy.
func (v *Vultr) deleteServer(w http.ResponseWriter, r *http.Request, metal bool) {
	v.mu.Lock()
	defer v.unlock()
	now := v.clock.Now()
	srv := v.lookup(w, r, metal, now, "")
	if srv == nil {
		return
	}
	switch {
	case srv.destroying():
		writeVultrError(w, http.StatusInternalServerError, "Unable to destroy server: "+vultrPendingDestroy)
	case srv.notActive(now):
		writeVultrError(w, http.StatusInternalServerError, vultrMsgNotActiveDel)
	case srv.locked(now):
		writeVultrError(w, http.StatusInternalServerError, vultrMsgLockedDel)
	default:
		v.destroy(srv, now)
		w.WriteHeader(http.StatusNoContent)
	}
}

// destroy marks srv deleted at now: it leaves the lists once gone, and its
// main_ip may then be reused. Callers hold v.mu.
func (v *Vultr) destroy(srv *vultrServer, now time.Time) {
	srv.deleted = now
	v.removeHost(srv)
	l := v.st.list(srv.metal)
	l.dying = append(l.dying, srv)
	v.st.released = append(v.st.released, srv)
}

// power serves POST …/{id}/halt, /start and /reboot: 204, refused while
// pending, locked or being destroyed. A halted server keeps billing.
func (v *Vultr) power(w http.ResponseWriter, r *http.Request, metal bool, op string) {
	v.mu.Lock()
	defer v.unlock()
	now := v.clock.Now()
	srv := v.lookup(w, r, metal, now, "")
	if srv == nil || vultrRefuse(w, srv, now, "Unable to "+op+" server", "This subscription is not currently active") {
		return
	}
	srv.halted = op == "halt"
	v.registerHost(srv, now) // sshd restarts (or stops) with the server
	w.WriteHeader(http.StatusNoContent)
}

// massPower serves POST /v2/instances/{halt,start,reboot} with
// {"instance_ids": […]} and POST /v2/bare-metals/{halt,start,reboot} with
// {"baremetal_ids": […]} (govultr's MassHalt, MassStart, MassReboot): 204
// when every server named can take the operation, which then applies to
// all; else nothing changes and the answer is the first server's refusal,
// as the per-server route gives it (404 for an unknown one, 500 not active
// or locked). An empty or missing list answers 400.
func (v *Vultr) massPower(w http.ResponseWriter, r *http.Request, metal bool, op string) {
	var req struct {
		InstanceIDs  []string `json:"instance_ids"`
		BareMetalIDs []string `json:"baremetal_ids"`
	}
	if st, msg := core.DecodeJSON(r, &req); st != 0 {
		writeVultrError(w, st, msg)
		return
	}
	ids, field := req.InstanceIDs, "instance_ids"
	if metal {
		ids, field = req.BareMetalIDs, "baremetal_ids"
	}
	if len(ids) == 0 {
		writeVultrError(w, http.StatusBadRequest, "Bad request: "+field+" is required.")
		return
	}
	v.mu.Lock()
	defer v.unlock()
	now := v.clock.Now()
	srvs := make([]*vultrServer, 0, len(ids))
	for _, id := range ids {
		r.SetPathValue("id", id)
		srv := v.lookup(w, r, metal, now, "")
		if srv == nil || vultrRefuse(w, srv, now, "Unable to "+op+" server", "This subscription is not currently active") {
			return
		}
		srvs = append(srvs, srv)
	}
	for _, srv := range srvs {
		srv.halted = op == "halt"
		v.registerHost(srv, now)
	}
	w.WriteHeader(http.StatusNoContent)
}

// userData serves GET …/{id}/user-data: {"user_data":{"data":"<base64>"}}.
func (v *Vultr) userData(w http.ResponseWriter, r *http.Request, metal bool) {
	v.mu.Lock()
	defer v.unlock()
	if srv := v.lookup(w, r, metal, v.clock.Now(), ""); srv != nil {
		core.WriteJSON(w, http.StatusOK, map[string]any{"user_data": map[string]string{"data": srv.userData}})
	}
}
