package sim

import (
	"log/slog"
	"time"
)

// Default credentials of the fakes. A client configured with these reaches the
// fakes without any option.
const (
	// DefaultAPIKey is the API key both fakes accept unless WithAPIKey is given.
	DefaultAPIKey = "sim-api-key"
	// DefaultTeam is the Hot Aisle team handle unless WithTeam is given.
	DefaultTeam = "sim-team"
	// DefaultSeed seeds identifiers, addresses and passwords unless WithSeed is given.
	DefaultSeed = 1
)

// Option configures a fake. Options that do not apply to a fake (WithTeam on
// Vultr, for example) are ignored by it.
type Option func(*settings)

type settings struct {
	apiKey  string
	team    string
	seed    uint64
	clock   Clock
	logger  *slog.Logger
	network *Network
	chaos   *chaosConfig
	// visibilityLag hides servers younger than it from reads (WithVisibilityLag).
	visibilityLag time.Duration
	vultr         []func(*vultrSettings)
	hotaisle      []func(*hotaisleSettings)
}

func newSettings(opts []Option) *settings {
	s := &settings{apiKey: DefaultAPIKey, team: DefaultTeam, seed: DefaultSeed, clock: RealClock()}
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
func WithSeed(seed uint64) Option { return func(s *settings) { s.seed = seed } }

// WithClock sets the clock (default RealClock, which is the bubble's fake clock
// inside testing/synctest). Use ScaledClock for a standalone sped-up sim.
func WithClock(c Clock) Option { return func(s *settings) { s.clock = c } }

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
	return func(s *settings) { s.visibilityLag = max(d, 0) }
}
