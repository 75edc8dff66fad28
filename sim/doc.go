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
//   - Faults: the Inject method of [Vultr] and [HotAisle] takes any [Fault];
//     named helpers switch on what the clouds are known for (Vultr's
//     LockWindow, FlakyAttach, SoldOut and Outage, Hot Aisle's Outage and
//     SoldOut, ...).
//   - What happened: Resources (every kind the fake holds: servers, VPCs,
//     SSH keys; a [Resource] is Live while it exists; LiveResources picks
//     the live ones of a kind), the calls (Calls, each a [Call]), the faults
//     that fired (Faults, each a [FiredFault]) and the billing [Ledger] in
//     USD.
//   - Fake SSH hosts: a [Network] shared by both fakes; servers get a [Host]
//     when they run, reached through the fakes' Dial.
//
// A consumer's test typically builds a fleet.Manager over both fakes inside
// a testing/synctest bubble, injects a fault, runs its own code, and asserts
// that nothing is live and what the ledgers charged: see the package
// Example, and examples/consumertest in the module for whole tests.
// cmd/gpufleet-sim serves the same fakes over HTTP for other languages.
//
// # Layout
//
// This package is the public face: the constructors, the options, and the
// vocabulary shared with the fakes, declared as aliases of the types of
// the internal packages below it, so that a [Vultr], a [Fault] or a
// [Resource] is one type wherever it is named. The methods of the aliased
// types are documented with the internal packages: sim/internal/vultrfake
// (the Vultr fake), sim/internal/hotaislefake (the Hot Aisle fake),
// sim/internal/sshhost (the fake SSH hosts and their network) and
// sim/internal/core (the request pipeline shared by both fakes: routing,
// authentication, rate limit, faults, chaos mode, call log, clock,
// in-memory transport, inspection types). Each imports only the ones after
// it in this order, the fakes never each other, and none imports this
// package; `go doc -all` on any of them lists its methods.
//
// # Faults
//
// Every failure below is off by default (except the physics: locks, windows,
// limits), deterministic, and answered in the provider's own dialect: Vultr
// {"error":"<message>","status":<code>}, Hot Aisle a JSON string. Faults fire
// per route (the patterns Routes lists) and what fired is listed by Faults.
//
// On any route of either fake, with Inject(Fault{...}) or a named helper:
//   - a 5xx (or any 4xx) before the call takes effect: Fault.Status;
//   - a 5xx after it took effect (the create that reported failure):
//     Fault.AfterCommit;
//   - a dropped connection: Fault.Reset; every call for a while: Outage;
//   - slow answers, fixed or a seeded draw within a range: Fault.Latency and
//     Fault.LatencyMax, or SlowAnswers;
//   - a body cut after N bytes (the client reads an unexpected EOF; the call
//     took effect): Fault.CutAfter;
//   - a 200 with an empty body, or a 2xx carrying an error body:
//     Fault.EmptyBody, Fault.Status 200;
//   - 429 bursts with Retry-After: RateLimitBurst, or Fault.Status 429 with
//     RetryAfter;
//   - stale reads (eventual consistency: a server created less than a lag
//     ago is missing from lists and its GET answers 404): WithVisibilityLag
//     for the whole fake, StaleReads or Fault.VisibilityLag for some calls;
//   - any of these on a seeded share of calls: Fault.Probability.
//
// Vultr (the wording the real API sends, from public reports):
//   - DELETE soon after create: 500 "Unable to destroy server: This
//     subscription is not currently active, you cannot destroy it."
//     (VultrTiming.Pending, NotActiveWindow);
//   - any mutation for minutes after becoming active, even when
//     server_status says "ok": 500 "Unable to destroy server: Unable to
//     remove VM: Server is currently locked" (VultrTiming.Lock, LockWindow);
//   - VPC attach failing: 500 "Unable to attach VPC" (FlakyAttach); a plan
//     without private networking: 400 "This plan does not support private
//     networking.";
//   - VPC delete refused while attachments linger: 400 "The following
//     servers are attached to this VPC network: <ids>"
//     (VultrTiming.AttachLinger, DetachLag, RefuseVPCDelete);
//   - a plan sold out, or sold out after it was listed: 400 "Plan is not
//     available in the selected region." (SoldOut, SoldOutAfterListing);
//   - a list with two filters: 400 "Only one filter per request is
//     allowed.";
//   - the rate limit: 429 "Rate limit reached - please try your request again
//     later." with Retry-After (30 requests per second per key,
//     WithVultrRateLimit, SqueezeRateLimit);
//   - a gone server: 404 "Invalid instance-id." or "Invalid server.", or, for
//     one destroyed in the console, 400 "invalid instance ID"
//     (DestroyOutOfBand with VultrGoneInvalidID);
//   - internal_ip blank with two or more VPCs attached.
//
// Hot Aisle (the spec's responses; texts the spec leaves open are the
// fake's):
//   - release before the minimum reservation: 400 "server cannot be
//     released due to minimum usage requirement" (SetMinimumReservation);
//   - no capacity: 404 "No available virtual machine matching requested
//     specifications" or "no available servers matching specifications"
//     (SoldOut, SetQuantity, SoldOutAfterListing);
//   - limits and balance: 401 "Maximum VMs already provisioned for this
//     team", 403 "tenant limit exceeded", 402 "Insufficient balance to
//     provision virtual machine" (SetVMLimit, SetBareMetalLimit,
//     InsufficientBalance);
//   - a gone server: 404 "Not Found: Resource not found"; a key registered
//     twice: 409 "Conflict - key already registered"; a power operation on a
//     stopped VM: 400 "Bad Request: virtual machine is not running"; a
//     bare-metal power action refused by the power state or while the
//     operating system installs: 400 "Bad Request: server is powered off",
//     "Bad Request: server must be powered off for an AC reset",
//     "Bad Request: operating system install in progress"; power reads and
//     actions during an AC (alternating current, at the mains) reset: 500 "Internal Server Error";
//   - sshd late after "running" (SlowSSH), a blocking DELETE
//     (SetDeleteDelay).
//
// Drift behind the client's back, on both fakes: HaltOutOfBand,
// RelabelOutOfBand, DestroyOutOfBand, and ReuseReleasedIPs (a new server
// takes a released address, with a new SSH host key). Hot Aisle also serves
// the VM power routes (stop, start, shutdown, reboot, hard-reset) and the
// bare-metal ones (power_on, graceful_shutdown, force_shutdown,
// warm_reboot, cold_reboot, ac_reset); Vultr serves halt, start and reboot.
// Stopped servers keep billing on both.
//
// # Chaos mode
//
// WithChaos(seed, profile) (or StartChaos, or gpufleet-sim -chaos) arms
// seeded random faults over all routes from a ChaosProfile: ChaosBadDay, the
// faults above at the rates of a bad day, or ChaosStorm. The same seed and
// the same calls give the same faults, and Faults lists what fired. It is the
// way to test an orchestrator against a misbehaving cloud without scripting
// each fault: run the orchestrator against a fake in chaos mode (inside a
// synctest bubble), then check invariants from the fake's own state with
// LiveResources and Ledger; see the example of WithChaos.
package sim
