package vultrfake

import (
	"encoding/json"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// AppendJSON writes the instance as encoding/json would (see
// TestVultrViewsEncodeLikeEncodingJSON).
func (j *vultrInstanceJSON) AppendJSON(dst []byte) []byte {
	o := core.JSONObject{B: append(dst, '{')}
	o.Str("id", j.ID)
	o.Str("os", j.Os)
	o.Num("ram", int64(j.RAM))
	o.Num("disk", int64(j.Disk))
	o.Str("main_ip", j.MainIP)
	o.Num("vcpu_count", int64(j.VCPUCount))
	o.Str("region", j.Region)
	o.Str("plan", j.Plan)
	o.Str("date_created", j.DateCreated)
	o.Str("status", j.Status)
	o.Num("allowed_bandwidth", int64(j.AllowedBandwidth))
	o.Str("netmask_v4", j.NetmaskV4)
	o.Str("gateway_v4", j.GatewayV4)
	o.Str("power_status", j.PowerStatus)
	o.Str("server_status", j.ServerStatus)
	o.Str("v6_network", j.V6Network)
	o.Str("v6_main_ip", j.V6MainIP)
	o.Num("v6_network_size", int64(j.V6NetworkSize))
	o.Str("label", j.Label)
	o.Str("internal_ip", j.InternalIP)
	o.Boolean("vpc_only", j.VPCOnly)
	o.Str("kvm", j.KVM)
	o.Str("hostname", j.Hostname)
	o.Num("os_id", int64(j.OsID))
	o.Num("app_id", int64(j.AppID))
	o.Str("image_id", j.ImageID)
	o.Str("snapshot_id", j.SnapshotID)
	o.Str("firewall_group_id", j.FirewallGroupID)
	o.Strs("features", j.Features)
	o.Strs("tags", j.Tags)
	o.Str("user_scheme", j.UserScheme)
	if j.DefaultPassword != "" {
		o.Str("default_password", j.DefaultPassword)
	}
	return append(o.B, '}')
}

// AppendJSON writes the bare-metal server as encoding/json would.
func (j *vultrMetalJSON) AppendJSON(dst []byte) []byte {
	o := core.JSONObject{B: append(dst, '{')}
	o.Str("id", j.ID)
	o.Str("os", j.Os)
	o.Str("ram", j.RAM)
	o.Str("disk", j.Disk)
	o.Str("main_ip", j.MainIP)
	o.Num("cpu_count", int64(j.CPUCount))
	o.Str("region", j.Region)
	o.Str("default_password", j.DefaultPassword)
	o.Str("date_created", j.DateCreated)
	o.Str("status", j.Status)
	o.Str("power_status", j.PowerStatus)
	o.Str("netmask_v4", j.NetmaskV4)
	o.Str("gateway_v4", j.GatewayV4)
	o.Str("plan", j.Plan)
	o.Str("v6_network", j.V6Network)
	o.Str("v6_main_ip", j.V6MainIP)
	o.Num("v6_network_size", int64(j.V6NetworkSize))
	o.Num("mac_address", j.MacAddress)
	o.Str("label", j.Label)
	o.Str("internal_ip", j.InternalIP)
	o.Num("os_id", int64(j.OsID))
	o.Num("app_id", int64(j.AppID))
	o.Str("image_id", j.ImageID)
	o.Str("snapshot_id", j.SnapshotID)
	o.Strs("features", j.Features)
	o.Strs("tags", j.Tags)
	o.Str("user_scheme", j.UserScheme)
	return append(o.B, '}')
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
