package core

// Default credentials of the fakes. A client configured with these reaches the
// fakes without any option.
const (
	// DefaultAPIKey is the API key both fakes accept unless configured
	// otherwise.
	DefaultAPIKey = "sim-api-key"
	// DefaultTeam is the Hot Aisle team handle unless configured otherwise.
	DefaultTeam = "sim-team"
	// DefaultSeed seeds identifiers, addresses and passwords unless
	// configured otherwise.
	DefaultSeed = 1
)

// DefaultConfig is the pipeline's configuration without options: the real
// clock and DefaultSeed.
func DefaultConfig() Config { return Config{Clock: RealClock(), Seed: DefaultSeed} }
