// Package sim provides faithful in-process fakes of the Vultr API v2 and the
// Hot Aisle API, and fake SSH hosts for the servers they run.
//
// The fakes are written from the published API facts (paths, bodies, status
// codes, error dialects, state timelines, billing rules), never from the Go
// types of gpufleet's own clients, so that they can catch the clients'
// mistakes. They are deterministic: time comes from one Clock (the real clock
// by default, so that inside a testing/synctest bubble hours of cloud time pass
// in milliseconds), faults are count- or time-based, and anything random comes
// from WithSeed.
//
// Both fakes implement http.Handler, so they can be served by httptest.Server
// or a real listener, and Client returns an *http.Client whose transport calls
// the handler in memory (no sockets), safe inside synctest.
//
// # Where to start
//
//   - [NewVultr] and [NewHotAisle], with options such as [WithClock] (a
//     [ScaledClock] to speed cloud time up outside synctest), [WithSeed] and
//     [WithNetwork]; their Client method gives the *http.Client to hand to
//     package vultr's or hotaisle's client (WithHTTPClient).
//   - Faults: [Vultr.Inject] and [HotAisle.Inject] take any [Fault]; named
//     helpers switch on what the clouds are known for ([Vultr.LockWindow],
//     [Vultr.FlakyAttach], [Vultr.SoldOut], [Vultr.Outage],
//     [HotAisle.Outage], [HotAisle.SoldOut], ...).
//   - What happened: [Vultr.Resources] (every kind the fake holds: servers,
//     VPCs, SSH keys; [Resource.Live] is true while it exists), the calls
//     (Calls, each a [Call]) and the billing [Ledger] in USD.
//   - Fake SSH hosts: a [Network] shared by both fakes; servers get a [Host]
//     when they run, reached through the fakes' Dial.
//
// A consumer's test typically builds a fleet.Manager over both fakes inside
// a testing/synctest bubble, injects a fault, runs its own code, and asserts
// that nothing is live and what the ledgers charged: see the package
// Example, and examples/consumertest in the module for whole tests.
// cmd/gpufleet-sim serves the same fakes over HTTP for other languages.
package sim
