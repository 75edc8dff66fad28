package sim

import "github.com/gpufleet/gpufleet/sim/internal/core"

// The shared vocabulary of both fakes. The types are aliases: a value of
// one is the same type wherever it is named, and their fields and methods
// are documented where they are defined.

// Clock is the single source of time of a fake: every state timeline, rate
// limit, billing entry and blocking call reads it. Now returns the current
// cloud time; Sleep waits for a duration of cloud time or until its context
// ends (returning the context's error).
type Clock = core.Clock

// RealClock returns the process clock (time.Now and timers). Inside a
// testing/synctest bubble this is the bubble's fake clock.
func RealClock() Clock { return core.RealClock() }

// MaxSpeed is the fastest ScaledClock CheckSpeed accepts: one cloud hour in
// 36 ms of wall time (the clock stops 290 years of cloud time after its
// start, about 25 wall hours at this speed).
const MaxSpeed = core.MaxSpeed

// CheckSpeed returns an error unless speed is a number in (0, MaxSpeed]
// (NaN and infinities are not): check a -speed flag with it.
func CheckSpeed(speed float64) error { return core.CheckSpeed(speed) }

// ScaledClock returns a clock that runs speed times faster than the process
// clock, starting at the current time: with speed 60, one cloud hour passes in
// one wall minute. A speed CheckSpeed refuses is taken as 1.
func ScaledClock(speed float64) Clock { return core.ScaledClock(speed) }

// MaxBodyBytes is the largest request body the fakes read (1 MiB); a larger
// one is refused in the provider's dialect with 413.
const MaxBodyBytes = core.MaxBodyBytes

// AnyRoute as a Fault's Route matches every served route (an outage).
const AnyRoute = core.AnyRoute

// ErrUnknownRoute is wrapped by the error Inject returns for a Route the fake
// does not serve; Routes lists the ones it does.
var ErrUnknownRoute = core.ErrUnknownRoute

// ErrNoServer is wrapped by the error of an out-of-band operation
// (HaltOutOfBand, DestroyOutOfBand, RelabelOutOfBand) on a server the fake
// does not have, or no longer has.
var ErrNoServer = core.ErrNoServer

// Fault is an injected failure: a delay (Latency, LatencyMax), stale reads
// (VisibilityLag), and an answer that replaces the handler's (Status with
// Message, AfterCommit, Reset, EmptyBody or CutAfter), on one route or
// AnyRoute, for Times calls, a seeded Probability of them, or a Duration of
// cloud time. Faults are off by default, deterministic and answered in the
// provider's own error dialect; Inject arms one.
type Fault = core.Fault

// FaultKind names what a fault did to a call: FaultStatus, FaultReset,
// FaultEmptyBody, FaultErrorBody, FaultCut, FaultLatency, FaultLag or
// FaultRateLimit.
type FaultKind = core.FaultKind

// The kinds of FiredFault.
const (
	// FaultStatus: the call was answered with an injected status and error
	// body (before it took effect, or after with AfterCommit).
	FaultStatus = core.FaultStatus
	// FaultReset: the connection was dropped.
	FaultReset = core.FaultReset
	// FaultEmptyBody: a status (usually 200) with an empty body.
	FaultEmptyBody = core.FaultEmptyBody
	// FaultErrorBody: a 2xx status carrying an error body.
	FaultErrorBody = core.FaultErrorBody
	// FaultCut: the answer's body was cut short.
	FaultCut = core.FaultCut
	// FaultLatency: the call was delayed.
	FaultLatency = core.FaultLatency
	// FaultLag: the read was stale (recent servers hidden).
	FaultLag = core.FaultLag
	// FaultRateLimit: a 429 of a chaos burst.
	FaultRateLimit = core.FaultRateLimit
)

// FiredFault is one effect a fault had on one call, for inspection: when
// (cloud time), the call's method, route and path, the Kind, the Status and
// Message sent, the Delay of a latency or lag, whether the call took effect
// (Commit) and whether chaos mode fired it (Chaos).
type FiredFault = core.FiredFault

// ChaosProfile is a set of fault rates for chaos mode (WithChaos), each a
// probability per call from 0 to 1: server errors, commits that report an
// error, resets, 429 bursts, cut, empty and error bodies, stale reads, the
// provider's own refusals, and slow calls.
type ChaosProfile = core.ChaosProfile

// ChaosBadDay is the "bad-day" profile: the faults a cloud API shows on a
// bad day, at rates that a fleet of a few dozen machines meets every hour.
// Per call: 2% 5xx before the call takes effect, 0.5% of mutations take
// effect then answer 500, 1% connection resets, 0.2% chance of starting a
// 2-second burst of 429s, 0.5% of reads cut short, 0.2% empty 200s, 0.2%
// 200s carrying an error, 5% stale reads that miss servers younger than 30
// s, 5% provider refusals on the routes that have them, and 5% of calls
// slowed by 0.5 to 5 s.
func ChaosBadDay() ChaosProfile { return core.ChaosBadDay() }

// ChaosStorm is the "storm" profile: every fault of ChaosBadDay five times
// as often (stale reads, provider refusals and slow calls at 20%), for
// stress tests of retry and recovery paths.
func ChaosStorm() ChaosProfile { return core.ChaosStorm() }

// ChaosProfileNames lists the named profiles ChaosProfileByName knows.
func ChaosProfileNames() []string { return core.ChaosProfileNames() }

// ChaosProfileByName returns the named profile ("bad-day", "storm").
func ChaosProfileByName(name string) (ChaosProfile, bool) { return core.ChaosProfileByName(name) }

// Call is one request a fake answered, for inspection: the cloud time it
// arrived, its method, the served route pattern ("" for an unknown path),
// path, raw query, the status answered (0 for a dropped connection) and
// whether an injected fault answered it.
type Call = core.Call

// The kinds of Resource.
const (
	KindInstance       = core.KindInstance       // a Vultr instance (VM or Cloud GPU)
	KindBareMetal      = core.KindBareMetal      // a Vultr or Hot Aisle bare-metal server
	KindVirtualMachine = core.KindVirtualMachine // a Hot Aisle VM
	KindVPC            = core.KindVPC            // a Vultr VPC
	KindSSHKey         = core.KindSSHKey         // a registered SSH key
)

// Resource is a live or deleted resource of a fake, in provider-neutral
// terms: kind, provider id, name, label, tags, description, plan, region, the
// provider's state and power strings, and when it was created and deleted
// (Deleted is zero while it is live; Live reports it).
type Resource = core.Resource

// LiveOf returns the live resources of kind ("" for every kind) among rs,
// in their order.
func LiveOf(rs []Resource, kind string) []Resource { return core.LiveOf(rs, kind) }

// Charge is one resource's entry in a fake's billing ledger: the rate in USD
// per hour, the billed span, the time charged after the provider's rounding
// and minimums, the amount in USD, whether it still bills, and the unused
// part of a minimum reservation (USD).
type Charge = core.Charge

// Ledger is a fake's bill: one charge per billable resource and the total in
// USD.
type Ledger = core.Ledger

// Snapshot is everything a fake can tell about itself at one moment, in a
// JSON-encodable form (the standalone server's admin API returns it): the
// cloud time, the resources, the call log and the ledger.
type Snapshot = core.Snapshot
