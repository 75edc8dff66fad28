package vultrfake

import (
	"fmt"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"github.com/gpufleet/gpufleet/sim/internal/sshhost"

	"golang.org/x/crypto/ssh"
	"golang.org/x/time/rate"
)

// vultrState is everything the Vultr fake remembers; Reset replaces it.
type vultrState struct {
	seq      uint64
	servers  map[string]*vultrServer // live and deleted, by id
	vpcs     map[string]*vultrVPC
	keys     map[string]*vultrKey
	usedIPs  map[[4]byte]bool // main_ip addresses handed out
	subnets  map[string]bool  // "region/10.x.y.0" of auto-assigned VPC subnets
	limiters map[string]*rate.Limiter
	squeeze  *vultrSqueeze
	soldOut  map[string]bool // "plan@region" sold out at runtime
	rules    []TimingRule
	detach   time.Duration // DetachLag

	lists    [2]*vultrList   // listed instances [0] and bare metal [1]
	vpcList  []*vultrVPC     // live VPCs by seq
	keyList  []*vultrKey     // live SSH keys by seq
	released []*vultrServer  // destroyed servers whose main_ip may be reused
	reuseIPs bool            // ReuseReleasedIPs
	listed   map[string]bool // "plan@region" sold out but still listed (SoldOutAfterListing)
}

func newVultrState() *vultrState {
	return &vultrState{servers: map[string]*vultrServer{}, vpcs: map[string]*vultrVPC{},
		keys: map[string]*vultrKey{}, usedIPs: map[[4]byte]bool{}, subnets: map[string]bool{},
		limiters: map[string]*rate.Limiter{}, soldOut: map[string]bool{},
		lists: [2]*vultrList{newVultrList(), newVultrList()}, listed: map[string]bool{}}
}

// list is the index of listed servers of the kind.
func (st *vultrState) list(metal bool) *vultrList {
	if metal {
		return st.lists[1]
	}
	return st.lists[0]
}

func (st *vultrState) next() uint64 { st.seq++; return st.seq }

// vultrSqueeze is a temporary lower rate limit (SqueezeRateLimit).
type vultrSqueeze struct {
	rps      float64
	until    time.Time
	limiters map[string]*rate.Limiter
}

// vultrServer is an instance or a bare-metal server.
type vultrServer struct {
	seq                          uint64
	metal                        bool
	id, plan, region             string
	label, hostname              string
	tags                         []string
	os                           string
	osID, appID                  int
	imageID, snapshotID          string
	userScheme, userData         string
	features                     []string
	created, deleted             time.Time
	committed                    time.Time // when the API stored it (created, unless seeded with an age)
	dateCreated, kvm             string    // date_created and kvm as shown
	invalidID                    bool      // gone: answer 400 "invalid instance ID" (DestroyOutOfBand)
	timing                       VultrTiming
	mainIP, gateway, v6Net, v6IP string
	macAddr                      int64
	password                     string
	halted                       bool
	attachments                  []*vultrAttachment
	keys                         []ssh.PublicKey
	hostAddr                     string // registered SSH host, "" when none
	sshAddr                      string // main_ip:22
	vcpu, ramMB, diskGB, bw      int
	rate, monthly                float64
	metalPlan                    *VultrMetalPlan    // bare metal: its plan
	firstHost                    sshhost.HostConfig // the SSH host as created, never changed once queued
}

func (s *vultrServer) kind() string {
	if s.metal {
		return "bare_metal"
	}
	return "instance"
}

func (s *vultrServer) activeAt() time.Time { return s.created.Add(s.timing.Pending) }
func (s *vultrServer) okAt() time.Time     { return s.activeAt().Add(s.timing.Booting) }
func (s *vultrServer) lockEnd() time.Time  { return s.activeAt().Add(s.timing.Lock) }

func (s *vultrServer) active(now time.Time) bool { return !now.Before(s.activeAt()) }

// notActive reports whether DELETE is refused as "not currently active".
func (s *vultrServer) notActive(now time.Time) bool {
	w := max(s.timing.Pending, s.timing.NotActive)
	return now.Before(s.created.Add(w))
}

func (s *vultrServer) locked(now time.Time) bool {
	return s.active(now) && now.Before(s.lockEnd())
}

// gone reports whether the server no longer exists for the API (404).
func (s *vultrServer) gone(now time.Time) bool {
	return !s.deleted.IsZero() && !now.Before(s.deleted.Add(s.timing.Destroy))
}

func (s *vultrServer) destroying() bool { return !s.deleted.IsZero() }

func (s *vultrServer) status(now time.Time) string {
	if s.active(now) {
		return "active"
	}
	return "pending"
}

func (s *vultrServer) powerStatus() string {
	if s.halted || s.destroying() {
		return "stopped"
	}
	return "running"
}

func (s *vultrServer) serverStatus(now time.Time) string {
	switch {
	case s.destroying():
		return "locked"
	case !s.active(now):
		return "none"
	case now.Before(s.okAt()):
		return "installingbooting"
	}
	return "ok"
}

// vultrVPC is a VPC (v1) network.
type vultrVPC struct {
	seq              uint64
	id, region, desc string
	subnet           string // "10.6.96.0"
	mask             int
	created, deleted time.Time
	nextHost         uint32
}

// vultrAttachment is a server's membership of a VPC.
type vultrAttachment struct {
	vpc      *vultrVPC
	ip, mac  string
	added    time.Time
	detached time.Time     // zero while attached
	lag      time.Duration // visible this long after detached (DetachLag)
}

// visible reports whether the attachment still shows at now: not detached
// (or within its detach lag), and the server not deleted longer than its
// AttachLinger ago.
func (a *vultrAttachment) visible(srv *vultrServer, now time.Time) bool {
	if !a.detached.IsZero() && !now.Before(a.detached.Add(a.lag)) {
		return false
	}
	if srv.destroying() && !now.Before(srv.deleted.Add(srv.timing.AttachLinger)) {
		return false
	}
	return true
}

// visibleAttachments lists the server's attachments that show at now.
func (s *vultrServer) visibleAttachments(now time.Time) []*vultrAttachment {
	var out []*vultrAttachment
	for _, a := range s.attachments {
		if a.visible(s, now) {
			out = append(out, a)
		}
	}
	return out
}

// internalIP is the address in the attached VPC once active; with two or
// more VPCs attached the API leaves it blank ("If instance have few private
// networks - internal_ip contains empty string", terraform-provider-vultr
// #173).
func (s *vultrServer) internalIP(now time.Time) string {
	if !s.active(now) {
		return ""
	}
	ip := ""
	for _, a := range s.attachments {
		if a.detached.IsZero() {
			if ip != "" {
				return ""
			}
			ip = a.ip
		}
	}
	return ip
}

// vultrKey is a registered SSH key.
type vultrKey struct {
	seq              uint64
	id, name, key    string
	created, deleted time.Time
}

func vultrErrNoServer(id string) error {
	return fmt.Errorf("sim: vultr has no server %q: %w", id, core.ErrNoServer)
}
