package vultrfake

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// VultrTiming is the timeline of one Vultr server, in cloud time. A server
// is created (202, status "pending"), becomes "active" after Pending, shows
// server_status "ok" Booting later, and refuses every mutation as locked for
// Lock after becoming active (server_status may already say "ok": the lock
// is not always visible, Ansible collection issue #131). A DELETE accepted
// at time d stops billing and removes the SSH host; the server stays visible
// (power_status "stopped", server_status "locked") until d+Destroy, then
// GET answers 404; its VPC attachments stay until d+AttachLinger.
type VultrTiming struct {
	// Pending is create → status "active" (VM 90 s, bare metal 40 min).
	// DELETE during it answers 500 "… not currently active …".
	Pending time.Duration
	// Booting is "active" → server_status "ok" (VM 60 s, bare metal 0).
	Booting time.Duration
	// NotActive, if longer than Pending, keeps refusing DELETE as "not
	// currently active" until this long after create (default 0).
	NotActive time.Duration
	// Lock is how long after "active" every mutation answers 500 "…
	// Server is currently locked" (default 5 min for both kinds).
	Lock time.Duration
	// Destroy is DELETE → gone (default 60 s).
	Destroy time.Duration
	// AttachLinger is how long after DELETE the server's VPC attachments
	// still show and block the VPC's deletion (default 60 s).
	AttachLinger time.Duration
	// SSHDelay is "active" → sshd accepts TCP on main_ip:22 (VM 60 s,
	// bare metal 3 min).
	SSHDelay time.Duration
}

// DefaultVultrVMTiming returns the default timing of VM and Cloud GPU plans
// (vc2, vhf, vhp, voc, vcg): active after 90 s, ok 60 s later, locked for 5
// min after active, destroyed 60 s after DELETE, sshd 60 s after active.
func DefaultVultrVMTiming() VultrTiming {
	return VultrTiming{Pending: 90 * time.Second, Booting: 60 * time.Second, Lock: 5 * time.Minute,
		Destroy: 60 * time.Second, AttachLinger: 60 * time.Second, SSHDelay: 60 * time.Second}
}

// DefaultVultrBareMetalTiming returns the default timing of bare-metal plans
// (vbm-*): active after 40 min (Terraform and dstack wait up to 55-60 min),
// locked for 5 min after active, destroyed 60 s after DELETE, sshd 3 min
// after active.
func DefaultVultrBareMetalTiming() VultrTiming {
	return VultrTiming{Pending: 40 * time.Minute, Lock: 5 * time.Minute,
		Destroy: 60 * time.Second, AttachLinger: 60 * time.Second, SSHDelay: 3 * time.Minute}
}

// TimingRule changes the timing of the plans whose id matches Pattern (a
// path.Match glob).
type TimingRule struct {
	Pattern string
	Set     func(*VultrTiming)
}

// Rule returns the rule that makes the plans matching pattern follow t. It
// panics on a malformed pattern.
func Rule(pattern string, t VultrTiming) TimingRule {
	if _, err := path.Match(pattern, ""); err != nil {
		panic(fmt.Sprintf("sim: bad plan pattern %q: %v", pattern, err))
	}
	return TimingRule{Pattern: pattern, Set: func(x *VultrTiming) { *x = t }}
}

func vultrIsMetal(plan string) bool { return strings.HasPrefix(plan, "vbm-") }

// setTiming resolves the timing of a new server of plan into t: the
// default of its kind, then every matching option rule, then every matching
// runtime rule. t is the server's own field, so that the rules' setters
// (which take a pointer) cost no allocation. Callers hold v.mu.
func (v *Vultr) setTiming(t *VultrTiming, plan string) {
	*t = DefaultVultrVMTiming()
	if vultrIsMetal(plan) {
		*t = DefaultVultrBareMetalTiming()
	}
	for _, r := range v.cfg.Rules {
		if ok, _ := path.Match(r.Pattern, plan); ok {
			r.Set(t)
		}
	}
	for _, r := range v.st.rules {
		if ok, _ := path.Match(r.Pattern, plan); ok {
			r.Set(t)
		}
	}
}

// addRule adds a runtime timing rule for servers created from now on.
func (v *Vultr) addRule(pattern string, set func(*VultrTiming)) error {
	if _, err := path.Match(pattern, ""); err != nil {
		return err
	}
	v.mu.Lock()
	v.st.rules = append(v.st.rules, TimingRule{Pattern: pattern, Set: set})
	v.unlock()
	return nil
}

// SetTiming makes servers created from now on whose plan matches pattern (a
// path.Match glob) follow t. It fails on a malformed pattern.
func (v *Vultr) SetTiming(pattern string, t VultrTiming) error {
	return v.addRule(pattern, func(x *VultrTiming) { *x = t })
}

// SetServerTiming re-times an existing server: its windows are recomputed
// from its creation time with t, and its SSH host schedule follows. It fails
// if no server has that id.
func (v *Vultr) SetServerTiming(id string, t VultrTiming) error {
	v.mu.Lock()
	defer v.unlock()
	srv := v.st.servers[id]
	if srv == nil {
		return vultrErrNoServer(id)
	}
	srv.timing = t
	if srv.deleted.IsZero() {
		v.registerHost(srv, srv.created)
	}
	return nil
}
