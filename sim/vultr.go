package sim

// vultrSettings holds the Vultr-only options (timings per plan pattern,
// catalog, rate limit). Filled in by the Vultr fake.
type vultrSettings struct{}

// Vultr is a fake of the Vultr API v2.
type Vultr struct {
	*server
}

// NewVultr returns a fake Vultr API.
func NewVultr(opts ...Option) *Vultr {
	st := newSettings(opts)
	return &Vultr{server: newServer("vultr", st)}
}
