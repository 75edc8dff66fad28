package sim

import "github.com/gpufleet/gpufleet/sim/internal/sshhost"

// The fake SSH hosts of both fakes. The types are aliases; their fields and
// methods are documented where they are defined.

// ConnectTimeout is how long a dial to an address that answers nothing (an
// unknown address, or a Private host dialled directly) blocks before failing
// with ETIMEDOUT when its context has no earlier deadline: Linux gives up
// after its 6 SYN retries (1+2+4+…+64 s).
const ConnectTimeout = sshhost.ConnectTimeout

// Network is the in-memory network of the fakes' SSH hosts: Dial reaches a
// host by its "ip:port" address without sockets, safe inside synctest (no
// real sockets, no real sleeps; time is read from the Network's Clock).
// An address no host ever had, or a Private host, answers nothing (Dial
// blocks until its context ends or ConnectTimeout passes); a removed host's
// address, another port of a known host's IP, or a host before its
// HostSchedule.RefuseUntil refuses at once (ECONNREFUSED); otherwise the
// host's SSH server follows its HostSchedule.
type Network = sshhost.Network

// NewNetwork returns an empty network reading time from clock (nil:
// RealClock) and deriving host keys from seed. The agent spec is
// DefaultAgentSpec().
func NewNetwork(clock Clock, seed uint64) *Network { return sshhost.NewNetwork(clock, seed) }

// Host is a fake SSH host: an SSH server with public-key authentication
// only, a bash shell (mvdan.cc/sh/v3's interpreter) for "exec" requests over
// an in-memory file system, one tracked agent process (see AgentSpec), and
// direct-tcpip to the agent's localhost port. All methods are safe for
// concurrent use.
type Host = sshhost.Host

// HostConfig describes a fake SSH host: its "ip:port" address, the server
// it belongs to and how many times that server was installed anew (both part
// of the host key's derivation), the login user, the
// authorized keys, its HostSchedule, and whether it is private, a jump host,
// or a machine without systemd.
type HostConfig = sshhost.HostConfig

// HostSchedule is when a host's sshd comes up, in cloud time: before
// RefuseUntil a dial is refused; before HangUntil a connection is accepted
// and then nothing is ever sent; before NoBannerUntil the connection closes
// before the SSH banner; before RejectKeysUntil every key is rejected; after
// that the host works. Zero times are in the past.
type HostSchedule = sshhost.HostSchedule

// ExecRecord is one "exec" request a host ran: when (cloud time), the user,
// the command line, the stdin consumed, the exit status (-1 while it runs),
// what it wrote, and whether it started the agent detached.
type ExecRecord = sshhost.ExecRecord

// CommandHandler scripts the outcome of a simple command: it gets the
// command (words joined by spaces, after `sudo` and `sh -c` unwrapping and
// without redirections) and the stdin given to it (nil in the background),
// and returns what the command writes and its exit status.
type CommandHandler = sshhost.CommandHandler

// AgentSpec describes the agent process a host tracks (the binary, its
// port, health path and answer, service name, version, and how long after
// start it is ready, in cloud time).
type AgentSpec = sshhost.AgentSpec

// DefaultAgentSpec is dstack-shim: port 10998, GET /api/healthcheck →
// 200 {"service":"dstack-shim","version":"0.19.41"}.
func DefaultAgentSpec() AgentSpec { return sshhost.DefaultAgentSpec() }

// DownloadContent returns the bytes the fake hosts' curl and wget download
// from url, for any URL but the agent's own port on localhost:
// "sim download of <url>\n". The same URL always gives the same bytes, so a
// test can compute the SHA-256 digest an install step checks.
func DownloadContent(url string) []byte { return sshhost.DownloadContent(url) }
