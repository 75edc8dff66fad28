package vultrfake

import (
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"github.com/gpufleet/gpufleet/sim/internal/sshhost"
)

// The tests of this package build fakes as the public constructor does,
// with options of the same names filling a Config.

const DefaultAPIKey = core.DefaultAPIKey

type Option func(*Config)

func NewVultr(opts ...Option) *Vultr {
	cfg := DefaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	return New(cfg)
}

func WithAPIKey(key string) Option             { return func(c *Config) { c.APIKey = key } }
func WithSeed(seed uint64) Option              { return func(c *Config) { c.Core.Seed = seed } }
func WithNetwork(n *sshhost.Network) Option    { return func(c *Config) { c.Network = n } }
func WithVultrCatalog(cat VultrCatalog) Option { return func(c *Config) { c.Catalog = cat } }

func WithVisibilityLag(d time.Duration) Option {
	return func(c *Config) { c.Core.VisibilityLag = max(d, 0) }
}

func WithVultrRateLimit(rps float64, burst int) Option {
	return func(c *Config) { c.RPS, c.Burst = rps, burst }
}

func WithVultrTiming(pattern string, t VultrTiming) Option {
	r := Rule(pattern, t)
	return func(c *Config) { c.Rules = append(c.Rules, r) }
}
