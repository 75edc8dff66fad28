package hotaislefake

import (
	"fmt"
	"net/http"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// DestroyOutOfBand removes the VM or bare-metal server named name at once,
// as if someone released it behind the client's back: no
// minimum-reservation check, billing ends now, SSH hosts go, the server
// returns to the pool and the API answers 404 "Not Found: Resource not
// found" for it. An unknown name is an error.
func (h *HotAisle) DestroyOutOfBand(name string) error {
	now := h.clock.Now()
	h.mu.Lock()
	s := h.st.live[name]
	if s != nil {
		h.st.closeBilling(s, now)
	}
	h.mu.Unlock()
	if s == nil {
		return haErrNoServer(name)
	}
	h.removeHosts(s)
	h.finishDelete(s)
	return nil
}

// DeleteOutOfBand is DestroyOutOfBand.
//
// Deprecated: use DestroyOutOfBand, the name both fakes share.
func (h *HotAisle) DeleteOutOfBand(name string) error { return h.DestroyOutOfBand(name) }

// HaltOutOfBand powers a server off behind the client's back (a console
// user, or the host failing): a VM's state becomes "shut off" (POST
// …/start/ brings it back), a bare-metal server's power/ says "Off" at
// once, as after POST …/power/force_shutdown/, with any pending power-on
// cancelled (POST …/power/power_on/ brings it back). Its SSH hosts go;
// billing goes on. An unknown name is an error.
func (h *HotAisle) HaltOutOfBand(name string) error {
	h.mu.Lock()
	s := h.st.live[name]
	if s != nil && s.deleting == nil {
		if s.bare {
			s.haltBareMetal()
		} else {
			h.st.power(s, "stop", h.clock.Now())
		}
	}
	h.mu.Unlock()
	if s == nil {
		return haErrNoServer(name)
	}
	h.removeHosts(s)
	return nil
}

// RelabelOutOfBand sets the description of the VM or bare-metal server
// named name behind the client's back, as a console user would. An unknown
// name is an error.
func (h *HotAisle) RelabelOutOfBand(name, description string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.st.live[name]
	if s == nil {
		return haErrNoServer(name)
	}
	s.description = description
	return nil
}

// ReuseReleasedIPs makes VMs provisioned from now on (on true) take the
// ip_address of the most recently deleted VM first: the new VM's SSH host
// has a new host key at the old address, so a client pinning host keys by
// address sees a mismatch. false restores fresh addresses.
func (h *HotAisle) ReuseReleasedIPs(on bool) {
	h.mu.Lock()
	h.st.reuseIPs = on
	h.mu.Unlock()
}

// SoldOutAfterListing makes provisioning (or reserving) from the catalog
// row named plan find no capacity while the row still lists its Quantity,
// as when the last machine goes between a client's listing and its
// request: a VM provision answers 404 "No available virtual machine matching
// requested specifications", a reservation 404 "no available servers
// matching specifications". SetQuantity on the row undoes it. An unknown
// row is an error.
func (h *HotAisle) SoldOutAfterListing(plan string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.st.hasRow(plan) {
		return fmt.Errorf("sim: hotaisle has no catalog row %q", plan)
	}
	h.st.unlisted[plan] = true
	return nil
}

// Hot Aisle's refusals when no machine matches (the API documents a 404;
// the texts are the fake's).
const (
	haMsgNoVM = "No available virtual machine matching requested specifications"
	haMsgNoBM = "no available servers matching specifications"
)

// chaosFaultsHotAisle registers the provider refusals chaos mode answers
// (ChaosProfile.ProviderFault): provisioning and reserving finding no
// capacity after the offers listed some.
func (h *HotAisle) chaosFaultsHotAisle() {
	core.AddChaosFault(h.server, core.Fault{Route: "POST /api/teams/{team}/virtual_machines/", Status: http.StatusNotFound,
		Message: haMsgNoVM})
	core.AddChaosFault(h.server, core.Fault{Route: "POST /api/teams/{team}/bare_metal/", Status: http.StatusNotFound,
		Message: haMsgNoBM})
}

func haErrNoServer(name string) error {
	return fmt.Errorf("sim: hotaisle has no live server %q: %w", name, core.ErrNoServer)
}
