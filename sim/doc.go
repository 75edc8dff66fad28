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
package sim
