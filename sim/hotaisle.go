package sim

// hotaisleSettings holds the Hot Aisle-only options. Filled in by the Hot Aisle fake.
type hotaisleSettings struct{}

// HotAisle is a fake of the Hot Aisle API.
type HotAisle struct {
	*server
}

// NewHotAisle returns a fake Hot Aisle API.
func NewHotAisle(opts ...Option) *HotAisle {
	st := newSettings(opts)
	return &HotAisle{server: newServer("hotaisle", st)}
}
