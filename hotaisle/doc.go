// Package hotaisle is a typed client for the Hot Aisle cloud API
// (https://admin.hotaisle.app/api): the user and teams, SSH keys, the
// available VM and bare-metal types (offers), virtual machines and bare-metal
// servers.
//
// # Where to start
//
//   - [New] with an API key, the team handle and options such as
//     [WithHTTPClient] (point it at package sim's fake in tests).
//   - [Client.Check] to verify the key, the team and the role it needs.
//   - [Client.ListVMTypes] and [Client.ListBareMetalTypes] for offers;
//     [Client.ProvisionVM], [Client.UpdateVM] (the label), [Client.DeleteVM]
//     for VMs; [Client.ReserveBareMetal] and [Client.ReleaseBareMetal] for
//     bare metal; [Client.AddSSHKey] and [Client.DeleteSSHKey] for the keys
//     machines accept.
//   - [APIError] for what Hot Aisle answered; errors.Is with package fleet's
//     classes (fleet.ErrMinReservation, fleet.ErrNotFound, ...) for what it
//     meant.
//   - [NewProvider] (with [WithBareMetal] to rent bare metal, prepaid for 8
//     hours) to hand the client to a fleet.Manager.
//
// The Examples run against package sim's in-memory fake of Hot Aisle.
//
// # Shapes and units
//
// The raw types mirror the API and keep its units: every capacity
// (ram_capacity, disk_capacity, per-disk and per-module capacity) is in BYTES,
// CPU frequency in Hz, prices in US CENTS per hour for the whole instance.
// The offer rows use PascalCase keys (Quantity, MinimumReservationMinutes,
// OnDemandPrice, Specs); everything else is snake_case. A VM's "cpus" is one
// object ([VMSpecs.CPUs] is a *[CPU]); a bare-metal server's "cpus" is an
// array ([BareMetalSpecs.CPUs] is a [CPUList]). Decoding is lenient: unknown
// fields are ignored, optional fields may be absent, "" and null both mean
// unset. It is strict about what each endpoint promises: a 2xx answer that
// is not a JSON array where a list is due (an empty body, null, {}, an error
// message sent with 200), or an object without its name (a VM, a server), is
// a *[DecodeError], never an empty list or a nameless VM.
//
// # Errors
//
// Every non-2xx answer is a *[APIError] (status, message, raw body,
// Retry-After, request id) that answers errors.Is for exactly one class of
// package fleet (fleet.ErrNotFound, fleet.ErrMinReservation, ...). The
// (status, message) patterns that select a class live in one table in
// errors.go; no other code compares error text. A failure to reach the API
// (*[TransportError]) answers fleet.ErrUnavailable. Error texts start with
// "hotaisle: " once and end with the request id when the API sent one.
//
// # Retries, rate limit, timeouts
//
// GET and DELETE are retried on 429 (honouring Retry-After) and on 502, 503,
// 504 and connection failures, with capped jittered backoff bounded by the
// call's context. POSTs (provision, reserve, add key) and PATCHes are never
// retried: a 5xx can hide a success. All calls of one Client share one
// client-side rate limiter (default [DefaultRateLimit] per second). Every
// wait (limiter, Retry-After, backoff) runs on the Client's [Clock]: give
// [WithClock] the clock of the fleet Manager and the simulator. A VM
// DELETE blocks server-side until the VM is reset (about 20 s), so the
// default HTTP client allows [DefaultTimeout] per attempt; a DELETE that timed
// out is safe to repeat, and fleet.ErrNotFound on the repeat means "gone".
//
// # Secrets
//
// The API key lives only in the closure that sets the Authorization header:
// it never appears in a log line, an error, or the String, GoString or %v
// output of a Client. No redirect is followed (the API sends none): a 3xx
// answer is an *[APIError] of class fleet.ErrUnavailable (its effect is
// unknown: a front that redirects may have carried the request out) that
// unwraps to a *[RedirectError], and nothing is sent to the location.
package hotaisle
