package sim

import (
	"log/slog"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"github.com/gpufleet/gpufleet/sim/internal/hotaislefake"
	"github.com/gpufleet/gpufleet/sim/internal/vultrfake"
)

// Default credentials of the fakes. A client configured with these reaches the
// fakes without any option.
const (
	// DefaultAPIKey is the API key both fakes accept unless WithAPIKey is given.
	DefaultAPIKey = core.DefaultAPIKey
	// DefaultTeam is the Hot Aisle team handle unless WithTeam is given.
	DefaultTeam = core.DefaultTeam
	// DefaultSeed seeds identifiers, addresses and passwords unless WithSeed is given.
	DefaultSeed = core.DefaultSeed
)

// Option configures a fake. Options that do not apply to a fake (WithTeam on
// Vultr, for example) are ignored by it.
type Option func(*settings)

// settings collect what the options set: the pipeline's config (clock,
// seed, visibility lag, chaos) and the other shared options, and each
// fake's own options, which NewVultr and NewHotAisle complete with the
// shared ones.
type settings struct {
	core     core.Config
	apiKey   string
	team     string
	logger   *slog.Logger
	network  *Network
	vultr    vultrfake.Config
	hotaisle hotaislefake.Config
}

func newSettings(opts []Option) *settings {
	s := &settings{core: core.Config{Clock: RealClock(), Seed: DefaultSeed}, apiKey: DefaultAPIKey, team: DefaultTeam,
		vultr: vultrfake.DefaultConfig(), hotaisle: hotaislefake.DefaultConfig()}
	for _, o := range opts {
		if o != nil {
			o(s)
		}
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	return s
}

// WithAPIKey sets the API key the fake accepts (default DefaultAPIKey).
func WithAPIKey(key string) Option { return func(s *settings) { s.apiKey = key } }

// WithTeam sets the Hot Aisle team handle the key has the operator and owner
// roles on (default DefaultTeam).
func WithTeam(handle string) Option { return func(s *settings) { s.team = handle } }

// WithSeed seeds every random choice of the fake: identifiers, IP addresses,
// passwords (default DefaultSeed). The same seed and the same calls give the
// same answers.
func WithSeed(seed uint64) Option { return func(s *settings) { s.core.Seed = seed } }

// WithClock sets the clock (default RealClock, which is the bubble's fake clock
// inside testing/synctest). Use ScaledClock for a standalone sped-up sim.
func WithClock(c Clock) Option { return func(s *settings) { s.core.Clock = c } }

// WithLogger sets the logger for the fake's own diagnostics (default: discard).
func WithLogger(l *slog.Logger) Option { return func(s *settings) { s.logger = l } }

// WithNetwork makes the fake register its servers' SSH hosts on n, so that one
// n.Dial reaches the hosts of several fakes. By default each fake has its own.
func WithNetwork(n *Network) Option { return func(s *settings) { s.network = n } }

// WithVisibilityLag makes the fake eventually consistent: a server created
// less than d ago (cloud time) is missing from every list and its own GET
// answers 404 (Vultr "Invalid instance-id." or "Invalid server."; Hot Aisle
// "Not Found: Resource not found"), as if the API's read replicas lagged.
// Mutations of the server work at once. Default 0 (off); a Fault's
// VisibilityLag adds a lag to single calls.
func WithVisibilityLag(d time.Duration) Option {
	return func(s *settings) { s.core.VisibilityLag = max(d, 0) }
}

// NewVultr returns a fake Vultr API. By default it accepts the key
// DefaultAPIKey as "Authorization: Bearer <key>" (WithAPIKey changes it),
// serves DefaultVultrCatalog (WithVultrCatalog), limits each key to
// DefaultVultrRateLimit requests per second (WithVultrRateLimit), moves
// servers along DefaultVultrVMTiming and DefaultVultrBareMetalTiming
// (WithVultrTiming), and registers SSH hosts on its own Network (WithNetwork).
func NewVultr(opts ...Option) *Vultr {
	s := newSettings(opts)
	cfg := s.vultr
	cfg.Core, cfg.APIKey, cfg.Network = s.core, s.apiKey, s.network
	return vultrfake.New(cfg)
}

// NewHotAisle returns a fake Hot Aisle API. Options: WithAPIKey, WithTeam,
// WithSeed, WithClock, WithNetwork, WithLogger and the WithHotAisle* options.
func NewHotAisle(opts ...Option) *HotAisle {
	s := newSettings(opts)
	cfg := s.hotaisle
	cfg.Core, cfg.APIKey, cfg.Team, cfg.Network = s.core, s.apiKey, s.team, s.network
	return hotaislefake.New(cfg)
}

// WithVultrCatalog replaces the Vultr fake's plans, bare-metal plans, regions
// and sold-out list (default DefaultVultrCatalog()).
func WithVultrCatalog(c VultrCatalog) Option {
	return func(s *settings) { s.vultr.Catalog = c }
}

// WithVultrRateLimit sets the Vultr fake's token bucket per API key: rps
// requests per second on the sim clock with the given burst (burst < 1 means
// the rate rounded up). rps <= 0 disables the limit. Default:
// DefaultVultrRateLimit with a burst of as many.
func WithVultrRateLimit(rps float64, burst int) Option {
	return func(s *settings) { s.vultr.RPS, s.vultr.Burst = rps, burst }
}

// WithVultrTiming makes every server whose plan id matches pattern (a
// path.Match glob such as "vbm-*" or "vcg-a100-*") follow t instead of the
// default timing of its kind. Later options win over earlier ones. Start from
// DefaultVultrVMTiming or DefaultVultrBareMetalTiming to change one field. It
// panics on a malformed pattern.
func WithVultrTiming(pattern string, t VultrTiming) Option {
	r := vultrfake.Rule(pattern, t)
	return func(s *settings) { s.vultr.Rules = append(s.vultr.Rules, r) }
}

// WithHotAisleCatalog replaces the offers of the Hot Aisle fake (default
// DefaultHotAisleVMTypes and DefaultHotAisleBareMetalTypes). Rows are listed
// in the given order, which is also the order provisioning tries them.
func WithHotAisleCatalog(vms []HotAisleVMType, bms []HotAisleBareMetalType) Option {
	vms = append([]HotAisleVMType(nil), vms...)
	bms = append([]HotAisleBareMetalType(nil), bms...)
	return func(s *settings) { s.hotaisle.VMTypes, s.hotaisle.BareMetalTypes = vms, bms }
}

// WithHotAisleSSHDelay sets how long after provisioning a VM's sshd accepts
// connections (default DefaultHotAisleSSHDelay, 90 s).
func WithHotAisleSSHDelay(d time.Duration) Option {
	return func(s *settings) { s.hotaisle.SSHDelay = d }
}

// WithHotAisleDeleteDelay sets how long a VM DELETE blocks while the VM is
// reset (default DefaultHotAisleDeleteDelay, 20 s).
func WithHotAisleDeleteDelay(d time.Duration) Option {
	return func(s *settings) { s.hotaisle.DeleteDelay = d }
}

// WithHotAisleInstallTime sets how long a bare-metal server takes from
// reservation to os_install_status "installed" and a working sshd (default
// DefaultHotAisleInstallTime, 10 min).
func WithHotAisleInstallTime(d time.Duration) Option {
	return func(s *settings) { s.hotaisle.InstallTime = d }
}

// WithHotAisleLimits sets the team's maximum_virtual_machines and
// maximum_bare_metal_servers (defaults 10 and 5). Going over the VM limit
// answers 401, over the bare-metal limit 403, as the real API does.
func WithHotAisleLimits(vms, bareMetal int) Option {
	return func(s *settings) { s.hotaisle.VMLimit, s.hotaisle.BareMetalLimit = vms, bareMetal }
}

// WithHotAisleBalance sets the team's starting balance in US cents (default
// DefaultHotAisleBalanceCents). A provision or reservation whose minimum
// charge exceeds the available balance answers 402.
func WithHotAisleBalance(cents int64) Option {
	return func(s *settings) { s.hotaisle.BalanceCents = cents }
}

// WithHotAisleUserRoleOnly gives the API key only the "user" role on the team
// and the "user" API-key role: reads work, every mutation (provision, reserve,
// update, delete, SSH key add/remove) answers 403 "Forbidden: Permission
// denied". By default the key has every role (owner, purchaser, operator,
// user).
func WithHotAisleUserRoleOnly() Option {
	return func(s *settings) { s.hotaisle.UserRoleOnly = true }
}

// WithChaos turns chaos mode on from the start: every call of the fake may
// meet one of profile's faults, drawn from seed (see ChaosProfile), and
// Faults lists what fired. The same seed, profile and calls give the same
// faults. It is the way to test an orchestrator against a misbehaving cloud
// without scripting each fault; an invalid profile panics.
func WithChaos(seed uint64, profile ChaosProfile) Option {
	if err := profile.Validate(); err != nil {
		panic(err)
	}
	return func(s *settings) { s.core.Chaos = &core.ChaosConfig{Seed: seed, Profile: profile} }
}
