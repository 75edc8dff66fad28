// Package shim starts a host agent (by default dstack-shim) on a freshly
// rented machine over SSH, reliably and safely, and checks it afterwards.
//
// A Starter waits for the host's TCP port, then its SSH banner, then an
// accepted key, each retried with capped backoff within the caller's
// context (which also cuts a hanging handshake); it reaches hosts behind a
// jump host (Hot Aisle bare metal's ssh_access) through direct-tcpip,
// reopening the jump connection when it drops during the retries; it
// pins host keys per rental (the instance id and its request id,
// [HostIdentity]: a server rented again under the same name is pinned anew)
// or checks known_hosts, and refuses a changed key with a
// *HostKeyMismatchError; it keeps private keys in memory
// only. It then runs the agent's install steps and start command as
// separate checked steps with timeouts, starting the agent detached
// (systemd, or setsid/nohup) so it outlives the session, and verifies the
// agent's health through a direct-tcpip forward to its localhost port, the
// same path used afterwards. Starter implements fleet.Agent.
//
// # Where to start
//
//   - [New] with an [AgentSpec] ([DstackShim] is the preset), the SSH keys to
//     log in with and a [HostKeyPolicy] ([TrustOnFirstUse] with a
//     [MemoryHostKeyStore], [PinnedKey] or [KnownHosts]).
//   - Options: [WithDial] (a fake network in tests), [WithUser],
//     [WithTimeouts], [WithBackoff], [WithLogger].
//   - [Starter.Start] and [Starter.Check] directly, or pass the Starter as
//     fleet.Config.Agent and let the Manager call them.
//   - Errors: [StageOf] tells which stage failed ([StageDial], ...); a failed
//     install step is a [*StepError] with its stderr, a bad host key a
//     [*HostKeyMismatchError], an unhealthy agent a [*HealthError].
//
// The Example starts dstack-shim on a fake host of package sim.
package shim
