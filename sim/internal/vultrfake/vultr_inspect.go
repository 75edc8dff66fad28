package vultrfake

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// Resources lists every server, VPC and SSH key the fake has seen, live and
// deleted, oldest first. Kind is "instance", "bare_metal", "vpc" or
// "ssh_key". State is the API's status ("pending", "active") for live
// servers, "destroying" between an accepted DELETE and the server's
// disappearance, "destroyed" after; "active" or "deleted" for VPCs and keys.
// Deleted is the time of the accepted DELETE.
func (v *Vultr) Resources() []core.Resource {
	v.mu.Lock()
	defer v.unlock()
	return v.resources(v.clock.Now())
}

// LiveResources lists the live resources of kind (KindInstance,
// KindBareMetal, KindVPC, KindSSHKey; "" for all), oldest first, read from
// the fake's own state: what an invariant check compares with what a client
// believes. A server counts as live until its DELETE is accepted.
func (v *Vultr) LiveResources(kind string) []core.Resource { return core.LiveOf(v.Resources(), kind) }

type vultrSortable struct {
	seq uint64
	r   core.Resource
}

func (v *Vultr) resources(now time.Time) []core.Resource {
	var all []vultrSortable
	for _, s := range v.st.servers {
		state := s.status(now)
		if s.gone(now) {
			state = "destroyed"
		} else if s.destroying() {
			state = "destroying"
		}
		all = append(all, vultrSortable{s.seq, core.Resource{Kind: s.kind(), ID: s.id, Name: s.hostname, Label: s.label,
			Tags: slices.Clone(s.tags), Plan: s.plan, Region: s.region, State: state, Power: s.powerStatus(),
			Created: s.created, Deleted: s.deleted}})
	}
	for _, x := range v.st.vpcs {
		all = append(all, vultrSortable{x.seq, core.Resource{Kind: "vpc", ID: x.id, Description: x.desc,
			Region: x.region, State: vultrLiveState(x.deleted), Created: x.created, Deleted: x.deleted}})
	}
	for _, k := range v.st.keys {
		all = append(all, vultrSortable{k.seq, core.Resource{Kind: "ssh_key", ID: k.id, Name: k.name,
			State: vultrLiveState(k.deleted), Created: k.created, Deleted: k.deleted}})
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if !a.r.Created.Equal(b.r.Created) {
			return a.r.Created.Before(b.r.Created)
		}
		return a.seq < b.seq
	})
	out := make([]core.Resource, len(all))
	for i, x := range all {
		out[i] = x.r
	}
	return out
}

func vultrLiveState(deleted time.Time) string {
	if deleted.IsZero() {
		return "active"
	}
	return "deleted"
}

// Ledger is the bill so far, one charge per server (VPCs and SSH keys are
// free). Vultr's rule (docs.vultr.com "How Am I Billed"): hourly_cost per
// started hour from create to the accepted DELETE (halted servers bill too),
// at least one hour; each hour counts in the calendar month (UTC) it starts
// in, and a month costs at most monthly_cost (which is 672 h, or 730 h for
// Cloud GPU, of hourly_cost). Amounts are in USD rounded to cents.
func (v *Vultr) Ledger() core.Ledger {
	v.mu.Lock()
	defer v.unlock()
	return v.ledger(v.clock.Now())
}

func (v *Vultr) ledger(now time.Time) core.Ledger {
	var servers []*vultrServer
	for _, s := range v.st.servers {
		servers = append(servers, s)
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].seq < servers[j].seq })
	var l core.Ledger
	for _, s := range servers {
		c := vultrCharge(s, now)
		l.Charges = append(l.Charges, c)
		l.TotalUSD += c.USD
	}
	l.TotalUSD = math.Round(l.TotalUSD*100) / 100
	return l
}

// vultrCharge bills one server up to now (or its DELETE): every started
// hour counts in the calendar month (UTC) it starts in, and each month costs
// at most monthly_cost.
func vultrCharge(s *vultrServer, now time.Time) core.Charge {
	c := core.Charge{ResourceID: s.id, Kind: s.kind(), Plan: s.plan, RateUSD: s.rate, From: s.created, To: now, Live: true}
	if s.destroying() {
		c.To, c.Live = s.deleted, false
	}
	hours := max(int64((c.To.Sub(c.From)+time.Hour-1)/time.Hour), 1)
	c.Billed = time.Duration(hours) * time.Hour
	// started(t) counts the billed hours starting before t.
	started := func(t time.Time) int64 {
		if !t.After(c.From) {
			return 0
		}
		return min(int64((t.Sub(c.From)+time.Hour-1)/time.Hour), hours)
	}
	monthCap := s.monthly
	if monthCap <= 0 {
		monthCap = math.Inf(1)
	}
	end := c.From.Add(c.Billed)
	f := c.From.UTC()
	usd := 0.0
	for m := time.Date(f.Year(), f.Month(), 1, 0, 0, 0, 0, time.UTC); m.Before(end); m = m.AddDate(0, 1, 0) {
		n := started(m.AddDate(0, 1, 0)) - started(m)
		usd += math.Min(float64(n)*s.rate, monthCap)
	}
	c.USD = math.Round(usd*100) / 100
	c.Description = fmt.Sprintf("%d started hour(s) at %.3f USD/h (1 h minimum), at most %.2f USD per calendar month",
		hours, s.rate, s.monthly)
	return c
}

// Snapshot returns resources, call log and ledger at one moment.
func (v *Vultr) Snapshot() core.Snapshot {
	calls := v.Calls()
	v.mu.Lock()
	defer v.unlock()
	now := v.clock.Now()
	return core.Snapshot{Time: now, Resources: v.resources(now), Calls: calls, Ledger: v.ledger(now)}
}

// Reset forgets every server, VPC, SSH key, call, fault (armed and fired),
// rate-limit bucket and runtime setting (SoldOut, SetTiming, LockWindow,
// DetachLag …), removes the SSH hosts, and rewinds the random source and
// chaos mode to their seeds. Options given to NewVultr stay.
func (v *Vultr) Reset() {
	v.mu.Lock()
	for _, s := range v.st.servers {
		v.removeHost(s)
	}
	v.st = newVultrState()
	v.unlock()
	core.ResetPipeline(v.server)
}

// VultrSeed describes a server to plant with SeedServer. The plan decides
// the kind (vbm-* is bare metal).
type VultrSeed struct {
	Plan, Region, Label, Hostname string
	Tags                          []string
	OsID                          int           // default 1743 (Ubuntu 22.04 LTS x64)
	UserData                      string        // plain cloud-config text (not base64)
	VPCs                          []string      // VPC ids to attach
	Age                           time.Duration // created this long before now
}

// SeedServer plants a server as if created Age ago (so Age beyond its
// Pending makes it active at once) and returns its id. It is validated like
// a create and fails with the API's message.
func (v *Vultr) SeedServer(s VultrSeed) (string, error) {
	req := vultrCreateReq{Region: s.Region, Plan: s.Plan, Label: s.Label, Hostname: s.Hostname,
		Tags: s.Tags, OsID: s.OsID, AttachVPC: s.VPCs}
	if req.OsID == 0 {
		req.OsID = 1743
	}
	if s.UserData != "" {
		req.UserData = base64.StdEncoding.EncodeToString([]byte(s.UserData))
	}
	v.mu.Lock()
	defer v.unlock()
	srv, vpcs, cerr := v.checkCreate(&req, vultrIsMetal(s.Plan))
	if cerr != nil {
		return "", errors.New("sim: vultr: " + cerr.msg)
	}
	now := v.clock.Now()
	v.commitServer(srv, &req, vpcs, now.Add(-s.Age), now)
	return srv.id, nil
}

// SeedVPC plants a VPC with an auto-assigned subnet and returns its id.
func (v *Vultr) SeedVPC(region, description string) (string, error) {
	v.mu.Lock()
	defer v.unlock()
	if msg := v.checkVPCCreate(vultrVPCCreateReq{Region: region}); msg != "" {
		return "", errors.New("sim: vultr: " + msg)
	}
	return v.newVPC(region, description, "", 0, v.clock.Now()).id, nil
}
