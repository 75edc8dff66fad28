package hotaislefake

import (
	"net/http"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// haBareMetalServer is the spec's BareMetalServer.
type haBareMetalServer struct {
	Name                 string      `json:"name"`
	IPAddress            string      `json:"ip_address"`
	Manufacturer         string      `json:"manufacturer"`
	Model                string      `json:"model"`
	Description          string      `json:"description"`
	SSHAccess            *haExternal `json:"ssh_access,omitempty"`
	SupportAccessEnabled bool        `json:"support_access_enabled"`
}

// haOSStatus is the spec's BareMetalServerlOSStatus.
type haOSStatus struct {
	OSSelection       string `json:"os_selection"`
	OSInstallStatus   string `json:"os_install_status"`
	LastImagingUpdate string `json:"last_imaging_update"`
}

// haBMDetails is the spec's BareMetalServerDetails (and, with the same flat
// shape, BareMetalServerReservationResponse).
type haBMDetails struct {
	haBareMetalServer
	HotAisleBareMetalSpecs
	OSStatus haOSStatus `json:"os_status"`
}

func (s *haServer) bareMetalServer() haBareMetalServer {
	return haBareMetalServer{Name: s.name, IPAddress: s.ip, Manufacturer: "Dell", Model: "PowerEdge XE9680",
		Description: s.description,
		SSHAccess:   &haExternal{IPAddress: s.sshIP, Port: int64(s.sshPort), DNSName: haFrontHostDNS}}
}

func (s *haServer) bmDetails(now time.Time, install time.Duration) haBMDetails {
	status, since := s.osStatus(now, install)
	return haBMDetails{haBareMetalServer: s.bareMetalServer(), HotAisleBareMetalSpecs: s.bmSpecs,
		OSStatus: haOSStatus{OSSelection: "ubuntu-2404.4", OSInstallStatus: status,
			LastImagingUpdate: haTime(since)}}
}

func (h *HotAisle) availableBareMetal(w http.ResponseWriter, r *http.Request) {
	if !h.teamOK(w, r, false) {
		return
	}
	h.mu.Lock()
	out := append([]HotAisleBareMetalType{}, h.st.bmTypes...)
	h.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, out)
}

func (h *HotAisle) listBareMetal(w http.ResponseWriter, r *http.Request) {
	if !h.teamOK(w, r, false) {
		return
	}
	lag, now := core.LagOf(r), h.clock.Now()
	h.mu.Lock()
	out := []haBMDetails{}
	for _, s := range h.st.all {
		if s.bare && s.deleted.IsZero() && !haHidden(s, now, lag) {
			out = append(out, s.bmDetails(now, h.st.installTime))
		}
	}
	h.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, out)
}

// reserveBareMetal answers POST /api/teams/{team}/bare_metal/
// {"description", "specs": {...}}: 201 with the flat reservation response;
// 8 hours (the minimum) are charged at once. Errors: 400 "invalid
// specifications" when specs is missing or empty (400 also for malformed
// JSON), 422 for wrong types, 403 "tenant limit exceeded", 402 "insufficient
// balance", 404 "no available servers matching specifications".
func (h *HotAisle) reserveBareMetal(w http.ResponseWriter, r *http.Request) {
	if !h.teamOK(w, r, true) {
		return
	}
	var req struct {
		Description string                  `json:"description"`
		Specs       *HotAisleBareMetalSpecs `json:"specs"`
	}
	if !haDecode(w, r, &req) {
		return
	}
	if req.Specs == nil || haEmptyBareMetalSpecs(*req.Specs) {
		haWriteError(w, http.StatusBadRequest, "invalid specifications")
		return
	}
	now := h.clock.Now()
	h.mu.Lock()
	s, status, msg := h.st.assignBareMetal(*req.Specs, now)
	var d haBMDetails
	if s != nil {
		s.description = req.Description
		d = s.bmDetails(now, h.st.installTime)
	}
	h.mu.Unlock()
	if s == nil {
		haWriteError(w, status, msg)
		return
	}
	h.addBareMetalHosts(s)
	core.WriteJSON(w, http.StatusCreated, d)
}

func (st *haState) assignBareMetal(spec HotAisleBareMetalSpecs, now time.Time) (*haServer, int, string) {
	row := -1
	for i, t := range st.bmTypes {
		if t.Quantity > 0 && !st.unlisted[t.Plan] && haMatchBareMetal(spec, t.Specs) {
			row = i
			break
		}
	}
	if st.countLive(true) >= st.bmLimit {
		return nil, http.StatusForbidden, "tenant limit exceeded"
	}
	if row < 0 {
		return nil, http.StatusNotFound, haMsgNoBM
	}
	t := &st.bmTypes[row]
	if !st.canAfford(now, float64(t.OnDemandPrice*t.MinimumReservationMinutes)/60) {
		return nil, http.StatusPaymentRequired, "insufficient balance"
	}
	t.Quantity--
	m := st.takeMachine(row)
	s := &haServer{gen: st.gen, bare: true, name: m.name, num: m.num, installs: m.installs, plan: t.Plan,
		ip: m.ip, sshIP: haFrontHostIP, sshPort: m.port, row: row,
		priceCents: t.OnDemandPrice, minMinutes: t.MinimumReservationMinutes, created: now,
		sshAt: now.Add(st.installTime), bmSpecs: haCloneBMSpecs(t.Specs)}
	st.add(s)
	return s, 0, ""
}

func haCloneBMSpecs(s HotAisleBareMetalSpecs) HotAisleBareMetalSpecs {
	s.CPUs = append([]HotAisleCPU(nil), s.CPUs...)
	s.Disks = append([]HotAisleDisk(nil), s.Disks...)
	s.GPUs = append([]HotAisleGPU(nil), s.GPUs...)
	s.MemoryModules = append([]HotAisleMemoryModule(nil), s.MemoryModules...)
	return s
}

// bareMetal returns the live server of the request's {server}, or answers
// 404 with msg (also to a read within the visibility lag of its
// reservation).
func (h *HotAisle) bareMetal(w http.ResponseWriter, r *http.Request, mutation bool, msg string) *haServer {
	if !h.teamOK(w, r, mutation) {
		return nil
	}
	lag, now := core.LagOf(r), h.clock.Now()
	h.mu.Lock()
	s := h.st.liveServer(r.PathValue("server"), true)
	if s != nil && !mutation && haHidden(s, now, lag) {
		s = nil
	}
	h.mu.Unlock()
	if s == nil {
		haWriteError(w, http.StatusNotFound, msg)
	}
	return s
}

func (h *HotAisle) getBareMetal(w http.ResponseWriter, r *http.Request) {
	if s := h.bareMetal(w, r, false, ""); s != nil {
		now := h.clock.Now()
		h.mu.Lock()
		d := s.bmDetails(now, h.st.installTime)
		h.mu.Unlock()
		core.WriteJSON(w, http.StatusOK, d)
	}
}

// bareMetalPower answers GET .../{server}/power/ with {"state": "On"} or
// {"state": "Off"} (after a shutdown or HaltOutOfBand), and 500 "Internal
// Server Error" while an AC reset keeps the management controller down.
func (h *HotAisle) bareMetalPower(w http.ResponseWriter, r *http.Request) {
	s := h.bareMetal(w, r, false, "")
	if s == nil {
		return
	}
	now := h.clock.Now()
	h.mu.Lock()
	state, down := s.power(now), s.bmcDown(now)
	h.mu.Unlock()
	if down {
		haWriteError(w, http.StatusInternalServerError, "")
		return
	}
	core.WriteJSON(w, http.StatusOK, map[string]string{"state": state})
}

// updateBareMetal answers PATCH .../{server}/ {"description": ...} with 204.
func (h *HotAisle) updateBareMetal(w http.ResponseWriter, r *http.Request) {
	if s := h.bareMetal(w, r, true, ""); s != nil {
		h.updateDescription(w, r, s)
	}
}

// releaseBareMetal answers DELETE .../{server}/[?force=true]: 204 at once;
// before the minimum reservation (480 min) without force, 400 "server cannot
// be released due to minimum usage requirement"; with force the minimum stays
// charged. An unknown server answers 404 "server not found or not assigned to
// team".
func (h *HotAisle) releaseBareMetal(w http.ResponseWriter, r *http.Request) {
	s := h.bareMetal(w, r, true, "server not found or not assigned to team")
	if s == nil {
		return
	}
	force, ok := haForce(w, r)
	if !ok {
		return
	}
	now := h.clock.Now()
	h.mu.Lock()
	if !s.deleted.IsZero() {
		h.mu.Unlock()
		haWriteError(w, http.StatusNotFound, "server not found or not assigned to team")
		return
	}
	released := h.st.releasable(s, now, force)
	h.mu.Unlock()
	if !released {
		haWriteError(w, http.StatusBadRequest, "server cannot be released due to minimum usage requirement")
		return
	}
	h.removeHosts(s)
	h.finishDelete(s)
	w.WriteHeader(http.StatusNoContent)
}
