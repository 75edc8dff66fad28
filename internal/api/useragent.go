package api

import "runtime/debug"

// ModulePath is the module the clients belong to.
const ModulePath = "github.com/gpufleet/gpufleet"

// UserAgent returns the User-Agent of a client of provider:
// "gpufleet/<version> (<provider>)", where version is the version of this
// module in the running binary's build information ("v1.2.3", a
// pseudo-version), or "devel" when the binary has none (a build inside the
// module's own tree, a test).
func UserAgent(provider string) string {
	return "gpufleet/" + moduleVersion(debug.ReadBuildInfo) + " (" + provider + ")"
}

// moduleVersion finds this module in the build information read by read:
// as the main module or as a dependency (following a replacement).
func moduleVersion(read func() (*debug.BuildInfo, bool)) string {
	bi, ok := read()
	if !ok || bi == nil {
		return "devel"
	}
	if bi.Main.Path == ModulePath {
		return cleanVersion(bi.Main.Version)
	}
	for _, d := range bi.Deps {
		if d.Path != ModulePath {
			continue
		}
		if d.Replace != nil && d.Replace.Version != "" {
			return cleanVersion(d.Replace.Version)
		}
		return cleanVersion(d.Version)
	}
	return "devel"
}

func cleanVersion(v string) string {
	if v == "" || v == "(devel)" {
		return "devel"
	}
	return v
}
