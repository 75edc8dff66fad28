package shim

import (
	"strconv"
	"strings"
	"time"
)

// DstackDownloadURL is where dstack publishes its binaries (dstack's own
// download location): {version} is the release ("0.19.41"), {binary} "dstack-shim" or
// "dstack-runner", {arch} "amd64" or "arm64".
const DstackDownloadURL = "https://dstack-runner-downloads.s3.eu-west-1.amazonaws.com/{version}/binaries/{binary}-linux-{arch}"

// Fixed dstack-shim facts, as dstack itself starts the shim on SSH fleets.
const (
	DstackShimPort       = 10998                        // shim HTTP API, bound to localhost
	DstackShimHealthPath = "/api/healthcheck"           // {"service":"dstack-shim","version":"0.x.y"}
	DstackShimService    = "dstack-shim"                // the "service" a healthy shim answers
	DstackShimBinary     = "/usr/local/bin/dstack-shim" // where the shim is installed
	DstackShimHome       = "/root/.dstack"              // DSTACK_SHIM_HOME
	dstackRunnerBinary   = "/usr/local/bin/dstack-runner"
)

// DstackShimConfig builds the dstack-shim AgentSpec.
type DstackShimConfig struct {
	// Version is the dstack release to download ("0.19.41").
	Version string
	// Arch is "amd64" (default) or "arm64".
	Arch string
	// ShimURL and RunnerURL override the download URLs (dstack's
	// DSTACK_SHIM_DOWNLOAD_URL); they may use the DstackDownloadURL
	// placeholders. Default: DstackDownloadURL.
	ShimURL, RunnerURL string
	// SHA256, when set, is the hex digest the downloaded shim must have
	// (checked with sha256sum before it is installed).
	SHA256 string
	// Env adds to or overrides the shim's environment (a backend's extra
	// variables, DSTACK_SERVICE_MODE=1 ...).
	Env map[string]string
}

// DstackShim is the dstack-shim preset for version on amd64: download to
// /usr/local/bin/dstack-shim, dstack's environment, port 10998, healthy
// when GET /api/healthcheck answers 200 with service "dstack-shim".
func DstackShim(version string) AgentSpec { return DstackShimConfig{Version: version}.Spec() }

func (c DstackShimConfig) url(tmpl, binary string) string {
	if tmpl == "" {
		tmpl = DstackDownloadURL
	}
	arch := c.Arch
	if arch == "" {
		arch = "amd64"
	}
	return strings.NewReplacer("{version}", c.Version, "{binary}", binary, "{arch}", arch).Replace(tmpl)
}

// Spec returns the AgentSpec. Its install steps are:
//
//  1. "prepare": mkdir -p /root/.dstack /usr/local/bin
//  2. "download dstack-shim": curl -fsS --compressed --connect-timeout 60
//     --max-time 240 --retry 1 -o /usr/local/bin/dstack-shim.download URL
//     [&& sha256sum check] && chmod +x && mv -f to /usr/local/bin/dstack-shim
//
// and its environment is the one dstack sets: DSTACK_SHIM_HOME,
// DSTACK_SHIM_HTTP_PORT, DSTACK_SHIM_LOG_LEVEL, DSTACK_RUNNER_DOWNLOAD_URL,
// DSTACK_RUNNER_BINARY_PATH, DSTACK_RUNNER_HTTP_PORT, DSTACK_RUNNER_SSH_PORT,
// DSTACK_RUNNER_LOG_LEVEL, plus c.Env.
func (c DstackShimConfig) Spec() AgentSpec {
	tmp := DstackShimBinary + ".download"
	dl := "curl -fsS --compressed --connect-timeout 60 --max-time 240 --retry 1 -o " + tmp + " " +
		shQuote(c.url(c.ShimURL, "dstack-shim"))
	if c.SHA256 != "" {
		dl += " && echo " + shQuote(c.SHA256+"  "+tmp) + " | sha256sum -c -"
	}
	dl += " && chmod +x " + tmp + " && mv -f " + tmp + " " + DstackShimBinary
	env := map[string]string{
		"DSTACK_SHIM_HOME":           DstackShimHome,
		"DSTACK_SHIM_HTTP_PORT":      strconv.Itoa(DstackShimPort),
		"DSTACK_SHIM_LOG_LEVEL":      "5",
		"DSTACK_RUNNER_DOWNLOAD_URL": c.url(c.RunnerURL, "dstack-runner"),
		"DSTACK_RUNNER_BINARY_PATH":  dstackRunnerBinary,
		"DSTACK_RUNNER_HTTP_PORT":    "10999",
		"DSTACK_RUNNER_SSH_PORT":     "10022",
		"DSTACK_RUNNER_LOG_LEVEL":    "5",
	}
	for k, v := range c.Env {
		env[k] = v
	}
	return AgentSpec{
		Name: "dstack-shim",
		Install: []Step{
			{Name: "prepare", Command: "mkdir -p " + DstackShimHome + " /usr/local/bin", Timeout: 30 * time.Second},
			{Name: "download dstack-shim", Command: dl, Timeout: 5 * time.Minute},
		},
		Command:    DstackShimBinary,
		Env:        env,
		HealthPort: DstackShimPort,
		HealthPath: DstackShimHealthPath,
		Service:    DstackShimService,
		LogFile:    DstackShimHome + "/shim.log",
	}
}
