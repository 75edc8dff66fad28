package hotaislefake

import (
	"net/http"
	"time"
)

// Physics of the bare-metal power routes (the spec gives no durations; these
// are the fake's).
const (
	// DefaultHotAisleBareMetalShutdownTime is how long a graceful shutdown
	// (POST …/power/graceful_shutdown/) keeps the power "On" while the
	// operating system halts, before it reads "Off".
	DefaultHotAisleBareMetalShutdownTime = 30 * time.Second
	// DefaultHotAisleBareMetalOffTime is how long a cold reboot
	// (POST …/power/cold_reboot/) keeps the power "Off" before it is "On"
	// again.
	DefaultHotAisleBareMetalOffTime = 10 * time.Second
	// DefaultHotAisleBareMetalBootTime is how long after the power comes on
	// (or a warm reboot) the server's sshd accepts connections again.
	DefaultHotAisleBareMetalBootTime = 3 * time.Minute
	// DefaultHotAisleACResetTime is how long an AC (alternating current, at
	// the mains) reset (POST …/power/ac_reset/) keeps the server's
	// management controller down: its power reads and power actions answer
	// 500 "Internal Server Error" meanwhile, and the power comes back "On"
	// at the end.
	DefaultHotAisleACResetTime = 5 * time.Minute
)

// Refusals of the bare-metal power actions (the spec documents a 400; the
// texts are the fake's).
const (
	haMsgInstalling = "Bad Request: operating system install in progress"
	haMsgPoweredOff = "Bad Request: server is powered off"
	haMsgACResetOn  = "Bad Request: server must be powered off for an AC reset"
)

// bmPowerOn and the five handlers below serve the bare-metal power actions
// as the package documentation describes them.
func (h *HotAisle) bmPowerOn(w http.ResponseWriter, r *http.Request) {
	h.powerBareMetal(w, r, "power_on")
}

func (h *HotAisle) bmGracefulShutdown(w http.ResponseWriter, r *http.Request) {
	h.powerBareMetal(w, r, "graceful_shutdown")
}

func (h *HotAisle) bmForceShutdown(w http.ResponseWriter, r *http.Request) {
	h.powerBareMetal(w, r, "force_shutdown")
}

func (h *HotAisle) bmWarmReboot(w http.ResponseWriter, r *http.Request) {
	h.powerBareMetal(w, r, "warm_reboot")
}

func (h *HotAisle) bmColdReboot(w http.ResponseWriter, r *http.Request) {
	h.powerBareMetal(w, r, "cold_reboot")
}

func (h *HotAisle) bmACReset(w http.ResponseWriter, r *http.Request) {
	h.powerBareMetal(w, r, "ac_reset")
}

func (h *HotAisle) powerBareMetal(w http.ResponseWriter, r *http.Request, op string) {
	s := h.bareMetal(w, r, true, "")
	if s == nil {
		return
	}
	now := h.clock.Now()
	h.mu.Lock()
	eff, msg := h.st.powerBareMetal(s, op, now)
	h.mu.Unlock()
	switch eff {
	case haRefused:
		haWriteError(w, http.StatusBadRequest, msg)
		return
	case haBMCDown:
		haWriteError(w, http.StatusInternalServerError, "")
		return
	case haDown:
		h.removeHosts(s)
	case haRestart:
		h.removeHosts(s)
		h.addBareMetalHosts(s)
	}
	w.WriteHeader(http.StatusNoContent)
}

// powerBareMetal applies op to bare-metal server s at now and returns its
// effect (with the refusal's message). Callers hold h.mu.
func (st *haState) powerBareMetal(s *haServer, op string, now time.Time) (haPowerEffect, string) {
	if s.bmcDown(now) {
		return haBMCDown, ""
	}
	if status, _ := s.osStatus(now, st.installTime); status != "installed" {
		return haRefused, haMsgInstalling
	}
	s.settlePower(now)
	off := s.off
	switch {
	case op == "force_shutdown":
		s.off, s.powerAt = true, time.Time{}
		return haDown, ""
	case op == "power_on" && !off:
		return haUnchanged, ""
	case op == "power_on":
		s.off, s.powerAt, s.sshAt = false, time.Time{}, now.Add(DefaultHotAisleBareMetalBootTime)
		return haRestart, ""
	case op == "ac_reset" && !off:
		return haRefused, haMsgACResetOn
	case op == "ac_reset":
		s.bmcUntil = now.Add(DefaultHotAisleACResetTime)
		s.powerAt, s.sshAt = s.bmcUntil, s.bmcUntil.Add(DefaultHotAisleBareMetalBootTime)
		return haRestart, ""
	case off:
		return haRefused, haMsgPoweredOff
	case op == "graceful_shutdown":
		if s.powerAt.IsZero() {
			s.powerAt = now.Add(DefaultHotAisleBareMetalShutdownTime)
		}
		return haDown, ""
	case op == "warm_reboot":
		s.powerAt, s.sshAt = time.Time{}, now.Add(DefaultHotAisleBareMetalBootTime)
		return haRestart, ""
	}
	s.off = true // cold_reboot
	s.powerAt = now.Add(DefaultHotAisleBareMetalOffTime)
	s.sshAt = s.powerAt.Add(DefaultHotAisleBareMetalBootTime)
	return haRestart, ""
}

// haltBareMetal powers s off at once, as force_shutdown does, whatever the
// install or the management controller are doing (HaltOutOfBand). Callers
// hold h.mu.
func (s *haServer) haltBareMetal() { s.off, s.powerAt = true, time.Time{} }

// settlePower applies the power flip pending at or before now.
func (s *haServer) settlePower(now time.Time) {
	if !s.powerAt.IsZero() && !now.Before(s.powerAt) {
		s.off, s.powerAt = !s.off, time.Time{}
	}
}

// powerOff reports whether the bare-metal power reads "Off" at now.
func (s *haServer) powerOff(now time.Time) bool {
	if !s.powerAt.IsZero() && !now.Before(s.powerAt) {
		return !s.off
	}
	return s.off
}

// bmcDown reports whether the management controller is resetting at now
// (an AC reset).
func (s *haServer) bmcDown(now time.Time) bool { return now.Before(s.bmcUntil) }
