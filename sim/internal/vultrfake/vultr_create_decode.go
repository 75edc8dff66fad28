package vultrfake

import (
	"encoding/json"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// vultrCreateKeys are the JSON keys of vultrCreateReq.
var vultrCreateKeys = []string{"region", "plan", "label", "hostname", "tags", "tag", "os_id", "iso_id",
	"app_id", "image_id", "snapshot_id", "enable_ipv6", "enable_vpc", "attach_vpc", "sshkey_id", "backups",
	"ddos_protection", "user_data", "user_scheme"}

// decodeCreate reads a create body into the zero req as json.Unmarshal
// would, through the flat fast path when it can (see core.FlatScan); what
// it returns is the error of json.Unmarshal. req does not escape: the slow
// path decodes into a copy of its own, so that callers keep req on the
// stack.
func decodeCreate(data []byte, req *vultrCreateReq) error {
	var fast vultrCreateReq
	if core.FlatScan(data, fast.set) {
		*req = fast
		return nil
	}
	slow := new(vultrCreateReq)
	err := json.Unmarshal(data, slow)
	*req = *slow
	return err
}

// set stores one member, as encoding/json would; false: let encoding/json
// decide (a type it would refuse, or a key it would match
// case-insensitively).
func (r *vultrCreateReq) set(key []byte, v core.FlatValue) bool {
	// null leaves a string, number or boolean as it is and sets a slice to nil.
	null := v.Kind == core.FlatNull
	str := func(dst *string) bool {
		if !null {
			*dst = v.S
		}
		return null || v.Kind == core.FlatString
	}
	num := func(dst *int) bool {
		if !null {
			*dst = v.N
		}
		return null || v.Kind == core.FlatInt
	}
	flag := func(dst *bool) bool {
		if !null {
			*dst = v.B
		}
		return null || v.Kind == core.FlatBool
	}
	list := func(dst *[]string) bool { *dst = v.Ss; return null || v.Kind == core.FlatStrings }
	switch string(key) {
	case "region":
		return str(&r.Region)
	case "plan":
		return str(&r.Plan)
	case "label":
		return str(&r.Label)
	case "hostname":
		return str(&r.Hostname)
	case "tags":
		return list(&r.Tags)
	case "tag":
		return str(&r.Tag)
	case "os_id":
		return num(&r.OsID)
	case "iso_id":
		return str(&r.ISOID)
	case "app_id":
		return num(&r.AppID)
	case "image_id":
		return str(&r.ImageID)
	case "snapshot_id":
		return str(&r.SnapshotID)
	case "enable_ipv6":
		return flag(&r.EnableIPv6)
	case "enable_vpc":
		return flag(&r.EnableVPC)
	case "attach_vpc":
		return list(&r.AttachVPC)
	case "sshkey_id":
		return list(&r.SSHKeyIDs)
	case "backups":
		return str(&r.Backups)
	case "ddos_protection":
		return flag(&r.DDOS)
	case "user_data":
		return str(&r.UserData)
	case "user_scheme":
		return str(&r.UserScheme)
	}
	return core.FlatUnknown(key, vultrCreateKeys)
}
