package vultrfake

import (
	"net/http"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// Vultr messages for VPC membership (vultr.md §4, §7.10; wording around the
// quoted substrings is constructed where the sources only give a substring).
const (
	vultrMsgNoVPC       = "Invalid VPC ID."
	vultrMsgNoPrivate   = "This plan does not support private networking."
	vultrMsgAttachPend  = "Server is not active yet."
	vultrMsgNotAttached = "The VPC network is not attached to this server."
)

// vultrVPCReq is the body of …/vpcs/attach and …/vpcs/detach.
type vultrVPCReq struct {
	VPCID string `json:"vpc_id"`
}

// vultrVPCInfoJSON is one row of GET …/{id}/vpcs.
type vultrVPCInfoJSON struct {
	ID         string `json:"id"`
	MacAddress string `json:"mac_address"`
	IPAddress  string `json:"ip_address"`
}

// listServerVPCs serves GET /v2/instances/{id}/vpcs and
// /v2/bare-metals/{id}/vpcs: the visible attachments (an attach shows on the
// next read; a detach may lag, see DetachLag). A gone server answers 404
// "Invalid instance-id." on both paths (DS 0621f97d3).
func (v *Vultr) listServerVPCs(w http.ResponseWriter, r *http.Request, metal bool) {
	v.mu.Lock()
	now := v.clock.Now()
	srv := v.lookup(w, r, metal, now, vultrMsgNoInstance)
	if srv == nil {
		v.unlock()
		return
	}
	atts := srv.visibleAttachments(now)
	rows := make([]vultrVPCInfoJSON, len(atts))
	for i, a := range atts {
		rows[i] = vultrVPCInfoJSON{ID: a.vpc.id, MacAddress: a.mac, IPAddress: a.ip}
	}
	v.unlock()
	vultrServePage(w, r, "vpcs", rows)
}

// vultrDecodeVPCReq reads {"vpc_id": "…"}, answering 400 when it is missing.
func vultrDecodeVPCReq(w http.ResponseWriter, r *http.Request) (string, bool) {
	var req vultrVPCReq
	if st, msg := core.DecodeJSON(r, &req); st != 0 {
		writeVultrError(w, st, msg)
		return "", false
	}
	if req.VPCID == "" {
		writeVultrError(w, http.StatusBadRequest, "Bad request: vpc_id is required.")
		return "", false
	}
	return req.VPCID, true
}

// attach serves POST …/{id}/vpcs/attach: 204, or 404 "Invalid VPC ID.",
// 400 "This plan does not support private networking.", 500 "Unable to
// attach VPC: …" while pending, locked or being destroyed, 400 for a VPC of
// another region, one already attached, or a second VPC on bare metal.
func (v *Vultr) attach(w http.ResponseWriter, r *http.Request, metal bool) {
	id, ok := vultrDecodeVPCReq(w, r)
	if !ok {
		return
	}
	v.mu.Lock()
	defer v.unlock()
	now := v.clock.Now()
	srv := v.lookup(w, r, metal, now, "")
	if srv == nil {
		return
	}
	vpc, st, msg := v.checkAttach(srv, id, now)
	if st == 0 && vultrRefuse(w, srv, now, "Unable to attach VPC", vultrMsgAttachPend) {
		return
	}
	if st != 0 {
		writeVultrError(w, st, msg)
		return
	}
	v.applyAttach(srv, vpc, now)
	w.WriteHeader(http.StatusNoContent)
}

// checkAttach validates attaching VPC id to srv. Callers hold v.mu.
func (v *Vultr) checkAttach(srv *vultrServer, id string, now time.Time) (*vultrVPC, int, string) {
	vpc := v.st.vpcs[id]
	switch {
	case vpc == nil || !vpc.deleted.IsZero():
		return nil, http.StatusNotFound, vultrMsgNoVPC
	case v.noPrivateNetwork(srv):
		return nil, http.StatusBadRequest, vultrMsgNoPrivate
	case vpc.region != srv.region:
		return nil, http.StatusBadRequest, "The VPC network is in a different region than the server."
	}
	for _, a := range srv.attachments {
		if !a.detached.IsZero() {
			continue
		}
		if a.vpc == vpc {
			return nil, http.StatusBadRequest, "The VPC network is already attached to this server."
		}
		if srv.metal {
			return nil, http.StatusBadRequest, "Bare metal servers can attach only one VPC network."
		}
	}
	if !vultrHasFree(vpc) {
		return nil, http.StatusBadRequest, "Unable to attach VPC: the VPC network has no free address."
	}
	return vpc, 0, ""
}

// applyAttach attaches vpc, reviving a detached attachment (same address).
func (v *Vultr) applyAttach(srv *vultrServer, vpc *vultrVPC, now time.Time) {
	for _, a := range srv.attachments {
		if a.vpc == vpc {
			a.detached, a.added = time.Time{}, now
			return
		}
	}
	srv.attachments = append(srv.attachments, v.newAttachment(vpc, now))
}

// detach serves POST …/{id}/vpcs/detach: 204 (the attachment disappears on
// the next read, or after DetachLag), 404 "Invalid VPC ID.", 400 when not
// attached, 500 "Unable to detach VPC: …" while pending, locked or being
// destroyed.
func (v *Vultr) detach(w http.ResponseWriter, r *http.Request, metal bool) {
	id, ok := vultrDecodeVPCReq(w, r)
	if !ok {
		return
	}
	v.mu.Lock()
	defer v.unlock()
	now := v.clock.Now()
	srv := v.lookup(w, r, metal, now, "")
	if srv == nil {
		return
	}
	a, st, msg := v.checkDetach(srv, id)
	if st == 0 && vultrRefuse(w, srv, now, "Unable to detach VPC", vultrMsgAttachPend) {
		return
	}
	if st != 0 {
		writeVultrError(w, st, msg)
		return
	}
	a.detached, a.lag = now, v.st.detach
	w.WriteHeader(http.StatusNoContent)
}

// checkDetach finds srv's attachment to VPC id. Callers hold v.mu.
func (v *Vultr) checkDetach(srv *vultrServer, id string) (*vultrAttachment, int, string) {
	vpc := v.st.vpcs[id]
	if vpc == nil || !vpc.deleted.IsZero() {
		return nil, http.StatusNotFound, vultrMsgNoVPC
	}
	for _, a := range srv.attachments {
		if a.vpc == vpc && a.detached.IsZero() {
			return a, 0, ""
		}
	}
	return nil, http.StatusBadRequest, vultrMsgNotAttached
}
