package vultrfake

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"github.com/gpufleet/gpufleet/sim/internal/sshhost"
)

// DefaultVultrRateLimit is the Vultr fake's request rate per API key, in
// requests per second, unless WithVultrRateLimit is given ("more than 30
// requests per second … the API may return HTTP status code 429", Vultr API
// docs). The burst equals the rate.
const DefaultVultrRateLimit = 30

// Config is everything a Vultr fake is built from: the pipeline's
// config, the API key, the network of its SSH hosts (nil: a network of its
// own) and the Vultr-only options (catalog, timings per plan pattern, rate
// limit).
type Config struct {
	Core    core.Config      // clock, seed, visibility lag, chaos mode
	APIKey  string           // accepted as "Authorization: Bearer <key>"
	Network *sshhost.Network // where the servers' SSH hosts live; nil: one of its own
	Catalog VultrCatalog     // plans, regions, sold-out list (cloned by New)
	Rules   []TimingRule     // timings per plan pattern, later rules winning
	RPS     float64          // rate limit per key, requests per second; 0 or less: none
	Burst   int              // the rate limit's burst; below 1: RPS rounded up
}

// DefaultConfig is the configuration without options.
func DefaultConfig() Config {
	return Config{Core: core.DefaultConfig(), APIKey: core.DefaultAPIKey,
		Catalog: DefaultVultrCatalog(), RPS: DefaultVultrRateLimit, Burst: DefaultVultrRateLimit}
}

// Vultr is a fake of the Vultr API v2 (https://api.vultr.com/v2). It serves
// plans, regions and availability (public), instances, bare metal, VPCs and
// SSH keys, with the state timelines of VultrTiming, the error dialect
// {"error":"<message>","status":<code>}, a rate limit per key (429 with
// Retry-After), cursor pagination and a billing ledger. Servers get fake SSH
// hosts on Network. Every method is safe for concurrent use.
//
// Where the public sources are silent the fake decides, and clients should
// not rely on more than the quoted substrings:
//   - a gone instance answers 404 "Invalid instance-id." (dstack), a gone
//     bare metal 404 "Invalid server." (the Terraform provider); …/{id}/vpcs
//     of either answers "Invalid instance-id."; a server destroyed out of
//     band may answer 400 "invalid instance ID" instead (DestroyOutOfBand);
//   - between an accepted DELETE and the server's disappearance (Destroy),
//     GET still shows it with power_status "stopped" and server_status
//     "locked", and every mutation answers 500 "… Server is pending
//     destruction" (the Terraform provider saw that text);
//   - the lock after activation refuses DELETE, PATCH, attach, detach, halt,
//     start and reboot with 500 "Unable to <op>: Server is currently locked";
//     while pending, attach and detach answer 500 "Unable to attach VPC:
//     Server is not active yet." and power actions 500 "… not currently
//     active"; PATCH of label and tags works while pending;
//   - a sold-out plan answers 400 "Plan is not available in the selected
//     region.", a plan never offered there 400 "Plan is not offered in the
//     selected region.";
//   - a list given more than one of label, tag, region and main_ip answers
//     400 "Only one filter per request is allowed." (govultr issue #220);
//   - internal_ip is blank with two or more VPCs attached (Terraform provider
//     issue #173);
//   - bare metal honours attach_vpc at create (dstack relies on it) and takes
//     one VPC; it shows internal_ip and power_status (dstack and the Ansible
//     collection read them);
//   - VPC delete while in use answers 400; a deleted VPC or key is 404.
type Vultr struct {
	*server
	cfg   Config
	clock core.Clock
	seed  uint64
	net   *sshhost.Network

	mu         sync.Mutex // guards st, hostOps, hostTicket; taken before server.mu, never after
	st         *vultrState
	hostOps    []vultrHostOp // Network changes queued under mu, applied by unlock
	hostTicket uint64        // next batch of hostOps
	hostQueue  vultrHostQueue
}

// New returns a fake Vultr API built from cfg.
func New(cfg Config) *Vultr {
	cfg.Catalog = cfg.Catalog.clone()
	v := &Vultr{cfg: cfg, clock: cfg.Core.Clock, seed: cfg.Core.Seed, st: newVultrState(), net: cfg.Network}
	v.hostQueue.turn = sync.NewCond(&v.hostQueue.mu)
	if v.net == nil {
		v.net = sshhost.NewNetwork(cfg.Core.Clock, cfg.Core.Seed)
	}
	bearer := "Bearer " + cfg.APIKey
	v.server = core.NewServer("vultr", cfg.Core, core.Hooks{
		WriteError:     writeVultrError,
		DefaultMessage: vultrDefaultMessage,
		Authorized:     func(r *http.Request) bool { return r.Header.Get("Authorization") == bearer },
		Limit:          v.allow,
	})
	v.routesVultr()
	v.chaosFaultsVultr()
	return v
}

// Network returns the network the fake's SSH hosts live on: the one given by
// WithNetwork, or the fake's own.
func (v *Vultr) Network() *sshhost.Network { return v.net }

// Dial connects to a server's fake SSH host at addr ("<main_ip>:22") through
// Network, in memory.
func (v *Vultr) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return v.net.Dial(ctx, network, addr)
}

// vultrError is the body of every Vultr error answer.
type vultrError struct {
	Error  string `json:"error"`
	Status int    `json:"status"`
}

// writeVultrError answers status in Vultr's dialect, with a default message
// per status when msg is "".
func writeVultrError(w http.ResponseWriter, status int, msg string) {
	if msg == "" {
		msg = vultrDefaultMessage(status)
	}
	core.WriteJSON(w, status, vultrError{Error: msg, Status: status})
}

func vultrDefaultMessage(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "Bad request."
	case http.StatusUnauthorized:
		return "Invalid API token."
	case http.StatusNotFound:
		return "Not found."
	case http.StatusRequestEntityTooLarge:
		return "Request body too large."
	case http.StatusTooManyRequests:
		return "Rate limit reached - please try your request again later."
	case http.StatusInternalServerError:
		return "Internal server error."
	case http.StatusServiceUnavailable:
		return "Service temporarily unavailable."
	}
	if t := http.StatusText(status); t != "" {
		return t + "."
	}
	return "Error."
}

// vultrRateKey identifies the caller for the rate limit: the bearer key, else the
// remote address (Vultr monitors per originating IP).
func vultrRateKey(r *http.Request) string {
	if a := r.Header.Get("Authorization"); a != "" {
		return a
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host
}

// randUint64 draws from the fake's seeded source.
func (v *Vultr) randUint64() uint64 { return core.RandUint64(v.server) }

// newUUID returns a version-4 UUID drawn from the seeded source.
func (v *Vultr) newUUID() string {
	var out [36]byte
	return string(v.appendUUID(out[:0]))
}

// appendUUID appends a version-4 UUID drawn from the seeded source (two
// draws).
func (v *Vultr) appendUUID(dst []byte) []byte {
	var x [2]uint64
	core.RandFill(v.server, x[:])
	a := x[0]&^(0xf<<12) | 0x4<<12
	b := x[1]&^(0x3<<62) | 0x2<<62
	var raw [16]byte
	binary.BigEndian.PutUint64(raw[:8], a)
	binary.BigEndian.PutUint64(raw[8:], b)
	var out [36]byte
	hex.Encode(out[0:8], raw[0:4])
	hex.Encode(out[9:13], raw[4:6])
	hex.Encode(out[14:18], raw[6:8])
	hex.Encode(out[19:23], raw[8:10])
	hex.Encode(out[24:36], raw[10:16])
	out[8], out[13], out[18], out[23] = '-', '-', '-', '-'
	return append(dst, out[:]...)
}

// appendPassword appends a default root password of 12 characters drawn
// from the seeded source (one draw per character).
func (v *Vultr) appendPassword(dst []byte) []byte {
	const chars = "abcdefghijkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789!#%"
	var x [12]uint64
	core.RandFill(v.server, x[:])
	for _, n := range x {
		dst = append(dst, chars[n%uint64(len(chars))])
	}
	return dst
}

// vultrTime formats t as the API does: ISO-8601 with a numeric offset.
func vultrTime(t time.Time) string {
	var b [25]byte
	return string(vultrAppendTime(b[:0], t))
}

// vultrAppendTime appends t as vultrTime formats it.
func vultrAppendTime(dst []byte, t time.Time) []byte {
	t = t.UTC()
	y, mo, d := t.Date()
	if y < 0 || y > 9999 {
		return t.AppendFormat(dst, "2006-01-02T15:04:05-07:00")
	}
	h, mi, sec := t.Clock()
	b := [25]byte([]byte("0000-00-00T00:00:00+00:00"))
	for _, v := range [...]struct{ at, n, width int }{{0, y, 4}, {5, int(mo), 2}, {8, d, 2}, {11, h, 2}, {14, mi, 2}, {17, sec, 2}} {
		for j := v.at + v.width - 1; j >= v.at; j-- {
			b[j] = byte('0' + v.n%10)
			v.n /= 10
		}
	}
	return append(dst, b[:]...)
}

// server is the shared pipeline, embedded under an unexported name: its
// public methods (Inject, Faults, Calls, Client, ...) are promoted, the
// field itself is not reachable from outside.
type server = core.Server
