package hotaislefake

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"github.com/gpufleet/gpufleet/sim/internal/sshhost"
)

// addVMHost registers the VM's sshd on the network at ip_address:22, user
// "hotaisle", keys fetched live, refusing TCP until the SSH delay has passed.
func (h *HotAisle) addVMHost(s *haServer) {
	h.mu.Lock()
	cfg := sshhost.HostConfig{Addr: s.ip + ":22", InstanceID: s.name, User: HotAisleUser,
		AuthorizedKeys: h.authorizedKeys, Schedule: sshhost.HostSchedule{RefuseUntil: s.sshAt}}
	s.hostAddrs = []string{cfg.Addr}
	h.mu.Unlock()
	h.addHosts(s, cfg)
}

// addBareMetalHosts registers the server at its private ip_address:22
// (reachable only through a jump host, refusing TCP until the OS is
// installed) and its ssh_access front host at ip:port (a jump host that
// forwards to the private address), both user "hotaisle" with live keys.
func (h *HotAisle) addBareMetalHosts(s *haServer) {
	h.mu.Lock()
	private := sshhost.HostConfig{Addr: s.ip + ":22", InstanceID: s.name, KeyGeneration: s.installs,
		User: HotAisleUser, AuthorizedKeys: h.authorizedKeys, Schedule: sshhost.HostSchedule{RefuseUntil: s.sshAt},
		Private: true}
	front := sshhost.HostConfig{Addr: s.sshIP + ":" + strconv.Itoa(s.sshPort), InstanceID: s.name,
		User: HotAisleUser, AuthorizedKeys: h.authorizedKeys, Jump: true}
	s.hostAddrs = []string{private.Addr, front.Addr}
	h.mu.Unlock()
	h.addHosts(s, private, front)
}

// addHosts adds the hosts outside h.mu (the network may call back into
// authorizedKeys), unless the server went meanwhile. h.hostMu orders it
// with removeHosts and Reset: a released bare-metal server's addresses go
// to its next rental, whose hosts a late add of the old rental's must not
// replace.
func (h *HotAisle) addHosts(s *haServer, cfgs ...sshhost.HostConfig) {
	h.hostMu.Lock()
	defer h.hostMu.Unlock()
	h.mu.Lock()
	gone := s.deleting != nil || !s.deleted.IsZero() || s.gen != h.st.gen
	if gone {
		s.hostAddrs = nil
	}
	h.mu.Unlock()
	if gone {
		return
	}
	for _, c := range cfgs {
		sshhost.AddLazy(h.net, &c, nil)
	}
}

// removeHosts takes the server's SSH hosts off the network.
func (h *HotAisle) removeHosts(s *haServer) {
	h.hostMu.Lock()
	defer h.hostMu.Unlock()
	h.mu.Lock()
	addrs := s.hostAddrs
	s.hostAddrs = nil
	h.mu.Unlock()
	for _, a := range addrs {
		h.net.RemoveHost(a)
	}
}

// SetQuantity sets the Quantity of the catalog row named plan (VM or bare
// metal), undoing SoldOutAfterListing; an unknown plan is an error.
func (h *HotAisle) SetQuantity(plan string, n int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.st.unlisted, plan)
	for i := range h.st.vmTypes {
		if h.st.vmTypes[i].Plan == plan {
			h.st.vmTypes[i].Quantity = n
			return nil
		}
	}
	for i := range h.st.bmTypes {
		if h.st.bmTypes[i].Plan == plan {
			h.st.bmTypes[i].Quantity = n
			return nil
		}
	}
	return fmt.Errorf("sim: hotaisle has no catalog row %q", plan)
}

// SoldOut sets the Quantity of the row named plan to 0: the row is still
// listed, and provisioning it answers 404 "No available virtual machine
// matching requested specifications".
func (h *HotAisle) SoldOut(plan string) error { return h.SetQuantity(plan, 0) }

// SetMinimumReservation sets MinimumReservationMinutes of the row named plan
// ("" = every row) for servers assigned from now on.
func (h *HotAisle) SetMinimumReservation(plan string, minutes int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	found := false
	for i := range h.st.vmTypes {
		if plan == "" || h.st.vmTypes[i].Plan == plan {
			h.st.vmTypes[i].MinimumReservationMinutes, found = minutes, true
		}
	}
	for i := range h.st.bmTypes {
		if plan == "" || h.st.bmTypes[i].Plan == plan {
			h.st.bmTypes[i].MinimumReservationMinutes, found = minutes, true
		}
	}
	if !found {
		return fmt.Errorf("sim: hotaisle has no catalog row %q", plan)
	}
	return nil
}

// SetBalance sets the team's balance in US cents (what was charged so far is
// taken from it to give available_balance).
func (h *HotAisle) SetBalance(cents int64) {
	h.mu.Lock()
	h.st.balanceCents = cents
	h.mu.Unlock()
}

// InsufficientBalance leaves the team an available balance of 0, so the next
// provision answers 402 and the next reservation 402.
func (h *HotAisle) InsufficientBalance() {
	now := h.clock.Now()
	h.mu.Lock()
	h.st.balanceCents = int64(math.Ceil(h.st.spentCents(now) - 1e-9))
	h.mu.Unlock()
}

// SetVMLimit sets maximum_virtual_machines (a provision over it answers 401
// "Maximum VMs already provisioned for this team").
func (h *HotAisle) SetVMLimit(n int) {
	h.mu.Lock()
	h.st.vmLimit = n
	h.mu.Unlock()
}

// SetBareMetalLimit sets maximum_bare_metal_servers (a reservation over it
// answers 403 "tenant limit exceeded").
func (h *HotAisle) SetBareMetalLimit(n int) {
	h.mu.Lock()
	h.st.bmLimit = n
	h.mu.Unlock()
}

// SlowSSH sets how long after provisioning (or start) a VM's sshd accepts
// connections, for VMs provisioned or started from now on (default 90 s).
func (h *HotAisle) SlowSSH(d time.Duration) {
	h.mu.Lock()
	h.st.sshDelay = d
	h.mu.Unlock()
}

// SetDeleteDelay sets how long a VM DELETE blocks (default 20 s).
func (h *HotAisle) SetDeleteDelay(d time.Duration) {
	h.mu.Lock()
	h.st.deleteDelay = d
	h.mu.Unlock()
}

// Outage makes every route fail for d of cloud time from now: calls
// alternate between a dropped connection (a reset) and 503 "Service
// Unavailable", starting with the reset.
func (h *HotAisle) Outage(d time.Duration) {
	_ = h.Inject(core.Fault{Route: core.AnyRoute, Reset: true, Status: http.StatusServiceUnavailable,
		Message: "Service Unavailable", Duration: d})
}

// hasRow reports whether the catalog has a row named plan.
func (st *haState) hasRow(plan string) bool {
	for _, t := range st.vmTypes {
		if t.Plan == plan {
			return true
		}
	}
	for _, t := range st.bmTypes {
		if t.Plan == plan {
			return true
		}
	}
	return false
}
