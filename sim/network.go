package sim

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// Network is the in-memory network of the fakes' SSH hosts: Dial reaches a
// host by its "ip:port" address without sockets, safe inside synctest.
// (Skeleton: the SSH host behaviour is being written.)
type Network struct {
	clock Clock
	seed  uint64
	mu    sync.Mutex
	hosts map[string]*Host
}

// NewNetwork returns an empty network reading time from clock (nil: RealClock)
// and deriving host keys from seed.
func NewNetwork(clock Clock, seed uint64) *Network {
	if clock == nil {
		clock = RealClock()
	}
	return &Network{clock: clock, seed: seed, hosts: map[string]*Host{}}
}

// HostSchedule is when a host's sshd comes up, in cloud time: before
// RefuseUntil a dial is refused; before NoBannerUntil the connection closes
// before the SSH banner; before RejectKeysUntil every key is rejected; after
// that the host works. Zero times are in the past.
type HostSchedule struct {
	RefuseUntil     time.Time
	NoBannerUntil   time.Time
	RejectKeysUntil time.Time
}

// HostConfig describes a fake SSH host.
type HostConfig struct {
	// Addr is "ip:port", the address Dial takes.
	Addr string
	// InstanceID names the server the host belongs to.
	InstanceID string
	// User is the login user the cloud installs keys for ("root" on Vultr,
	// "hotaisle" on Hot Aisle).
	User string
	// AuthorizedKeys is consulted at every authentication attempt, so keys
	// registered after the host appeared work (Hot Aisle fetches them live).
	AuthorizedKeys func() []ssh.PublicKey
	// Schedule is when sshd comes up.
	Schedule HostSchedule
	// Private hosts are not reachable by Dial, only through a jump host's
	// direct-tcpip (Hot Aisle bare metal behind ssh_access).
	Private bool
	// Jump hosts accept direct-tcpip to any host of the network, private ones
	// included (Hot Aisle's ssh_access front host).
	Jump bool
}

// Host is a fake SSH host.
type Host struct {
	cfg HostConfig
}

// AddHost adds (or replaces) the host at cfg.Addr.
func (n *Network) AddHost(cfg HostConfig) *Host {
	h := &Host{cfg: cfg}
	n.mu.Lock()
	n.hosts[cfg.Addr] = h
	n.mu.Unlock()
	return h
}

// RemoveHost removes the host at addr (the server was destroyed); later
// dials are refused.
func (n *Network) RemoveHost(addr string) {
	n.mu.Lock()
	delete(n.hosts, addr)
	n.mu.Unlock()
}

// Host returns the host at addr, or nil.
func (n *Network) Host(addr string) *Host {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[addr]
}

// Dial connects to the host at addr.
func (n *Network) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	return nil, errors.New("sim: SSH hosts not implemented yet")
}
