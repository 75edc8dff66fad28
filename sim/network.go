package sim

// Network is the in-memory network of the fakes' SSH hosts.
type Network struct{}
