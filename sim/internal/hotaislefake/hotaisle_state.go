package hotaislefake

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"golang.org/x/crypto/ssh"
)

// haState is everything the Hot Aisle fake holds; HotAisle.mu guards it.
type haState struct {
	gen          int // bumped by Reset, so late finishes of old deletes are dropped
	vmTypes      []HotAisleVMType
	bmTypes      []HotAisleBareMetalType
	sshDelay     time.Duration
	deleteDelay  time.Duration
	installTime  time.Duration
	vmLimit      int
	bmLimit      int
	balanceCents int64
	userRoleOnly bool

	live map[string]*haServer // live VMs and bare-metal servers by name
	vms  int                  // live VMs
	bms  int                  // live bare-metal servers
	all  []*haServer          // live and deleted, oldest first
	keys []*haKey             // live and deleted SSH keys, oldest first

	nextVM, nextBM, nextPort int
	nextVMIP, nextBMIP       netip.Addr
	spend                    haSpend
	releasedIPs              []string            // VM addresses of deleted VMs, latest last
	unlisted                 map[string]bool     // rows sold out after listing (SoldOutAfterListing)
	reuseIPs                 bool                // ReuseReleasedIPs
	bmFree                   map[int][]haMachine // released bare-metal servers by catalog row, by number
}

// haServer is one VM or bare-metal server of the team.
type haServer struct {
	gen         int
	bare        bool
	name        string
	plan        string
	description string
	ip          string // VM: public address; bare metal: private address
	sshIP       string // bare metal: the ssh_access front host
	sshPort     int
	host        string    // VM: the hypervisor named by state/
	state       string    // VM: "running" or "shut off"
	shutdownEnd time.Time // VM: "in shutdown" until then (a graceful shutdown)
	off         bool      // bare metal: powered off (until powerAt)
	powerAt     time.Time // bare metal: when the power flips; zero: no flip pending
	bmcUntil    time.Time // bare metal: the management controller resets until then
	row         int       // catalog row the server came from (returned to it on delete)
	priceCents  int64     // OnDemandPrice at provision
	minMinutes  int64     // MinimumReservationMinutes at provision
	created     time.Time
	billEnd     time.Time // when the release was accepted; zero while billing
	deleted     time.Time // when the server left the team; zero while live
	forced      bool      // released with force=true before the minimum
	sshAt       time.Time // when sshd (VM) or the OS (bare metal) is up
	deleting    chan struct{}
	hostAddrs   []string // Network addresses registered for the server
	vmSpecs     HotAisleVMSpecs
	bmSpecs     HotAisleBareMetalSpecs
	num         int // bare metal: the number in its name
	installs    int // bare metal: OS installs of the server before this rental
}

// haKey is a registered SSH key of the user.
type haKey struct {
	typ, b64, fp, comment string
	pub                   ssh.PublicKey
	created, deleted      time.Time
}

func (h *HotAisle) newState() *haState {
	hs := &h.cfg
	r := rand.New(rand.NewPCG(h.cfg.Core.Seed, h.cfg.Core.Seed^0x5851f42d4c957f2d))
	st := &haState{
		vmTypes:      append([]HotAisleVMType(nil), hs.VMTypes...),
		bmTypes:      append([]HotAisleBareMetalType(nil), hs.BareMetalTypes...),
		sshDelay:     hs.SSHDelay,
		deleteDelay:  hs.DeleteDelay,
		installTime:  hs.InstallTime,
		vmLimit:      hs.VMLimit,
		bmLimit:      hs.BareMetalLimit,
		balanceCents: hs.BalanceCents,
		userRoleOnly: hs.UserRoleOnly,
		live:         map[string]*haServer{},
		unlisted:     map[string]bool{},
		bmFree:       map[int][]haMachine{},
		nextVM:       1 + r.IntN(40),
		nextBM:       1 + r.IntN(20),
		nextPort:     22001 + r.IntN(20),
		nextVMIP:     haAddAddr(netip.AddrFrom4([4]byte{198, 18, 0, 0}), 10+r.IntN(200)),
		nextBMIP:     haAddAddr(netip.AddrFrom4([4]byte{10, 20, 4, 0}), 10+r.IntN(200)),
		spend:        haSpend{epoch: h.clock.Now()},
	}
	return st
}

// haAddAddr returns a advanced by n addresses.
func haAddAddr(a netip.Addr, n int) netip.Addr {
	for range n {
		a = a.Next()
	}
	return a
}

// haTakeAddr returns *next and advances it, skipping .0 and .255.
func haTakeAddr(next *netip.Addr) string {
	for {
		a := *next
		*next = a.Next()
		if b := a.As4(); b[3] != 0 && b[3] != 255 {
			return a.String()
		}
	}
}

// haFrontHostIP is the public address of Hot Aisle's shared SSH front host
// (ssh_access of every bare-metal server, dns_name ssh.hotaisle.cloud).
const haFrontHostIP = "198.51.100.7"

const haFrontHostDNS = "ssh.hotaisle.cloud"

func (st *haState) newVMName() string {
	n := st.nextVM
	st.nextVM++
	return fmt.Sprintf("enc1-gpuvm%03d", n)
}

// haBMName is the host name of bare-metal server number n ("enc1-gpu012").
func haBMName(n int) string { return fmt.Sprintf("enc1-gpu%03d", n) }

// haHostOf names the hypervisor of VM number n ("enc1-gpuhost07").
func haHostOf(name string) string {
	n, _ := strconv.Atoi(name[len(name)-3:])
	return fmt.Sprintf("enc1-gpuhost%02d", n%16+1)
}

// liveServer returns the live server named name of the given kind, or nil.
func (st *haState) liveServer(name string, bare bool) *haServer {
	s := st.live[name]
	if s == nil || s.bare != bare {
		return nil
	}
	return s
}

func (st *haState) countLive(bare bool) int {
	if bare {
		return st.bms
	}
	return st.vms
}

// vmState is what GET .../{vm}/state/ says at now.
func (s *haServer) vmState(now time.Time) string {
	switch {
	case s.deleting != nil:
		return "shut off"
	case s.state == "shut off" && now.Before(s.shutdownEnd):
		return "in shutdown"
	}
	return s.state
}

// power is the bare-metal power state at now ("On" or "Off").
func (s *haServer) power(now time.Time) string {
	if s.powerOff(now) {
		return "Off"
	}
	return "On"
}

// haHidden reports whether a read with visibility lag does not see s yet.
func haHidden(s *haServer, now time.Time, lag time.Duration) bool {
	return lag > 0 && now.Sub(s.created) < lag
}

// takeVMIP gives a new VM its address: a released one first when
// ReuseReleasedIPs is on, else the next fresh one.
func (st *haState) takeVMIP() string {
	if st.reuseIPs && len(st.releasedIPs) > 0 {
		ip := st.releasedIPs[len(st.releasedIPs)-1]
		st.releasedIPs = st.releasedIPs[:len(st.releasedIPs)-1]
		return ip
	}
	return haTakeAddr(&st.nextVMIP)
}

// osStatus is the bare-metal os_install_status at now and when it last
// changed: first_boot for the first half of the install time,
// first_boot_tasks for the second, then installed.
func (s *haServer) osStatus(now time.Time, install time.Duration) (string, time.Time) {
	half := install / 2
	switch {
	case now.Before(s.created.Add(half)):
		return "first_boot", s.created
	case now.Before(s.created.Add(install)):
		return "first_boot_tasks", s.created.Add(half)
	}
	return "installed", s.created.Add(install)
}

// Resources lists the fake's live and deleted resources, oldest first:
// virtual machines (Kind "virtual_machine", State "running", "shut off" or
// "deleted"), bare-metal servers (Kind "bare_metal", State the
// os_install_status or "deleted"), both with ID and Name the server name and
// Plan the catalog row's Plan (a bare-metal server reserved again is listed
// once per reservation, under the same ID); and SSH keys (Kind "ssh_key", ID the
// fingerprint, Name the comment, Description the key type). Region is
// HotAisleRegion.
func (h *HotAisle) Resources() []core.Resource {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	st := h.st
	out := make([]core.Resource, 0, len(st.all)+len(st.keys))
	for _, s := range st.all {
		out = append(out, s.resource(now, st.installTime))
	}
	for _, k := range st.keys {
		out = append(out, core.Resource{Kind: "ssh_key", ID: k.fp, Name: k.comment, Description: k.typ,
			Region: HotAisleRegion, State: haLiveState(k.deleted, "active"), Created: k.created,
			Deleted: k.deleted})
	}
	slices.SortStableFunc(out, func(a, b core.Resource) int { return a.Created.Compare(b.Created) })
	return out
}

// LiveResources lists the live resources of kind (KindVirtualMachine,
// KindBareMetal, KindSSHKey; "" for all), oldest first, read from the fake's
// own state. A server counts as live until it left the team (a VM's DELETE
// returned).
func (h *HotAisle) LiveResources(kind string) []core.Resource {
	return core.LiveOf(h.Resources(), kind)
}

func haLiveState(deleted time.Time, state string) string {
	if !deleted.IsZero() {
		return "deleted"
	}
	return state
}

func (s *haServer) resource(now time.Time, install time.Duration) core.Resource {
	r := core.Resource{Kind: "virtual_machine", ID: s.name, Name: s.name, Description: s.description,
		Plan: s.plan, Region: HotAisleRegion, Created: s.created, Deleted: s.deleted}
	if s.bare {
		r.Kind = "bare_metal"
		r.State, _ = s.osStatus(now, install)
	} else {
		r.State = s.vmState(now)
	}
	r.Power = r.State
	if s.bare {
		r.Power = s.power(now)
	}
	r.State = haLiveState(s.deleted, r.State)
	return r
}

// Snapshot returns the resources, call log and ledger at one moment.
func (h *HotAisle) Snapshot() core.Snapshot {
	return core.Snapshot{Time: h.clock.Now(), Resources: h.Resources(), Calls: h.Calls(), Ledger: h.Ledger()}
}

// Reset returns the fake to its state after NewHotAisle: no servers, no SSH
// keys, the catalog, limits, balance and delays of the options, no faults
// (armed or fired), chaos mode back at its seed, an empty call log, names and addresses restarting from the seed. SSH hosts of
// the removed servers leave the network. A DELETE still blocking finishes
// without effect.
func (h *HotAisle) Reset() {
	h.hostMu.Lock()
	defer h.hostMu.Unlock()
	h.mu.Lock()
	old := h.st
	h.st = h.newState()
	h.st.gen = old.gen + 1
	var addrs []string
	for _, s := range old.live {
		addrs = append(addrs, s.hostAddrs...)
	}
	h.mu.Unlock()
	for _, a := range addrs {
		h.net.RemoveHost(a)
	}
	core.ResetPipeline(h.server)
}
