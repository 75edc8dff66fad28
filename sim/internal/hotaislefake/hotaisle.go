package hotaislefake

import (
	"context"
	"crypto/subtle"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"github.com/gpufleet/gpufleet/sim/internal/sshhost"
)

// Default physics of sim.HotAisle, taken from the published API facts and
// what users observed; each is adjustable by an option.
const (
	// DefaultHotAisleSSHDelay is how long after provisioning a VM's sshd
	// starts accepting TCP connections (its state says "running" at once).
	DefaultHotAisleSSHDelay = 90 * time.Second
	// DefaultHotAisleDeleteDelay is how long a VM DELETE blocks while the VM
	// is reset.
	DefaultHotAisleDeleteDelay = 20 * time.Second
	// DefaultHotAisleInstallTime is how long a reserved bare-metal server's
	// os_install_status takes to pass first_boot → first_boot_tasks →
	// installed (half the time in each of the first two).
	DefaultHotAisleInstallTime = 10 * time.Minute
	// DefaultHotAisleVMLimit is the team's maximum_virtual_machines.
	DefaultHotAisleVMLimit = 10
	// DefaultHotAisleBareMetalLimit is the team's maximum_bare_metal_servers.
	DefaultHotAisleBareMetalLimit = 5
	// DefaultHotAisleBalanceCents is the team's starting balance in US cents
	// ($10,000).
	DefaultHotAisleBalanceCents = 1_000_000
	// HotAisleRegion is the only location of Hot Aisle (the API has no region
	// field; gpuhunt hard-codes it). It is the Region of every Resource.
	HotAisleRegion = "us-michigan-1"
	// HotAisleUser is the login user of every Hot Aisle server.
	HotAisleUser = "hotaisle"
)

// Config is everything a Hot Aisle fake is built from: the
// pipeline's config, the API key and team, the network of its SSH hosts
// (nil: a network of its own) and the Hot Aisle-only options.
type Config struct {
	Core           core.Config             // clock, seed, visibility lag, chaos mode
	APIKey         string                  // accepted as "Authorization: Token <key>" or bare
	Team           string                  // the one team handle the key has roles on
	Network        *sshhost.Network        // where the servers' SSH hosts live; nil: one of its own
	VMTypes        []HotAisleVMType        // VM offers, in the order provisioning tries them
	BareMetalTypes []HotAisleBareMetalType // bare-metal offers, likewise
	SSHDelay       time.Duration           // VM provisioned → sshd accepting connections
	DeleteDelay    time.Duration           // how long a VM DELETE blocks
	InstallTime    time.Duration           // bare metal reserved → OS installed
	VMLimit        int                     // the team's maximum_virtual_machines
	BareMetalLimit int                     // the team's maximum_bare_metal_servers
	BalanceCents   int64                   // the team's starting balance, US cents
	UserRoleOnly   bool                    // the key may read but not mutate (403)
}

// DefaultConfig is the configuration without options.
func DefaultConfig() Config {
	return Config{
		Core:           core.DefaultConfig(),
		APIKey:         core.DefaultAPIKey,
		Team:           core.DefaultTeam,
		VMTypes:        DefaultHotAisleVMTypes(),
		BareMetalTypes: DefaultHotAisleBareMetalTypes(),
		SSHDelay:       DefaultHotAisleSSHDelay,
		DeleteDelay:    DefaultHotAisleDeleteDelay,
		InstallTime:    DefaultHotAisleInstallTime,
		VMLimit:        DefaultHotAisleVMLimit,
		BareMetalLimit: DefaultHotAisleBareMetalLimit,
		BalanceCents:   DefaultHotAisleBalanceCents,
	}
}

// HotAisle is a fake of the Hot Aisle API (https://admin.hotaisle.app/api/).
// It serves the real paths, all ending in "/" (a path without the trailing
// slash, or one that is not clean, answers 404, never a redirect), takes
// "Authorization: Token <key>" or a bare key, answers errors as a JSON string
// ("Unauthorized", "Not Found: Resource not found", ...), and follows the
// default physics documented on its options and constants. An unknown team
// handle answers 404, a mutation by a key without the operator role 403, a
// bad key 401.
type HotAisle struct {
	*server
	cfg   Config
	clock core.Clock
	net   *sshhost.Network

	mu     sync.Mutex // guards st
	st     *haState
	hostMu sync.Mutex // orders adding and removing servers' SSH hosts; taken before mu
}

// New returns a fake Hot Aisle API built from cfg.
func New(cfg Config) *HotAisle {
	h := &HotAisle{cfg: cfg, clock: cfg.Core.Clock, net: cfg.Network}
	if h.net == nil {
		h.net = sshhost.NewNetwork(cfg.Core.Clock, cfg.Core.Seed)
	}
	h.server = core.NewServer("hotaisle", cfg.Core, core.Hooks{
		WriteError:     haWriteError,
		DefaultMessage: haStatusMessage,
		Authorized:     h.authorizedKey,
		PathOK:         haPathOK,
	})
	h.st = h.newState()
	h.routesInit()
	h.chaosFaultsHotAisle()
	return h
}

func (h *HotAisle) routesInit() {
	const team = "/api/teams/{team}/"
	const vm = team + "virtual_machines/{vm}/"
	const bm = team + "bare_metal/{server}/"
	h.route("GET /api/user/", h.getUser)
	h.route("GET /api/teams/", h.getTeams)
	h.route("GET "+team, h.getTeam)
	h.route("GET "+team+"balance/", h.getBalance)
	h.route("GET /api/user/ssh_keys/", h.listKeys)
	h.route("POST /api/user/ssh_keys/", h.addKey)
	h.route("DELETE /api/user/ssh_keys/{fingerprint}/", h.deleteKey)
	h.route("GET "+team+"virtual_machines/", h.listVMs)
	h.route("POST "+team+"virtual_machines/", h.provisionVM)
	h.route("GET "+team+"virtual_machines/available/", h.availableVMs)
	h.route("GET "+vm, h.getVM)
	h.route("PATCH "+vm, h.updateVM)
	h.route("DELETE "+vm, h.deleteVM)
	h.route("GET "+vm+"state/", h.vmState)
	h.route("POST "+vm+"start/", h.startVM)
	h.route("POST "+vm+"stop/", h.stopVM)
	h.route("POST "+vm+"shutdown/", h.shutdownVM)
	h.route("POST "+vm+"reboot/", h.rebootVM)
	h.route("POST "+vm+"hard-reset/", h.hardResetVM)
	h.route("GET "+team+"bare_metal/", h.listBareMetal)
	h.route("POST "+team+"bare_metal/", h.reserveBareMetal)
	h.route("GET "+team+"bare_metal/available/", h.availableBareMetal)
	h.route("GET "+bm, h.getBareMetal)
	h.route("PATCH "+bm, h.updateBareMetal)
	h.route("DELETE "+bm, h.releaseBareMetal)
	h.route("GET "+bm+"power/", h.bareMetalPower)
	h.route("POST "+bm+"power/power_on/", h.bmPowerOn)
	h.route("POST "+bm+"power/graceful_shutdown/", h.bmGracefulShutdown)
	h.route("POST "+bm+"power/force_shutdown/", h.bmForceShutdown)
	h.route("POST "+bm+"power/warm_reboot/", h.bmWarmReboot)
	h.route("POST "+bm+"power/cold_reboot/", h.bmColdReboot)
	h.route("POST "+bm+"power/ac_reset/", h.bmACReset)
}

// route registers fn for pattern, which ends in "/" and matches only that
// exact path; the wildcards' values are unescaped per segment (a
// fingerprint may arrive with "%2F" inside one segment).
func (h *HotAisle) route(pattern string, fn http.HandlerFunc) {
	core.Handle(h.server, pattern, false, fn)
}

// haPathOK reports whether the path ends in "/" and is clean ("//", "/./"
// are not): the others answer 404 without reaching the router, so no
// redirect is ever sent. Cleanliness is judged on the escaped path: a
// fingerprint may hold "%2F%2F" inside one segment.
func haPathOK(r *http.Request) bool {
	p := r.URL.EscapedPath()
	return strings.HasSuffix(p, "/") && (p == "/" || path.Clean(p)+"/" == p)
}

// authorizedKey accepts "Authorization: Token <key>" and a bare key (as the
// official CLI sends it).
func (h *HotAisle) authorizedKey(r *http.Request) bool {
	got := strings.TrimSpace(r.Header.Get("Authorization"))
	if k, ok := strings.CutPrefix(got, "Token "); ok {
		got = strings.TrimSpace(k)
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(h.cfg.APIKey)) == 1
}

// haWriteError answers status with msg as a JSON string, Hot Aisle's error
// dialect; an empty msg takes the spec's shared message for the status.
func haWriteError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = haStatusMessage(status)
	}
	core.WriteJSON(w, status, msg)
}

func haStatusMessage(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "Bad Request: Invalid input"
	case http.StatusUnauthorized:
		return "Unauthorized"
	case http.StatusForbidden:
		return "Forbidden: Permission denied"
	case http.StatusNotFound:
		return "Not Found: Resource not found"
	case http.StatusUnprocessableEntity:
		return "Unprocessable Entity: Invalid data format"
	case http.StatusInternalServerError:
		return "Internal Server Error"
	}
	return http.StatusText(status)
}

// Network returns the in-memory network the fake's SSH hosts live on (the
// one given by WithNetwork, or the fake's own).
func (h *HotAisle) Network() *sshhost.Network { return h.net }

// Dial connects to a fake SSH host by "ip:port", as net.Dialer.DialContext
// would: a VM at ip_address:22, a bare-metal server's front host at its
// ssh_access ip_address:port.
func (h *HotAisle) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return h.net.Dial(ctx, network, addr)
}

// server is the shared pipeline, embedded under an unexported name: its
// public methods (Inject, Faults, Calls, Client, ...) are promoted, the
// field itself is not reachable from outside.
type server = core.Server
