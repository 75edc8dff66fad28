package vultrfake

import (
	"encoding/base64"
	"net/http"
	"slices"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// vultrCreateReq is the body of POST /v2/instances and POST /v2/bare-metals
// (vultr.md §2.2, §2.3). Unknown keys are ignored, null is accepted where
// govultr always sends the key.
type vultrCreateReq struct {
	Region     string   `json:"region"`
	Plan       string   `json:"plan"`
	Label      string   `json:"label"`
	Hostname   string   `json:"hostname"`
	Tags       []string `json:"tags"`
	Tag        string   `json:"tag"` // deprecated single tag
	OsID       int      `json:"os_id"`
	ISOID      string   `json:"iso_id"`
	AppID      int      `json:"app_id"`
	ImageID    string   `json:"image_id"`
	SnapshotID string   `json:"snapshot_id"`
	EnableIPv6 bool     `json:"enable_ipv6"`
	EnableVPC  bool     `json:"enable_vpc"`
	AttachVPC  []string `json:"attach_vpc"`
	SSHKeyIDs  []string `json:"sshkey_id"`
	Backups    string   `json:"backups"`
	DDOS       bool     `json:"ddos_protection"`
	UserData   string   `json:"user_data"`
	UserScheme string   `json:"user_scheme"`
}

// vultrOSNames are the operating systems os_id may name (Vultr's ids).
var vultrOSNames = map[int]string{
	387: "Ubuntu 20.04 LTS x64", 1743: "Ubuntu 22.04 LTS x64", 2284: "Ubuntu 24.04 LTS x64",
	477: "Debian 11 x64 (bullseye)", 2136: "Debian 12 x64 (bookworm)", 542: "CentOS 9 Stream x64",
	1869: "Rocky Linux 9 x64", 1868: "AlmaLinux 9 x64", 159: "Custom", 164: "Snapshot", 186: "Application",
}

// vultrCreateErr is a refused create: status and message.
type vultrCreateErr struct {
	status int
	msg    string
}

func vultrBadRequest(msg string) *vultrCreateErr { return &vultrCreateErr{http.StatusBadRequest, msg} }

// createServer serves POST /v2/instances and POST /v2/bare-metals: 202 with
// the new server (status "pending", default_password set) under "instance"
// or "bare_metal". Refusals (400 unless noted): missing region or plan,
// unknown region, "Invalid plan chosen." (unknown plan, or a plan of the
// other endpoint), a plan not offered in the region, a sold-out plan ("Plan
// is not available in the selected region."), zero or several boot sources,
// an unknown os_id, user_data that is not base64, an unknown SSH key, an
// unknown VPC (404 "Invalid VPC ID."), a VPC of another region, a plan
// without private networking given a VPC ("This plan does not support
// private networking.").
func (v *Vultr) createServer(w http.ResponseWriter, r *http.Request, metal bool) {
	var req vultrCreateReq
	data, bp, st, msg := core.ReadBody(r)
	if st == 0 {
		if err := decodeCreate(data, &req); err != nil {
			st, msg = http.StatusBadRequest, "Malformed JSON: "+err.Error()
		}
	}
	core.PutBody(bp, data)
	if st != 0 {
		writeVultrError(w, st, msg)
		return
	}
	v.mu.Lock()
	defer v.unlock()
	now := v.clock.Now()
	srv, vpcs, cerr := v.checkCreate(&req, metal)
	if cerr != nil {
		writeVultrError(w, cerr.status, cerr.msg)
		return
	}
	v.commitServer(srv, &req, vpcs, now, now)
	writeServer(w, http.StatusAccepted, srv, now, true)
}

// checkCreate validates req and returns the server to create (without id,
// addresses or timing) and the VPCs to attach. Callers hold v.mu.
func (v *Vultr) checkCreate(req *vultrCreateReq, metal bool) (*vultrServer, []*vultrVPC, *vultrCreateErr) {
	srv := &vultrServer{metal: metal, region: req.Region, plan: req.Plan, label: req.Label}
	if cerr := v.checkPlace(srv); cerr != nil {
		return nil, nil, cerr
	}
	if cerr := vultrCheckBoot(srv, req); cerr != nil {
		return nil, nil, cerr
	}
	if req.UserData != "" {
		data, err := base64.StdEncoding.DecodeString(req.UserData)
		if err != nil {
			return nil, nil, vultrBadRequest("Invalid user_data: it must be base64 encoded.")
		}
		srv.userData = req.UserData
		srv.keys = vultrCloudConfigKeys(string(data))
	}
	for _, id := range req.SSHKeyIDs {
		k := v.st.keys[id]
		if k == nil || !k.deleted.IsZero() {
			return nil, nil, vultrBadRequest("Invalid SSH key ID: " + id)
		}
		if pk, err := vultrParseKey(k.key); err == nil {
			srv.keys = append(srv.keys, pk)
		}
	}
	switch req.UserScheme {
	case "", "root", "limited":
	default:
		return nil, nil, vultrBadRequest("Invalid user_scheme: must be root or limited.")
	}
	vpcs, cerr := v.checkVPCs(srv, req)
	if cerr != nil {
		return nil, nil, cerr
	}
	return srv, vpcs, nil
}

// checkPlace validates region and plan and fills the plan's shape.
func (v *Vultr) checkPlace(srv *vultrServer) *vultrCreateErr {
	cat := &v.cfg.Catalog
	switch {
	case srv.region == "":
		return vultrBadRequest("Bad request: region is required.")
	case srv.plan == "":
		return vultrBadRequest("Bad request: plan is required.")
	}
	if _, ok := cat.region(srv.region); !ok {
		return vultrBadRequest("Invalid region.")
	}
	var locs []string
	if srv.metal {
		p, ok := cat.metalPlan(srv.plan)
		if !ok {
			return vultrBadRequest("Invalid plan chosen.")
		}
		srv.metalPlan, locs = &p, p.Locations
		srv.vcpu, srv.ramMB, srv.diskGB, srv.bw = p.CPUCount, p.RAM, p.Disk*p.DiskCount, p.Bandwidth
		srv.rate, srv.monthly = p.HourlyCost, p.MonthlyCost
	} else {
		p, ok := cat.plan(srv.plan)
		if !ok {
			return vultrBadRequest("Invalid plan chosen.")
		}
		locs = p.Locations
		srv.vcpu, srv.ramMB, srv.diskGB, srv.bw = p.VCPUCount, p.RAM, p.Disk, p.Bandwidth
		srv.rate, srv.monthly = p.HourlyCost, p.MonthlyCost
	}
	if !slices.Contains(locs, srv.region) {
		return vultrBadRequest("Plan is not offered in the selected region.")
	}
	if !v.planAvailable(srv.plan, srv.region) {
		return vultrBadRequest(vultrMsgSoldOut)
	}
	return nil
}

// vultrCheckBoot requires exactly one boot source and names the OS.
func vultrCheckBoot(srv *vultrServer, req *vultrCreateReq) *vultrCreateErr {
	n := 0
	for _, set := range []bool{req.OsID != 0, req.ISOID != "", req.SnapshotID != "", req.AppID != 0, req.ImageID != ""} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return vultrBadRequest("Bad request: one of os_id, iso_id, snapshot_id, app_id or image_id is required.")
	case n > 1:
		return vultrBadRequest("Bad request: give only one of os_id, iso_id, snapshot_id, app_id or image_id.")
	}
	switch {
	case req.OsID != 0:
		name, ok := vultrOSNames[req.OsID]
		if !ok {
			return vultrBadRequest("Invalid os_id.")
		}
		srv.os, srv.osID = name, req.OsID
	case req.ISOID != "":
		srv.os, srv.osID = "Custom", 159
	case req.SnapshotID != "":
		srv.os, srv.osID, srv.snapshotID = "Snapshot", 164, req.SnapshotID
	default:
		srv.os, srv.osID, srv.appID, srv.imageID = "Application", 186, req.AppID, req.ImageID
	}
	return nil
}

// checkVPCs resolves attach_vpc (enable_vpc alone picks the region's oldest
// VPC at commit, or creates one). Bare metal honours attach_vpc too (dstack
// relies on it), one VPC at most.
func (v *Vultr) checkVPCs(srv *vultrServer, req *vultrCreateReq) ([]*vultrVPC, *vultrCreateErr) {
	var out []*vultrVPC
	for _, id := range req.AttachVPC {
		vpc := v.st.vpcs[id]
		if vpc == nil || !vpc.deleted.IsZero() {
			return nil, &vultrCreateErr{http.StatusNotFound, "Invalid VPC ID."}
		}
		if vpc.region != srv.region {
			return nil, vultrBadRequest("The VPC network is in a different region than the server.")
		}
		if !vultrHasFree(vpc) {
			return nil, vultrBadRequest("Unable to attach VPC: the VPC network has no free address.")
		}
		if !slices.Contains(out, vpc) {
			out = append(out, vpc)
		}
	}
	if (len(out) > 0 || req.EnableVPC) && v.noPrivateNetwork(srv) {
		return nil, vultrBadRequest("This plan does not support private networking.")
	}
	if srv.metal && len(out) > 1 {
		return nil, vultrBadRequest("Bare metal servers can attach only one VPC network.")
	}
	if len(out) == 0 && req.EnableVPC {
		out = append(out, nil) // resolved at commit
	}
	return out, nil
}

// noPrivateNetwork reports whether the server's plan cannot join a VPC.
func (v *Vultr) noPrivateNetwork(srv *vultrServer) bool {
	if srv.metal {
		return srv.metalPlan.NoPrivateNetwork
	}
	p, _ := v.cfg.Catalog.plan(srv.plan)
	return p.NoPrivateNetwork
}

// vultrKVMPrefix is the kvm URL of a server without its id.
const vultrKVMPrefix = "https://my.vultr.com/subs/vps/novnc/api.php?data="

// commitServer stores a validated server created at created (now, unless
// seeded with an age) and committed now: id, addresses, timing, VPC
// attachments and SSH host. Callers hold v.mu.
func (v *Vultr) commitServer(srv *vultrServer, req *vultrCreateReq, vpcs []*vultrVPC, created, now time.Time) {
	srv.seq, srv.created, srv.committed = v.st.next(), created, now
	v.setTiming(&srv.timing, srv.plan)
	srv.hostname = vultrFirstNonEmpty(req.Hostname, req.Label, "vultr.guest")
	srv.tags = append([]string{}, req.Tags...)
	if req.Tag != "" && !slices.Contains(srv.tags, req.Tag) {
		srv.tags = append(srv.tags, req.Tag)
	}
	srv.userScheme = vultrFirstNonEmpty(req.UserScheme, "root")
	srv.features = vultrFeatures(req)
	v.setStrings(srv, req.EnableIPv6, created)
	for _, vpc := range vpcs {
		if vpc == nil {
			vpc = v.regionVPC(srv.region, created)
		}
		srv.attachments = append(srv.attachments, v.newAttachment(vpc, created))
	}
	v.st.servers[srv.id] = srv
	v.st.list(srv.metal).add(srv)
	v.registerHost(srv, srv.created)
}

// setStrings draws the server's id, addresses and password (in that order
// from the seeded source) and sets them with kvm, date_created and the SSH
// address, all slices of one string: one allocation, not seven.
func (v *Vultr) setStrings(srv *vultrServer, ipv6 bool, now time.Time) {
	var buf [256]byte
	b := append(buf[:0], vultrKVMPrefix...)
	b = v.appendUUID(b)
	kvm := len(b)
	b = vultrAppendTime(b, now)
	date := len(b)
	ip, gw := v.assignAddresses(srv, ipv6)
	b = ip.AppendTo(b)
	mainIP := len(b)
	b = append(b, ":22"...)
	ssh := len(b)
	b = gw.AppendTo(b)
	gateway := len(b)
	b = v.appendPassword(b)
	all := string(b)
	srv.kvm, srv.id = all[:kvm], all[len(vultrKVMPrefix):kvm]
	srv.dateCreated = all[kvm:date]
	srv.mainIP, srv.sshAddr = all[date:mainIP], all[date:ssh]
	srv.gateway, srv.password = all[ssh:gateway], all[gateway:]
}

// vultrFeatures are the features a create asks for, in the API's order.
func vultrFeatures(req *vultrCreateReq) []string {
	features := []string{}
	if req.EnableIPv6 {
		features = append(features, "ipv6")
	}
	if req.Backups == "enabled" {
		features = append(features, "auto_backups")
	}
	if req.DDOS {
		features = append(features, "ddos_protection")
	}
	return features
}

func vultrFirstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
