package sim

import (
	"encoding/json"
	"time"
)

// appendJSON writes the instance as encoding/json would (see
// TestVultrViewsEncodeLikeEncodingJSON).
func (j *vultrInstanceJSON) appendJSON(dst []byte) []byte {
	o := jsonObject{b: append(dst, '{')}
	o.str("id", j.ID)
	o.str("os", j.Os)
	o.num("ram", int64(j.RAM))
	o.num("disk", int64(j.Disk))
	o.str("main_ip", j.MainIP)
	o.num("vcpu_count", int64(j.VCPUCount))
	o.str("region", j.Region)
	o.str("plan", j.Plan)
	o.str("date_created", j.DateCreated)
	o.str("status", j.Status)
	o.num("allowed_bandwidth", int64(j.AllowedBandwidth))
	o.str("netmask_v4", j.NetmaskV4)
	o.str("gateway_v4", j.GatewayV4)
	o.str("power_status", j.PowerStatus)
	o.str("server_status", j.ServerStatus)
	o.str("v6_network", j.V6Network)
	o.str("v6_main_ip", j.V6MainIP)
	o.num("v6_network_size", int64(j.V6NetworkSize))
	o.str("label", j.Label)
	o.str("internal_ip", j.InternalIP)
	o.boolean("vpc_only", j.VPCOnly)
	o.str("kvm", j.KVM)
	o.str("hostname", j.Hostname)
	o.num("os_id", int64(j.OsID))
	o.num("app_id", int64(j.AppID))
	o.str("image_id", j.ImageID)
	o.str("snapshot_id", j.SnapshotID)
	o.str("firewall_group_id", j.FirewallGroupID)
	o.strs("features", j.Features)
	o.strs("tags", j.Tags)
	o.str("user_scheme", j.UserScheme)
	if j.DefaultPassword != "" {
		o.str("default_password", j.DefaultPassword)
	}
	return append(o.b, '}')
}

// appendJSON writes the bare-metal server as encoding/json would.
func (j *vultrMetalJSON) appendJSON(dst []byte) []byte {
	o := jsonObject{b: append(dst, '{')}
	o.str("id", j.ID)
	o.str("os", j.Os)
	o.str("ram", j.RAM)
	o.str("disk", j.Disk)
	o.str("main_ip", j.MainIP)
	o.num("cpu_count", int64(j.CPUCount))
	o.str("region", j.Region)
	o.str("default_password", j.DefaultPassword)
	o.str("date_created", j.DateCreated)
	o.str("status", j.Status)
	o.str("power_status", j.PowerStatus)
	o.str("netmask_v4", j.NetmaskV4)
	o.str("gateway_v4", j.GatewayV4)
	o.str("plan", j.Plan)
	o.str("v6_network", j.V6Network)
	o.str("v6_main_ip", j.V6MainIP)
	o.num("v6_network_size", int64(j.V6NetworkSize))
	o.num("mac_address", j.MacAddress)
	o.str("label", j.Label)
	o.str("internal_ip", j.InternalIP)
	o.num("os_id", int64(j.OsID))
	o.num("app_id", int64(j.AppID))
	o.str("image_id", j.ImageID)
	o.str("snapshot_id", j.SnapshotID)
	o.strs("features", j.Features)
	o.strs("tags", j.Tags)
	o.str("user_scheme", j.UserScheme)
	return append(o.b, '}')
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

func (v vultrServerJSON) appendJSON(dst []byte) []byte {
	if v.metal != nil {
		return v.metal.appendJSON(dst)
	}
	return v.inst.appendJSON(dst)
}

// vultrAppendAnswer appends the server at now wrapped under its kind's key
// ({"instance": {...}} or {"bare_metal": {...}}), its view on the stack.
func vultrAppendAnswer(dst []byte, s *vultrServer, now time.Time, password bool) []byte {
	if s.metal {
		j := vultrMetalView(s, now, password)
		return append(j.appendJSON(append(dst, `{"bare_metal":`...)), '}')
	}
	j := vultrInstanceView(s, now, password)
	return append(j.appendJSON(append(dst, `{"instance":`...)), '}')
}

// MarshalJSON writes the server (for encoding/json users of the view).
func (v vultrServerJSON) MarshalJSON() ([]byte, error) { return v.appendJSON(nil), nil }

// appendJSON writes {"<name>": [...], "meta": {...}}, the items with their
// own appendJSON when they have one.
func (l vultrListJSON[T]) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"`...)
	dst = append(dst, l.name...)
	dst = append(dst, `":[`...)
	for i, it := range l.items {
		if i > 0 {
			dst = append(dst, ',')
		}
		if a, ok := any(it).(jsonAppender); ok {
			dst = a.appendJSON(dst)
			continue
		}
		b, _ := json.Marshal(it)
		dst = append(dst, b...)
	}
	dst = append(dst, `],"meta":{"total":`...)
	o := jsonObject{b: dst}
	o.b = appendInt(o.b, l.meta.Total)
	o.b = append(o.b, `,"links":{`...)
	o.str("next", l.meta.Links.Next)
	o.str("prev", l.meta.Links.Prev)
	return append(o.b, "}}}"...)
}

// MarshalJSON writes the list (for encoding/json users).
func (l vultrListJSON[T]) MarshalJSON() ([]byte, error) { return l.appendJSON(nil), nil }
