package hotaislefake

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// haExternal is the spec's ExternalService (ssh_access).
type haExternal struct {
	IPAddress string `json:"ip_address"`
	Port      int64  `json:"port"`
	DNSName   string `json:"dns_name,omitempty"`
}

// haVirtualMachine is the spec's VirtualMachine.
type haVirtualMachine struct {
	Name        string      `json:"name"`
	IPAddress   string      `json:"ip_address"`
	Description string      `json:"description"`
	SSHAccess   *haExternal `json:"ssh_access,omitempty"`
}

// haVMDetails is the spec's VirtualMachineDetails: flat, VirtualMachine and
// VirtualMachineSpecs side by side.
type haVMDetails struct {
	haVirtualMachine
	HotAisleVMSpecs
}

func (s *haServer) virtualMachine() haVirtualMachine {
	return haVirtualMachine{Name: s.name, IPAddress: s.ip, Description: s.description}
}

func (s *haServer) vmDetails() haVMDetails {
	return haVMDetails{haVirtualMachine: s.virtualMachine(), HotAisleVMSpecs: s.vmSpecs}
}

// haVMRequest is the spec's VMProvisionRequest (VirtualMachineSpecs +
// user_data_url).
type haVMRequest struct {
	HotAisleVMSpecs
	UserDataURL string `json:"user_data_url"`
}

func (h *HotAisle) availableVMs(w http.ResponseWriter, r *http.Request) {
	if !h.teamOK(w, r, false) {
		return
	}
	h.mu.Lock()
	out := append([]HotAisleVMType{}, h.st.vmTypes...)
	h.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, out)
}

func (h *HotAisle) listVMs(w http.ResponseWriter, r *http.Request) {
	if !h.teamOK(w, r, false) {
		return
	}
	lag, now := core.LagOf(r), h.clock.Now()
	h.mu.Lock()
	out := []haVMDetails{}
	for _, s := range h.st.all {
		if !s.bare && s.deleted.IsZero() && !haHidden(s, now, lag) {
			out = append(out, s.vmDetails())
		}
	}
	h.mu.Unlock()
	core.WriteJSON(w, http.StatusOK, out)
}

// provisionVM answers POST /api/teams/{team}/virtual_machines/: 200 with the
// flat VirtualMachineDetails of a VM from the first matching row with stock
// (see the matching rule in hotaisle_catalog.go). Errors: 400 for an empty
// or malformed body, 422 for wrong types, 401 "Maximum VMs already
// provisioned for this team", 402 "Insufficient balance to provision virtual
// machine" (the minimum reservation must be covered), 404 "No available
// virtual machine matching requested specifications".
func (h *HotAisle) provisionVM(w http.ResponseWriter, r *http.Request) {
	if !h.teamOK(w, r, true) {
		return
	}
	var req haVMRequest
	if !haDecode(w, r, &req) {
		return
	}
	if haEmptyVMSpecs(req.HotAisleVMSpecs) {
		haWriteError(w, http.StatusBadRequest, "")
		return
	}
	now := h.clock.Now()
	h.mu.Lock()
	s, status, msg := h.st.assignVM(req.HotAisleVMSpecs, now)
	var details haVMDetails
	if s != nil {
		details = s.vmDetails() // under the lock: a PATCH may write the description at once
	}
	h.mu.Unlock()
	if s == nil {
		haWriteError(w, status, msg)
		return
	}
	h.addVMHost(s)
	core.WriteJSON(w, http.StatusOK, details)
}

// assignVM takes a VM out of the pool for the team, or says why not.
func (st *haState) assignVM(spec HotAisleVMSpecs, now time.Time) (*haServer, int, string) {
	row := -1
	for i, t := range st.vmTypes {
		if t.Quantity > 0 && !st.unlisted[t.Plan] && haMatchVM(spec, t.Specs) {
			row = i
			break
		}
	}
	if st.countLive(false) >= st.vmLimit {
		return nil, http.StatusUnauthorized, "Maximum VMs already provisioned for this team"
	}
	if row < 0 {
		return nil, http.StatusNotFound, haMsgNoVM
	}
	t := &st.vmTypes[row]
	if !st.canAfford(now, float64(t.OnDemandPrice*t.MinimumReservationMinutes)/60) {
		return nil, http.StatusPaymentRequired, "Insufficient balance to provision virtual machine"
	}
	t.Quantity--
	s := &haServer{gen: st.gen, name: st.newVMName(), plan: t.Plan, ip: st.takeVMIP(),
		state: "running", row: row, priceCents: t.OnDemandPrice, minMinutes: t.MinimumReservationMinutes,
		created: now, sshAt: now.Add(st.sshDelay), vmSpecs: haCloneVMSpecs(t.Specs)}
	s.host = haHostOf(s.name)
	st.add(s)
	return s, 0, ""
}

// add records a newly assigned server and starts its billing.
func (st *haState) add(s *haServer) {
	st.live[s.name] = s
	st.all = append(st.all, s)
	st.spend.open(s)
	if s.bare {
		st.bms++
	} else {
		st.vms++
	}
}

func haCloneVMSpecs(s HotAisleVMSpecs) HotAisleVMSpecs {
	if s.CPUs != nil {
		c := *s.CPUs
		s.CPUs = &c
	}
	s.GPUs = append([]HotAisleGPU(nil), s.GPUs...)
	return s
}

// vm returns the live VM of the request's {vm}, or answers 404 (also to a
// read within the visibility lag of the VM's provisioning).
func (h *HotAisle) vm(w http.ResponseWriter, r *http.Request, mutation bool) *haServer {
	if !h.teamOK(w, r, mutation) {
		return nil
	}
	lag, now := core.LagOf(r), h.clock.Now()
	h.mu.Lock()
	s := h.st.liveServer(r.PathValue("vm"), false)
	if s != nil && !mutation && haHidden(s, now, lag) {
		s = nil
	}
	h.mu.Unlock()
	if s == nil {
		haWriteError(w, http.StatusNotFound, "")
	}
	return s
}

func (h *HotAisle) getVM(w http.ResponseWriter, r *http.Request) {
	if s := h.vm(w, r, false); s != nil {
		h.mu.Lock()
		d := s.vmDetails()
		h.mu.Unlock()
		core.WriteJSON(w, http.StatusOK, d)
	}
}

// haVMState is the spec's VirtualMachineState.
type haVMState struct {
	State string `json:"state"`
	Host  string `json:"host"`
}

// vmState answers GET .../{vm}/state/: {"state": "running", "host": ...} at
// once after provisioning ("shut off" after stop or while a DELETE resets
// the VM, "in shutdown" during a graceful shutdown).
func (h *HotAisle) vmState(w http.ResponseWriter, r *http.Request) {
	if s := h.vm(w, r, false); s != nil {
		now := h.clock.Now()
		h.mu.Lock()
		body := haVMState{State: s.vmState(now), Host: s.host}
		h.mu.Unlock()
		core.WriteJSON(w, http.StatusOK, body)
	}
}

// updateVM answers PATCH .../{vm}/ {"description": ...} with 204.
func (h *HotAisle) updateVM(w http.ResponseWriter, r *http.Request) {
	if s := h.vm(w, r, true); s != nil {
		h.updateDescription(w, r, s)
	}
}

// updateDescription applies a PATCH body {"description": ...} to a VM or a
// bare-metal server and answers 204.
func (h *HotAisle) updateDescription(w http.ResponseWriter, r *http.Request, s *haServer) {
	var req struct {
		Description *string `json:"description"`
	}
	if !haDecode(w, r, &req) {
		return
	}
	if req.Description != nil {
		h.mu.Lock()
		s.description = *req.Description
		h.mu.Unlock()
	}
	w.WriteHeader(http.StatusNoContent)
}

// deleteVM answers DELETE .../{vm}/[?force=true]: before the minimum
// reservation without force, 400 "server cannot be released due to minimum
// usage requirement"; otherwise billing ends, the call blocks while the VM is
// reset (WithHotAisleDeleteDelay, default 20 s of cloud time; the reset
// completes even if the request is cancelled), the VM returns to the pool and
// the answer is 204. An unknown VM answers 404. A second DELETE during the
// reset waits for it and answers 204.
func (h *HotAisle) deleteVM(w http.ResponseWriter, r *http.Request) {
	s := h.vm(w, r, true)
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
		haWriteError(w, http.StatusNotFound, "")
		return
	}
	if done := s.deleting; done != nil {
		h.mu.Unlock()
		<-done
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if !h.st.releasable(s, now, force) {
		h.mu.Unlock()
		haWriteError(w, http.StatusBadRequest, "server cannot be released due to minimum usage requirement")
		return
	}
	s.deleting = make(chan struct{})
	delay := h.st.deleteDelay
	h.mu.Unlock()
	h.removeHosts(s)
	_ = h.clock.Sleep(context.WithoutCancel(r.Context()), delay)
	h.finishDelete(s)
	w.WriteHeader(http.StatusNoContent)
}

// haForce parses the force query parameter (a boolean; absent is false).
func haForce(w http.ResponseWriter, r *http.Request) (force, ok bool) {
	v := r.URL.Query().Get("force")
	if v == "" {
		return false, true
	}
	force, err := strconv.ParseBool(v)
	if err != nil {
		haWriteError(w, http.StatusBadRequest, "")
		return false, false
	}
	return force, true
}

// releasable checks the minimum reservation and, if the release may go on,
// ends billing (marking a forced early release).
func (st *haState) releasable(s *haServer, now time.Time, force bool) bool {
	early := now.Before(s.created.Add(time.Duration(s.minMinutes) * time.Minute))
	if early && !force {
		return false
	}
	s.forced = early
	st.closeBilling(s, now)
	return true
}

// finishDelete takes the server away from the team and returns it to its
// catalog row's pool.
func (h *HotAisle) finishDelete(s *haServer) {
	now := h.clock.Now()
	h.mu.Lock()
	st := h.st
	if s.gen == st.gen && s.deleted.IsZero() {
		st.closeBilling(s, now)
		s.deleted = now
		delete(st.live, s.name)
		if s.bare {
			st.bms--
		} else {
			st.vms--
		}
		if !s.bare {
			st.releasedIPs = append(st.releasedIPs, s.ip)
		}
		if s.bare && s.row < len(st.bmTypes) {
			st.bmTypes[s.row].Quantity++
			st.returnMachine(s)
		} else if !s.bare && s.row < len(st.vmTypes) {
			st.vmTypes[s.row].Quantity++
		}
	}
	if s.deleting != nil {
		select {
		case <-s.deleting:
		default:
			close(s.deleting)
		}
	}
	h.mu.Unlock()
}
