package vultrfake

import (
	"encoding/json"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// AppendJSON writes the instance as encoding/json would (see
// TestVultrViewsEncodeLikeEncodingJSON). The values the fake generates
// (identifiers, addresses, dates, statuses, the OS name, the password) need
// no escaping and are written as they are; those a client or a catalog
// gives (region, plan, label, hostname, tags, ...) are escaped as needed.
func (j *vultrInstanceJSON) AppendJSON(dst []byte) []byte {
	b := core.SafeField(dst, `{"id":`, j.ID)
	b = core.SafeField(b, `,"os":`, j.Os)
	b = core.NumField(b, `,"ram":`, int64(j.RAM))
	b = core.NumField(b, `,"disk":`, int64(j.Disk))
	b = core.SafeField(b, `,"main_ip":`, j.MainIP)
	b = core.NumField(b, `,"vcpu_count":`, int64(j.VCPUCount))
	b = core.StrField(b, `,"region":`, j.Region)
	b = core.StrField(b, `,"plan":`, j.Plan)
	b = core.SafeField(b, `,"date_created":`, j.DateCreated)
	b = core.SafeField(b, `,"status":`, j.Status)
	b = core.NumField(b, `,"allowed_bandwidth":`, int64(j.AllowedBandwidth))
	b = core.SafeField(b, `,"netmask_v4":`, j.NetmaskV4)
	b = core.SafeField(b, `,"gateway_v4":`, j.GatewayV4)
	b = core.SafeField(b, `,"power_status":`, j.PowerStatus)
	b = core.SafeField(b, `,"server_status":`, j.ServerStatus)
	b = core.SafeField(b, `,"v6_network":`, j.V6Network)
	b = core.SafeField(b, `,"v6_main_ip":`, j.V6MainIP)
	b = core.NumField(b, `,"v6_network_size":`, int64(j.V6NetworkSize))
	b = core.StrField(b, `,"label":`, j.Label)
	b = core.SafeField(b, `,"internal_ip":`, j.InternalIP)
	b = core.BoolField(b, `,"vpc_only":`, j.VPCOnly)
	b = core.SafeField(b, `,"kvm":`, j.KVM)
	b = core.StrField(b, `,"hostname":`, j.Hostname)
	b = core.NumField(b, `,"os_id":`, int64(j.OsID))
	b = core.NumField(b, `,"app_id":`, int64(j.AppID))
	b = core.StrField(b, `,"image_id":`, j.ImageID)
	b = core.StrField(b, `,"snapshot_id":`, j.SnapshotID)
	b = core.StrField(b, `,"firewall_group_id":`, j.FirewallGroupID)
	b = core.StrsField(b, `,"features":`, j.Features)
	b = core.StrsField(b, `,"tags":`, j.Tags)
	b = core.SafeField(b, `,"user_scheme":`, j.UserScheme)
	if j.DefaultPassword != "" {
		b = core.SafeField(b, `,"default_password":`, j.DefaultPassword)
	}
	return append(b, '}')
}

// AppendJSON writes the bare-metal server as encoding/json would.
func (j *vultrMetalJSON) AppendJSON(dst []byte) []byte {
	b := core.SafeField(dst, `{"id":`, j.ID)
	b = core.SafeField(b, `,"os":`, j.Os)
	b = core.StrField(b, `,"ram":`, j.RAM)
	b = core.StrField(b, `,"disk":`, j.Disk)
	b = core.SafeField(b, `,"main_ip":`, j.MainIP)
	b = core.NumField(b, `,"cpu_count":`, int64(j.CPUCount))
	b = core.StrField(b, `,"region":`, j.Region)
	b = core.SafeField(b, `,"default_password":`, j.DefaultPassword)
	b = core.SafeField(b, `,"date_created":`, j.DateCreated)
	b = core.SafeField(b, `,"status":`, j.Status)
	b = core.SafeField(b, `,"power_status":`, j.PowerStatus)
	b = core.SafeField(b, `,"netmask_v4":`, j.NetmaskV4)
	b = core.SafeField(b, `,"gateway_v4":`, j.GatewayV4)
	b = core.StrField(b, `,"plan":`, j.Plan)
	b = core.SafeField(b, `,"v6_network":`, j.V6Network)
	b = core.SafeField(b, `,"v6_main_ip":`, j.V6MainIP)
	b = core.NumField(b, `,"v6_network_size":`, int64(j.V6NetworkSize))
	b = core.NumField(b, `,"mac_address":`, j.MacAddress)
	b = core.StrField(b, `,"label":`, j.Label)
	b = core.SafeField(b, `,"internal_ip":`, j.InternalIP)
	b = core.NumField(b, `,"os_id":`, int64(j.OsID))
	b = core.NumField(b, `,"app_id":`, int64(j.AppID))
	b = core.StrField(b, `,"image_id":`, j.ImageID)
	b = core.StrField(b, `,"snapshot_id":`, j.SnapshotID)
	b = core.StrsField(b, `,"features":`, j.Features)
	b = core.StrsField(b, `,"tags":`, j.Tags)
	b = core.SafeField(b, `,"user_scheme":`, j.UserScheme)
	return append(b, '}')
}

// vultrServerJSON is one server as the API shows it: an instance or a bare
// metal server.
type vultrServerJSON struct {
	inst  *vultrInstanceJSON
	metal *vultrMetalJSON
}

// view renders the server at now; password only in the create answer.
func vultrView(s *vultrServer, now time.Time, password bool) vultrServerJSON {
	if s.metal {
		j := vultrMetalView(s, now, password)
		return vultrServerJSON{metal: &j}
	}
	j := vultrInstanceView(s, now, password)
	return vultrServerJSON{inst: &j}
}

func (v vultrServerJSON) AppendJSON(dst []byte) []byte {
	if v.metal != nil {
		return v.metal.AppendJSON(dst)
	}
	return v.inst.AppendJSON(dst)
}

// vultrAppendAnswer appends the server at now wrapped under its kind's key
// ({"instance": {...}} or {"bare_metal": {...}}), its view on the stack.
func vultrAppendAnswer(dst []byte, s *vultrServer, now time.Time, password bool) []byte {
	if s.metal {
		j := vultrMetalView(s, now, password)
		return append(j.AppendJSON(append(dst, `{"bare_metal":`...)), '}')
	}
	j := vultrInstanceView(s, now, password)
	return append(j.AppendJSON(append(dst, `{"instance":`...)), '}')
}

// MarshalJSON writes the server (for encoding/json users of the view).
func (v vultrServerJSON) MarshalJSON() ([]byte, error) { return v.AppendJSON(nil), nil }

// AppendJSON writes {"<name>": [...], "meta": {...}}, the items with their
// own appendJSON when they have one.
func (l vultrListJSON[T]) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"`...)
	dst = append(dst, l.name...)
	dst = append(dst, `":[`...)
	for i, it := range l.items {
		if i > 0 {
			dst = append(dst, ',')
		}
		if a, ok := any(it).(core.JSONAppender); ok {
			dst = a.AppendJSON(dst)
			continue
		}
		b, _ := json.Marshal(it)
		dst = append(dst, b...)
	}
	dst = append(dst, `],"meta":{"total":`...)
	o := core.JSONObject{B: dst}
	o.B = core.AppendInt(o.B, l.meta.Total)
	o.B = append(o.B, `,"links":{`...)
	o.Str("next", l.meta.Links.Next)
	o.Str("prev", l.meta.Links.Prev)
	return append(o.B, "}}}"...)
}

// MarshalJSON writes the list (for encoding/json users).
func (l vultrListJSON[T]) MarshalJSON() ([]byte, error) { return l.AppendJSON(nil), nil }
