package vultrfake

import (
	"net/http"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// vultrVPCCreateReq is the body of POST /v2/vpcs. govultr always sends
// v4_subnet and v4_subnet_mask; "" and 0 mean auto-assign.
type vultrVPCCreateReq struct {
	Region       string `json:"region"`
	Description  string `json:"description"`
	V4Subnet     string `json:"v4_subnet"`
	V4SubnetMask int    `json:"v4_subnet_mask"`
}

// createVPC serves POST /v2/vpcs: 201 {"vpc":…}; an empty subnet gets a /20
// in 10.0.0.0/8. 400 for a missing or unknown region, a subnet without a
// mask (or the reverse), a non-private subnet or a mask outside 8-29.
func (v *Vultr) createVPC(w http.ResponseWriter, r *http.Request) {
	var req vultrVPCCreateReq
	if st, msg := core.DecodeJSON(r, &req); st != 0 {
		writeVultrError(w, st, msg)
		return
	}
	v.mu.Lock()
	defer v.unlock()
	if msg := v.checkVPCCreate(req); msg != "" {
		writeVultrError(w, http.StatusBadRequest, msg)
		return
	}
	vpc := v.newVPC(req.Region, req.Description, req.V4Subnet, req.V4SubnetMask, v.clock.Now())
	core.WriteJSON(w, http.StatusCreated, map[string]any{"vpc": vultrVPCView(vpc)})
}

// checkVPCCreate validates a VPC create. Callers hold v.mu.
func (v *Vultr) checkVPCCreate(req vultrVPCCreateReq) string {
	if req.Region == "" {
		return "Bad request: region is required."
	}
	if _, ok := v.cfg.Catalog.region(req.Region); !ok {
		return "Invalid region."
	}
	if req.V4Subnet == "" && req.V4SubnetMask == 0 {
		return ""
	}
	if req.V4Subnet == "" || req.V4SubnetMask == 0 {
		return "Bad request: v4_subnet and v4_subnet_mask must be given together."
	}
	if req.V4SubnetMask < 8 || req.V4SubnetMask > 29 {
		return "Invalid v4_subnet_mask: must be from 8 to 29."
	}
	ip, err := netip.ParseAddr(req.V4Subnet)
	if err != nil || !ip.Is4() || !ip.IsPrivate() {
		return "Invalid v4_subnet: must be a private IPv4 network (RFC 1918)."
	}
	if p, _ := ip.Prefix(req.V4SubnetMask); p.Addr() != ip {
		return "Invalid v4_subnet: host bits are set for this mask."
	}
	return ""
}

// lookupVPC finds the live VPC {id} or answers 404 "Invalid VPC ID.".
// Callers hold v.mu.
func (v *Vultr) lookupVPC(w http.ResponseWriter, r *http.Request) *vultrVPC {
	vpc := v.st.vpcs[r.PathValue("id")]
	if vpc == nil || !vpc.deleted.IsZero() {
		writeVultrError(w, http.StatusNotFound, vultrMsgNoVPC)
		return nil
	}
	return vpc
}

// listVPCs serves GET /v2/vpcs, oldest first, paginated.
func (v *Vultr) listVPCs(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	list := v.st.vpcList
	page, ok := vultrPage(w, r, "vpcs", len(list), func(i int) uint64 { return list[i].seq },
		func(i int) vultrVPCJSON { return vultrVPCView(list[i]) })
	v.unlock()
	if ok {
		core.WriteJSON(w, http.StatusOK, page)
	}
}

// getVPC serves GET /v2/vpcs/{id}.
func (v *Vultr) getVPC(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	defer v.unlock()
	if vpc := v.lookupVPC(w, r); vpc != nil {
		core.WriteJSON(w, http.StatusOK, map[string]any{"vpc": vultrVPCView(vpc)})
	}
}

// updateVPC serves PUT /v2/vpcs/{id} {"description":…}: 204.
func (v *Vultr) updateVPC(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Description *string `json:"description"`
	}
	if st, msg := core.DecodeJSON(r, &req); st != 0 {
		writeVultrError(w, st, msg)
		return
	}
	v.mu.Lock()
	defer v.unlock()
	vpc := v.lookupVPC(w, r)
	if vpc == nil {
		return
	}
	if req.Description == nil {
		writeVultrError(w, http.StatusBadRequest, "Bad request: description is required.")
		return
	}
	vpc.desc = *req.Description
	w.WriteHeader(http.StatusNoContent)
}

// members lists the servers whose attachment to vpc shows at now (a deleted
// server's lingers for its AttachLinger), oldest first. Callers hold v.mu.
func (v *Vultr) members(vpc *vultrVPC, now time.Time) []*vultrServer {
	var out []*vultrServer
	for _, s := range v.st.servers {
		for _, a := range s.visibleAttachments(now) {
			if a.vpc == vpc {
				out = append(out, s)
				break
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out
}

// deleteVPC serves DELETE /v2/vpcs/{id}: 204, or 400 "The following servers
// are attached to this VPC network: <ids>" while any attachment shows.
func (v *Vultr) deleteVPC(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	defer v.unlock()
	now := v.clock.Now()
	vpc := v.lookupVPC(w, r)
	if vpc == nil {
		return
	}
	if ms := v.members(vpc, now); len(ms) > 0 {
		ids := make([]string, len(ms))
		for i, s := range ms {
			ids[i] = s.id
		}
		writeVultrError(w, http.StatusBadRequest,
			"The following servers are attached to this VPC network: "+strings.Join(ids, ", "))
		return
	}
	vpc.deleted = now
	v.st.vpcList = slices.DeleteFunc(v.st.vpcList, func(x *vultrVPC) bool { return x == vpc })
	w.WriteHeader(http.StatusNoContent)
}

// vultrAttachmentJSON is one row of GET /v2/vpcs/{id}/attachments.
type vultrAttachmentJSON struct {
	ID                 string            `json:"id"`
	Type               string            `json:"type"`
	MACAddress         string            `json:"mac_address"`
	DateAdded          string            `json:"date_added"`
	IP                 map[string]string `json:"ip"`
	LinkedSubscription map[string]string `json:"linked_subscription"`
}

// listVPCAttachments serves GET /v2/vpcs/{id}/attachments, paginated.
func (v *Vultr) listVPCAttachments(w http.ResponseWriter, r *http.Request) {
	v.mu.Lock()
	now := v.clock.Now()
	vpc := v.lookupVPC(w, r)
	if vpc == nil {
		v.unlock()
		return
	}
	ms := v.members(vpc, now)
	rows := make([]vultrAttachmentJSON, 0, len(ms))
	for _, s := range ms {
		for _, a := range s.visibleAttachments(now) {
			if a.vpc != vpc {
				continue
			}
			typ := "vps"
			if s.metal {
				typ = "baremetal"
			}
			rows = append(rows, vultrAttachmentJSON{ID: s.id, Type: typ, MACAddress: a.mac,
				DateAdded: vultrTime(a.added), IP: map[string]string{"v4": a.ip},
				LinkedSubscription: map[string]string{"type": typ, "id": s.id}})
		}
	}
	v.unlock()
	if page, ok := vultrPage(w, r, "attachments", len(rows), func(i int) uint64 { return ms[i].seq },
		func(i int) vultrAttachmentJSON { return rows[i] }); ok {
		core.WriteJSON(w, http.StatusOK, page)
	}
}
