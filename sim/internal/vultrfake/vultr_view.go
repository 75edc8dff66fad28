package vultrfake

import (
	"time"
)

// vultrInstanceJSON is an instance as the API shows it (vultr.md §2.2, §7.5,
// §7.6). Attached VPCs are not listed here; see /instances/{id}/vpcs.
type vultrInstanceJSON struct {
	ID               string   `json:"id"`
	Os               string   `json:"os"`
	RAM              int      `json:"ram"`
	Disk             int      `json:"disk"`
	MainIP           string   `json:"main_ip"`
	VCPUCount        int      `json:"vcpu_count"`
	Region           string   `json:"region"`
	Plan             string   `json:"plan"`
	DateCreated      string   `json:"date_created"`
	Status           string   `json:"status"`
	AllowedBandwidth int      `json:"allowed_bandwidth"`
	NetmaskV4        string   `json:"netmask_v4"`
	GatewayV4        string   `json:"gateway_v4"`
	PowerStatus      string   `json:"power_status"`
	ServerStatus     string   `json:"server_status"`
	V6Network        string   `json:"v6_network"`
	V6MainIP         string   `json:"v6_main_ip"`
	V6NetworkSize    int      `json:"v6_network_size"`
	Label            string   `json:"label"`
	InternalIP       string   `json:"internal_ip"`
	VPCOnly          bool     `json:"vpc_only"`
	KVM              string   `json:"kvm"`
	Hostname         string   `json:"hostname"`
	OsID             int      `json:"os_id"`
	AppID            int      `json:"app_id"`
	ImageID          string   `json:"image_id"`
	SnapshotID       string   `json:"snapshot_id"`
	FirewallGroupID  string   `json:"firewall_group_id"`
	Features         []string `json:"features"`
	Tags             []string `json:"tags"`
	UserScheme       string   `json:"user_scheme"`
	DefaultPassword  string   `json:"default_password,omitempty"`
}

// vultrMetalJSON is a bare-metal server as the API shows it (vultr.md §2.3,
// §7.7): ram and disk are strings, mac_address an integer. power_status and
// internal_ip are not in the SPEC but observed (ANS) or relied on (dstack).
type vultrMetalJSON struct {
	ID              string   `json:"id"`
	Os              string   `json:"os"`
	RAM             string   `json:"ram"`
	Disk            string   `json:"disk"`
	MainIP          string   `json:"main_ip"`
	CPUCount        int      `json:"cpu_count"`
	Region          string   `json:"region"`
	DefaultPassword string   `json:"default_password"`
	DateCreated     string   `json:"date_created"`
	Status          string   `json:"status"`
	PowerStatus     string   `json:"power_status"`
	NetmaskV4       string   `json:"netmask_v4"`
	GatewayV4       string   `json:"gateway_v4"`
	Plan            string   `json:"plan"`
	V6Network       string   `json:"v6_network"`
	V6MainIP        string   `json:"v6_main_ip"`
	V6NetworkSize   int      `json:"v6_network_size"`
	MacAddress      int64    `json:"mac_address"`
	Label           string   `json:"label"`
	InternalIP      string   `json:"internal_ip"`
	OsID            int      `json:"os_id"`
	AppID           int      `json:"app_id"`
	ImageID         string   `json:"image_id"`
	SnapshotID      string   `json:"snapshot_id"`
	Features        []string `json:"features"`
	Tags            []string `json:"tags"`
	UserScheme      string   `json:"user_scheme"`
}

// vultrInstanceView renders an instance. Its slices alias the server's,
// which are replaced, never changed in place, so the view may be encoded
// after v.mu is released.
func vultrInstanceView(s *vultrServer, now time.Time, password bool) vultrInstanceJSON {
	j := vultrInstanceJSON{ID: s.id, Os: s.os, RAM: s.ramMB, MainIP: "0.0.0.0", VCPUCount: s.vcpu,
		Region: s.region, Plan: s.plan, DateCreated: s.dateCreated, Status: s.status(now),
		AllowedBandwidth: s.bw, GatewayV4: "0.0.0.0", PowerStatus: s.powerStatus(),
		ServerStatus: s.serverStatus(now), Label: s.label, InternalIP: s.internalIP(now), Hostname: s.hostname,
		OsID: s.osID, AppID: s.appID, ImageID: s.imageID, SnapshotID: s.snapshotID,
		Features: s.features, Tags: s.tags, UserScheme: s.userScheme}
	if s.active(now) {
		j.Disk, j.MainIP, j.GatewayV4, j.NetmaskV4 = s.diskGB, s.mainIP, s.gateway, "255.255.254.0"
		j.KVM = s.kvm
		if s.v6Net != "" {
			j.V6Network, j.V6MainIP, j.V6NetworkSize = s.v6Net, s.v6IP, 64
		}
	}
	if password {
		j.DefaultPassword = s.password
	}
	return j
}

// vultrMetalView renders a bare-metal server (slices aliased, see
// vultrInstanceView).
func vultrMetalView(s *vultrServer, now time.Time, password bool) vultrMetalJSON {
	j := vultrMetalJSON{ID: s.id, Os: s.os, RAM: vultrMetalRAM(*s.metalPlan), Disk: vultrMetalDisk(*s.metalPlan),
		CPUCount: s.vcpu, Region: s.region, DateCreated: s.dateCreated, Status: s.status(now),
		PowerStatus: s.powerStatus(), Plan: s.plan, Label: s.label, InternalIP: s.internalIP(now),
		OsID: s.osID, AppID: s.appID, ImageID: s.imageID, SnapshotID: s.snapshotID,
		Features: s.features, Tags: s.tags, UserScheme: s.userScheme}
	if s.active(now) {
		j.MainIP, j.GatewayV4, j.NetmaskV4, j.MacAddress = s.mainIP, s.gateway, "255.255.254.0", s.macAddr
		if s.v6Net != "" {
			j.V6Network, j.V6MainIP, j.V6NetworkSize = s.v6Net, s.v6IP, 64
		}
	}
	if password {
		j.DefaultPassword = s.password
	}
	return j
}

// vultrVPCJSON is a VPC (v1) as the API shows it (vultr.md §2.4).
type vultrVPCJSON struct {
	ID           string `json:"id"`
	Region       string `json:"region"`
	Description  string `json:"description"`
	V4Subnet     string `json:"v4_subnet"`
	V4SubnetMask int    `json:"v4_subnet_mask"`
	DateCreated  string `json:"date_created"`
}

func vultrVPCView(x *vultrVPC) vultrVPCJSON {
	return vultrVPCJSON{ID: x.id, Region: x.region, Description: x.desc, V4Subnet: x.subnet,
		V4SubnetMask: x.mask, DateCreated: vultrTime(x.created)}
}

// vultrKeyJSON is an SSH key as the API shows it (vultr.md §2.5).
type vultrKeyJSON struct {
	ID          string `json:"id"`
	DateCreated string `json:"date_created"`
	Name        string `json:"name"`
	SSHKey      string `json:"ssh_key"`
}

func vultrKeyView(k *vultrKey) vultrKeyJSON {
	return vultrKeyJSON{ID: k.id, DateCreated: vultrTime(k.created), Name: k.name, SSHKey: k.key}
}
