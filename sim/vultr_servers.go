package sim

import (
	"net/http"
	"slices"
	"sort"
	"time"
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

// lookup finds the live server of the route's kind named by {id}, or answers
// 404 with notFound ("" for the kind's message) and returns nil.
// Callers hold v.mu.
func (v *Vultr) lookup(w http.ResponseWriter, r *http.Request, metal bool, now time.Time, notFound string) *vultrServer {
	srv := v.st.servers[r.PathValue("id")]
	if srv == nil || srv.metal != metal || srv.gone(now) {
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

// listServers serves GET /v2/instances and /v2/bare-metals with the label,
// tag, region and main_ip filters, oldest first, paginated.
func (v *Vultr) listServers(w http.ResponseWriter, r *http.Request, metal bool) {
	q := r.URL.Query()
	v.mu.Lock()
	now := v.clock.Now()
	var list []*vultrServer
	for _, s := range v.st.servers {
		if s.metal != metal || s.gone(now) ||
			(q.Has("label") && s.label != q.Get("label")) ||
			(q.Has("tag") && !slices.Contains(s.tags, q.Get("tag"))) ||
			(q.Has("region") && s.region != q.Get("region")) ||
			(q.Has("main_ip") && (!s.active(now) || s.mainIP != q.Get("main_ip"))) {
			continue
		}
		list = append(list, s)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].seq < list[j].seq })
	views := make([]any, len(list))
	for i, s := range list {
		views[i] = v.view(s, now, false)
	}
	v.unlock()
	name := "instances"
	if metal {
		name = "bare_metals"
	}
	vultrServePage(w, r, name, views, func(i int) uint64 { return list[i].seq })
}

// getServer serves GET /v2/instances/{id} and /v2/bare-metals/{id}.
func (v *Vultr) getServer(w http.ResponseWriter, r *http.Request, metal bool) {
	v.mu.Lock()
	defer v.unlock()
	now := v.clock.Now()
	if srv := v.lookup(w, r, metal, now, ""); srv != nil {
		writeJSON(w, http.StatusOK, map[string]any{srv.kind(): v.view(srv, now, false)})
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

// destroy marks srv deleted at now. Callers hold v.mu.
func (v *Vultr) destroy(srv *vultrServer, now time.Time) {
	srv.deleted = now
	v.removeHost(srv)
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

// userData serves GET …/{id}/user-data: {"user_data":{"data":"<base64>"}}.
func (v *Vultr) userData(w http.ResponseWriter, r *http.Request, metal bool) {
	v.mu.Lock()
	defer v.unlock()
	if srv := v.lookup(w, r, metal, v.clock.Now(), ""); srv != nil {
		writeJSON(w, http.StatusOK, map[string]any{"user_data": map[string]string{"data": srv.userData}})
	}
}
