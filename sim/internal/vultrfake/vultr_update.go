package vultrfake

import (
	"net/http"
	"slices"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// vultrUpdateReq is the body of PATCH /v2/instances/{id} and
// /v2/bare-metals/{id} (govultr InstanceUpdateReq, BareMetalUpdate). A null
// or absent label or tags leaves them unchanged.
type vultrUpdateReq struct {
	Label     *string   `json:"label"`
	Tags      *[]string `json:"tags"`
	Plan      string    `json:"plan"`
	OsID      int       `json:"os_id"`
	AppID     int       `json:"app_id"`
	ImageID   string    `json:"image_id"`
	AttachVPC []string  `json:"attach_vpc"`
	DetachVPC []string  `json:"detach_vpc"`
	UserData  *string   `json:"user_data"`
}

// updateServer serves PATCH …/{id}: 202 with the server. It changes label,
// tags, user_data, and VPC membership (attach_vpc, detach_vpc, checked as
// the attach and detach routes check them). Refused: 500 "Unable to update
// server: Server is currently locked" during the lock, 500 "… pending
// destruction" after DELETE, 400 for a plan change or a reinstall (not
// simulated).
func (v *Vultr) updateServer(w http.ResponseWriter, r *http.Request, metal bool) {
	var req vultrUpdateReq
	if st, msg := core.DecodeJSON(r, &req); st != 0 {
		writeVultrError(w, st, msg)
		return
	}
	v.mu.Lock()
	defer v.unlock()
	now := v.clock.Now()
	srv := v.lookup(w, r, metal, now, "")
	if srv == nil || vultrRefuse(w, srv, now, "Unable to update server", "") {
		return
	}
	if st, msg := v.checkUpdate(srv, req, now); st != 0 {
		writeVultrError(w, st, msg)
		return
	}
	v.relabel(srv, req.Label, req.Tags)
	if req.UserData != nil {
		srv.userData = *req.UserData
	}
	for _, id := range req.DetachVPC {
		a, _, _ := v.checkDetach(srv, id)
		a.detached, a.lag = now, v.st.detach
	}
	for _, id := range req.AttachVPC {
		vpc, _, _ := v.checkAttach(srv, id, now)
		v.applyAttach(srv, vpc, now)
	}
	writeServer(w, http.StatusAccepted, srv, now, false)
}

// relabel sets the server's label and tags (nil leaves one unchanged) and
// moves it in the list indexes. Callers hold v.mu.
func (v *Vultr) relabel(srv *vultrServer, label *string, tags *[]string) {
	l := v.st.list(srv.metal)
	old := l.filterKeys(srv)
	if label != nil {
		srv.label = *label
	}
	if tags != nil {
		srv.tags = append([]string{}, (*tags)...)
	}
	l.relabel(srv, old)
}

// checkUpdate validates a PATCH before anything changes. Callers hold v.mu.
func (v *Vultr) checkUpdate(srv *vultrServer, req vultrUpdateReq, now time.Time) (int, string) {
	if req.Plan != "" && req.Plan != srv.plan {
		return http.StatusBadRequest, "Unable to change plan: plan changes are not simulated."
	}
	if req.OsID != 0 || req.AppID != 0 || req.ImageID != "" {
		return http.StatusBadRequest, "Unable to reinstall server: reinstalls are not simulated."
	}
	if (len(req.AttachVPC) > 0 || len(req.DetachVPC) > 0) && !srv.active(now) {
		return http.StatusInternalServerError, "Unable to update server: " + vultrMsgAttachPend
	}
	for i, id := range req.DetachVPC {
		if slices.Contains(req.DetachVPC[:i], id) {
			return http.StatusBadRequest, "Bad request: VPC " + id + " given twice."
		}
		if _, st, msg := v.checkDetach(srv, id); st != 0 {
			return st, msg
		}
	}
	for i, id := range req.AttachVPC {
		if slices.Contains(req.AttachVPC[:i], id) || slices.Contains(req.DetachVPC, id) {
			return http.StatusBadRequest, "Bad request: VPC " + id + " given twice."
		}
		if _, st, msg := v.checkAttach(srv, id, now); st != 0 {
			return st, msg
		}
	}
	if srv.metal && len(req.AttachVPC) > 1 {
		return http.StatusBadRequest, "Bare metal servers can attach only one VPC network."
	}
	return 0, ""
}
