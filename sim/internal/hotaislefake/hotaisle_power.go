package hotaislefake

import (
	"net/http"
	"time"
)

// DefaultHotAisleShutdownTime is how long a graceful shutdown
// (POST …/{vm}/shutdown/) shows the state "in shutdown" before "shut off".
const DefaultHotAisleShutdownTime = 10 * time.Second

// haMsgNotRunning refuses shutdown, reboot and hard reset of a VM that is not
// running (the spec says they act on "a running virtual machine"; the
// wording is constructed).
const haMsgNotRunning = "Bad Request: virtual machine is not running"

// Power routes of a VM (spec: startVMReq, stopVMReq, shutdownVMReq,
// rebootVMReq, hardResetVMReq), each answering 204:
//   - stop ("pulling the power") makes the state "shut off" at once;
//   - shutdown (graceful) shows "in shutdown" for DefaultHotAisleShutdownTime,
//     then "shut off";
//   - start makes a stopped VM "running";
//   - reboot (ACPI) and hard-reset keep it "running".
//
// sshd goes down with every one of them and, on a running VM, accepts
// connections again the SSH delay later (a fresh host: processes and files
// of the old boot are gone). A stopped VM keeps billing: the CLI says stop
// "Continues billing", and the fake assumes the same of shutdown (the VM
// stays assigned to the team). Shutdown, reboot and hard reset of a VM that
// is not running answer 400 "Bad Request: virtual machine is not running";
// start of a running VM and stop of a stopped one change nothing.
func (h *HotAisle) startVM(w http.ResponseWriter, r *http.Request) { h.powerVM(w, r, "start") }

func (h *HotAisle) stopVM(w http.ResponseWriter, r *http.Request) { h.powerVM(w, r, "stop") }

func (h *HotAisle) shutdownVM(w http.ResponseWriter, r *http.Request) { h.powerVM(w, r, "shutdown") }

func (h *HotAisle) rebootVM(w http.ResponseWriter, r *http.Request) { h.powerVM(w, r, "reboot") }

func (h *HotAisle) hardResetVM(w http.ResponseWriter, r *http.Request) { h.powerVM(w, r, "hard-reset") }

func (h *HotAisle) powerVM(w http.ResponseWriter, r *http.Request, op string) {
	s := h.vm(w, r, true)
	if s == nil {
		return
	}
	now := h.clock.Now()
	h.mu.Lock()
	eff := h.st.power(s, op, now)
	h.mu.Unlock()
	switch eff {
	case haRefused:
		haWriteError(w, http.StatusBadRequest, haMsgNotRunning)
		return
	case haDown:
		h.removeHosts(s)
	case haRestart:
		h.removeHosts(s)
		h.addVMHost(s)
	}
	w.WriteHeader(http.StatusNoContent)
}

// haPowerEffect is what a power operation does to a VM's sshd.
type haPowerEffect int

const (
	haUnchanged haPowerEffect = iota
	haDown                    // sshd goes away
	haRestart                 // sshd restarts, up after the SSH delay
	haRefused                 // the VM is not running (bare metal: the state refuses the action)
	haBMCDown                 // bare metal: the management controller is resetting
)

// power applies op to VM s at now. Callers hold h.mu.
func (st *haState) power(s *haServer, op string, now time.Time) haPowerEffect {
	if s.deleting != nil {
		return haUnchanged
	}
	running := s.vmState(now) == "running"
	switch {
	case op == "start" && s.state == "running", op == "stop" && s.state != "running":
		return haUnchanged
	case op == "stop":
		s.state, s.shutdownEnd = "shut off", time.Time{}
		return haDown
	case op != "start" && !running:
		return haRefused
	case op == "shutdown":
		s.state, s.shutdownEnd = "shut off", now.Add(DefaultHotAisleShutdownTime)
		return haDown
	}
	s.state, s.shutdownEnd, s.sshAt = "running", time.Time{}, now.Add(st.sshDelay) // start, reboot, hard-reset
	return haRestart
}
