package sshhost

import (
	"context"
	"net"
	"net/netip"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
	"golang.org/x/crypto/ssh"
)

// ConnectTimeout is how long a dial to an address that answers nothing (an
// unknown address, or a Private host dialled directly) blocks before failing
// with ETIMEDOUT when its ctx has no earlier deadline: Linux gives up after
// its 6 SYN retries (1+2+4+…+64 s).
const ConnectTimeout = 127 * time.Second

// Network is the in-memory network of the fakes' SSH hosts: Dial reaches a
// host by its "ip:port" address without sockets, safe inside synctest (no
// real sockets, no real sleeps; time is read from the Network's Clock).
//
// What a dial meets:
//   - an address no host ever had, or a Private host: nothing answers (an
//     unroutable IP): Dial blocks until ctx ends (a *net.OpError wrapping
//     ctx.Err()) or ConnectTimeout passes (wrapping syscall.ETIMEDOUT);
//   - a removed host's address, another port of a known host's IP, or a host
//     before its Schedule.RefuseUntil: a *net.OpError wrapping
//     syscall.ECONNREFUSED at once;
//   - otherwise the connection is accepted and the host's SSH server follows
//     its HostSchedule.
type Network struct {
	clock    core.Clock
	seed     uint64
	mu       sync.Mutex
	hosts    map[string]*Host
	lazy     map[string]*HostConfig // hosts the fakes added, made on first use
	removed  map[string]bool
	agent    AgentSpec
	onAdd    []func(*Host)
	conns    map[*pipeConn]*Host // server ends of live connections
	wg       sync.WaitGroup      // server goroutines
	closed   bool
	waits    map[int]context.CancelFunc // dials waiting on a silent address
	nextWait int
	port     int // last client port used
}

// NewNetwork returns an empty network reading time from clock (nil: RealClock)
// and deriving host keys from seed. The agent spec is DefaultAgentSpec().
func NewNetwork(clock core.Clock, seed uint64) *Network {
	if clock == nil {
		clock = core.RealClock()
	}
	return &Network{
		clock: clock, seed: seed, hosts: map[string]*Host{}, lazy: map[string]*HostConfig{}, removed: map[string]bool{},
		agent: DefaultAgentSpec(), conns: map[*pipeConn]*Host{}, waits: map[int]context.CancelFunc{},
		port: 40000,
	}
}

// HostSchedule is when a host's sshd comes up, in cloud time: before
// RefuseUntil a dial is refused; before HangUntil a connection is accepted
// and then nothing is ever sent (a handshake that only the client's ctx can
// cut); before NoBannerUntil the connection closes before the SSH banner;
// before RejectKeysUntil every key is rejected; after that the host works.
// Zero times are in the past. The stage is chosen when the connection is
// accepted (the key stage at each authentication attempt).
type HostSchedule struct {
	RefuseUntil     time.Time
	HangUntil       time.Time
	NoBannerUntil   time.Time
	RejectKeysUntil time.Time
}

// HostConfig describes a fake SSH host.
type HostConfig struct {
	// Addr is "ip:port", the address Dial takes.
	Addr string
	// InstanceID names the server the host belongs to. It is part of the
	// host key's derivation, so a new server reusing an old IP has a new key.
	InstanceID string
	// KeyGeneration is how many times the server's operating system was
	// installed anew before this host was added (0 for a new server). It is
	// part of the host key's derivation, so a server released and reserved
	// again under the same name and address (a reinstalled Hot Aisle
	// bare-metal server) has a new key; RotateHostKey adds one to it.
	KeyGeneration int
	// User is the login user the cloud installs keys for ("root" on Vultr,
	// "hotaisle" on Hot Aisle). Only root may write outside /tmp and the
	// home directory or run systemctl start without sudo.
	User string
	// AuthorizedKeys is consulted at every authentication attempt, so keys
	// registered after the host appeared work (Hot Aisle fetches them live).
	AuthorizedKeys func() []ssh.PublicKey
	// staticKeys, when AuthorizedKeys is nil, are the keys (a fake's server
	// deployed with fixed keys, without a function per server).
	staticKeys []ssh.PublicKey
	// Schedule is when sshd comes up.
	Schedule HostSchedule
	// Private hosts are not reachable by Dial, only through a jump host's
	// direct-tcpip (Hot Aisle bare metal behind ssh_access).
	Private bool
	// Jump hosts accept direct-tcpip to any host of the network, private ones
	// included (Hot Aisle's ssh_access front host).
	Jump bool
	// NoSystemd makes the host a machine without systemd (a container):
	// `systemctl` is not found and /run/systemd/system does not exist.
	NoSystemd bool
}

// AddHost adds (or replaces) the host at cfg.Addr and returns it. Replacing
// closes the old host's connections and stops its agent. Hooks registered
// with OnAddHost run before AddHost returns.
func (n *Network) AddHost(cfg HostConfig) *Host {
	addr := normAddr(cfg.Addr)
	h := newHost(n, cfg)
	n.mu.Lock()
	old := n.hosts[addr]
	n.hosts[addr] = h
	delete(n.lazy, addr)
	delete(n.removed, addr)
	hooks := append([]func(*Host){}, n.onAdd...)
	n.mu.Unlock()
	if old != nil {
		n.dropHost(old)
	}
	for _, f := range hooks {
		f(h)
	}
	return h
}

// OnAddHost registers f to run on every host added from now on, e.g. to set
// a schedule or scripted outcomes on the hosts a fake creates.
func (n *Network) OnAddHost(f func(*Host)) {
	n.mu.Lock()
	n.onAdd = append(n.onAdd, f)
	n.mu.Unlock()
}

// RemoveHost removes the host at addr (the server was destroyed): its live
// connections are closed, its agent stops, and later dials are refused.
func (n *Network) RemoveHost(addr string) {
	addr = normAddr(addr)
	n.mu.Lock()
	h := n.hosts[addr]
	delete(n.hosts, addr)
	delete(n.lazy, addr)
	n.removed[addr] = true
	n.mu.Unlock()
	if h != nil {
		n.dropHost(h)
	}
}

func (n *Network) dropHost(h *Host) {
	n.mu.Lock()
	var conns []*pipeConn
	for c, owner := range n.conns {
		if owner == h {
			conns = append(conns, c)
		}
	}
	n.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	h.stopAgent(nil)
}

// Host returns the host at addr, or nil.
func (n *Network) Host(addr string) *Host {
	addr = normAddr(addr)
	n.materialize(addr)
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[addr]
}

// Hosts returns the live hosts, in no particular order.
func (n *Network) Hosts() []*Host {
	n.mu.Lock()
	lazy := make([]string, 0, len(n.lazy))
	for a := range n.lazy {
		lazy = append(lazy, a)
	}
	n.mu.Unlock()
	for _, a := range lazy {
		n.materialize(a)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	hs := make([]*Host, 0, len(n.hosts))
	for _, h := range n.hosts {
		hs = append(hs, h)
	}
	return hs
}

// SetAgent sets the agent spec every host uses unless overridden with
// (*Host).SetAgent (default DefaultAgentSpec()).
func (n *Network) SetAgent(spec AgentSpec) {
	n.mu.Lock()
	n.agent = spec.withDefaults()
	n.mu.Unlock()
}

// Agent returns the network's agent spec.
func (n *Network) Agent() AgentSpec {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.agent
}

// Dial connects to the host at addr ("ip:port") over network "tcp", "tcp4"
// or "tcp6"; it has net.Dialer.DialContext's signature. The errors are
// *net.OpError values as a real dial gives them (see Network). The returned
// conn's RemoteAddr is a *net.TCPAddr when addr holds an IP.
func (n *Network) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, &net.OpError{Op: "dial", Net: network, Err: net.UnknownNetworkError(network)}
	}
	raddr := tcpAddr(addr)
	if err := ctx.Err(); err != nil {
		return nil, &net.OpError{Op: "dial", Net: network, Addr: raddr, Err: err}
	}
	h, st := n.lookup(normAddr(addr), false)
	switch st {
	case dialBlackhole:
		return nil, &net.OpError{Op: "dial", Net: network, Addr: raddr, Err: n.blackhole(ctx)}
	case dialRefused:
		return nil, refused(network, raddr)
	case dialClosed:
		return nil, &net.OpError{Op: "dial", Net: network, Addr: raddr, Err: net.ErrClosed}
	}
	c, ok := n.connect(h, raddr)
	if !ok {
		return nil, &net.OpError{Op: "dial", Net: network, Addr: raddr, Err: net.ErrClosed}
	}
	return c, nil
}

// Close closes every live connection, stops the agents' sessions and waits
// for the server goroutines to end; later dials fail with net.ErrClosed.
func (n *Network) Close() error {
	n.mu.Lock()
	n.closed = true
	for _, cancel := range n.waits {
		cancel()
	}
	conns := make([]*pipeConn, 0, len(n.conns))
	for c := range n.conns {
		conns = append(conns, c)
	}
	n.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	n.wg.Wait()
	return nil
}

type dialState int

const (
	dialOK dialState = iota
	dialBlackhole
	dialRefused
	dialClosed
)

// lookup says what a dial of addr meets; viaJump lets private hosts answer.
func (n *Network) lookup(addr string, viaJump bool) (*Host, dialState) {
	n.materialize(addr)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, dialClosed
	}
	h := n.hosts[addr]
	switch {
	case h != nil && h.cfg.Private && !viaJump:
		return nil, dialBlackhole
	case h != nil:
		if n.clock.Now().Before(h.Schedule().RefuseUntil) {
			return nil, dialRefused
		}
		return h, dialOK
	case n.removed[addr] || n.knownIP(addr, viaJump):
		return nil, dialRefused
	}
	return nil, dialBlackhole
}

// knownIP reports whether a reachable host has addr's IP on another port.
func (n *Network) knownIP(addr string, viaJump bool) bool {
	ip, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	for a, h := range n.hosts {
		if hip, _, _ := net.SplitHostPort(a); hip == ip && (viaJump || !h.cfg.Private) {
			return true
		}
	}
	for a, cfg := range n.lazy {
		if hip, _, _ := net.SplitHostPort(a); hip == ip && (viaJump || !cfg.Private) {
			return true
		}
	}
	return false
}

// blackhole waits like a connect to an address that never answers; Close
// cuts the wait short.
func (n *Network) blackhole(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return net.ErrClosed
	}
	n.nextWait++
	id := n.nextWait
	n.waits[id] = cancel
	n.mu.Unlock()
	err := n.clock.Sleep(ctx, ConnectTimeout)
	n.mu.Lock()
	delete(n.waits, id)
	closed := n.closed
	n.mu.Unlock()
	switch {
	case closed:
		return net.ErrClosed
	case err != nil:
		return err
	}
	return &os.SyscallError{Syscall: "connect", Err: syscall.ETIMEDOUT}
}

// connect opens a connection to h and starts its server; false when the
// network is closed.
func (n *Network) connect(h *Host, raddr net.Addr) (*pipeConn, bool) {
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return nil, false
	}
	n.port++
	laddr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: n.port}
	client, server := newPipe(laddr, raddr)
	n.conns[server] = h
	n.wg.Add(1)
	n.mu.Unlock()
	server.onClose = func() {
		n.mu.Lock()
		delete(n.conns, server)
		n.mu.Unlock()
	}
	go func() {
		defer n.wg.Done()
		h.serve(server)
	}()
	return client, true
}

func refused(network string, raddr net.Addr) error {
	return &net.OpError{Op: "dial", Net: network, Addr: raddr,
		Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
}

// tcpAddr is addr as a *net.TCPAddr when it holds an IP (knownhosts needs
// one), else as a generic address.
func tcpAddr(addr string) net.Addr {
	if ap, err := netip.ParseAddrPort(addr); err == nil {
		return net.TCPAddrFromAddrPort(ap)
	}
	return fakeAddr(addr)
}

// normAddr canonicalises "ip:port" (IPv6 brackets, zero padding); other
// strings are kept as they are.
func normAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		host = ip.Unmap().String()
	}
	if p, err := strconv.Atoi(port); err == nil {
		port = strconv.Itoa(p)
	}
	return net.JoinHostPort(host, port)
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }
