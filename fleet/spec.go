package fleet

import (
	"crypto"
	"fmt"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// Placement says where a fleet's instances may land.
type Placement string

// Placements.
const (
	// PlacementAny lets every instance land on any matching offer.
	PlacementAny Placement = "any"
	// PlacementCluster puts every instance on one provider, in one region,
	// in one VPC; offers without private networking are excluded. The
	// cluster stays where its first member (or its VPC) is: requirements
	// applied later that exclude that provider or region stop its growth
	// (EventNoOffers says why) instead of moving or splitting it.
	PlacementCluster Placement = "cluster"
)

// ReleasePolicy says when an instance is released relative to its
// reservation window (Instance.ReservedUntil).
type ReleasePolicy string

// Release policies.
const (
	// ReleaseAtReservationEnd (the default) releases an idle or released
	// instance only once its reservation window ends: the minimum is paid
	// anyway, so the machine stays usable until then. Except when another
	// fleet of the Manager is refused the stock it keeps (see
	// Policy.RebuyHoldOff): a release waiting for a per-minute minimum's end
	// (Hot Aisle) with no job on it then goes at once, forced (the minimum
	// is charged whole either way).
	ReleaseAtReservationEnd ReleasePolicy = "reservation-end"
	// ReleaseNow releases at once; on Hot Aisle this forces the release
	// (?force=true) and the unused minimum is charged, not refunded.
	ReleaseNow ReleasePolicy = "now"
	// ReleaseCompat mimics the original integration: Hot Aisle bare metal is
	// never force-released inside its prepaid 8 hours; the instance stays
	// terminating for CompatGiveUp (15 min), then is untracked with a
	// ManualCleanupRequired event naming the server. Off by default: it can
	// leave a billed machine behind.
	ReleaseCompat ReleasePolicy = "compat"
)

// PrivateKey holds an SSH private key in memory only. It prints as
// "[private key]" with every fmt verb, so it never reaches a log or an event.
type PrivateKey struct{ signer crypto.Signer }

// NewPrivateKey wraps a signer (ed25519.PrivateKey, *rsa.PrivateKey, ...).
func NewPrivateKey(s crypto.Signer) PrivateKey { return PrivateKey{signer: s} }

// Signer returns the wrapped key, nil when empty.
func (k PrivateKey) Signer() crypto.Signer { return k.signer }

// IsZero reports whether no key is held.
func (k PrivateKey) IsZero() bool { return k.signer == nil }

// String redacts the key.
func (k PrivateKey) String() string { return "[private key]" }

// GoString redacts the key.
func (k PrivateKey) GoString() string { return "[private key]" }

// Format redacts the key for every verb.
func (k PrivateKey) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte("[private key]")) }

// Spec is the desired state of a fleet.
type Spec struct {
	// Name identifies the fleet (see ValidateFleetName); it goes into labels.
	Name string
	// Nodes is how many instances the fleet keeps.
	Nodes int
	// Requirements select the offers (providers, regions, instance types,
	// GPUs, bare metal yes/no/any, max price, ...).
	Requirements Requirements
	// Placement is PlacementAny (default) or PlacementCluster.
	Placement Placement
	// MinNodes is the size below which idle instances are not released
	// (nor Nodes lowered by an idle release; see IdleTimeout).
	MinNodes int
	// IdleTimeout turns on the release of idle instances (0: never by
	// idleness). The idle clock starts when the instance is ready, or at its
	// last MarkIdle or GiveBack (for an instance idle when an Apply raised
	// Nodes, again when that growth is met or given up: see below). When an idle instance goes depends on its billing, not
	// on IdleTimeout alone: IdleTimeout only applies where keeping the
	// instance longer costs more.
	//
	//   - Billed per started hour (Vultr): at the last safe moment of the
	//     hour it is in (or of its minimum reservation when longer): the
	//     hour's end less Policy.CalmHourlyReleaseMargin (3 min; while the
	//     provider's calls fail, Policy.HourlyReleaseMargin, 10 min),
	//     whatever IdleTimeout says — releasing earlier saves nothing, later
	//     buys the next hour. With the default margins and an IdleTimeout of
	//     3 hours, a node idle since minute 5 still goes at minute 57 (50
	//     while the provider is unsettled). Nor does it go while the
	//     provider refuses its delete after it started running
	//     (Offer.DeleteLock, 5 min on Vultr): bare metal ready at minute 51
	//     of its first hour stays acquirable until minute 56, then goes if
	//     unused; when no delete can land before the hour's end it is kept to
	//     the next hour's last safe moment.
	//   - Billed per minute with a minimum reservation (Hot Aisle): a node
	//     whose job ended inside its minimum goes at the minimum's end less
	//     Policy.MinuteReleaseMargin (the minimum is paid anyway; the timer
	//     does not carry it past). A node idle after its minimum, or never
	//     used yet, goes IdleTimeout after it went idle, not before its
	//     minimum's end less the margin. Either may be kept longer, by
	//     default, while the re-buy hold keeps it (at most one minimum past
	//     its minimum's end or its last job, the later; Policy.RebuyHoldOff
	//     says which and how long). A node whose start is unknown
	//     (adopted after a restart that lost the Store: Hot Aisle gives no
	//     start) is released IdleTimeout after it went idle without force;
	//     while the provider refuses for the minimum it is kept (paid anyway)
	//     and tried again (see Policy.MinuteReleaseMargin).
	//   - Billed per minute without a minimum: IdleTimeout after it went idle.
	//
	// A node powered on again after a stop out of band (Policy.OnStopped)
	// keeps when it went idle and whether a job ended on it (a job under way
	// at the stop ended then): it goes when it would have without the stop,
	// also while it is still booting again. One idle at the stop keeps its
	// re-buy hold too: while it is powered on and boots again it counts as
	// the spare it will be once ready (after the spares Acquire can hand out
	// now), and goes when the hold ends.
	//
	// With the ReleaseNow policy an instance goes once idle IdleTimeout,
	// whatever it has paid for (forced inside a Hot Aisle minimum). An idle
	// release lowers the fleet's Nodes by one, and to the members the fleet
	// keeps (creates under way counted) when that is fewer (a growth given
	// up, a create that failed), never below MinNodes, so the node is not
	// replaced; a fleet's last MinNodes members are not released as idle.
	// Apply again to grow the fleet (it first takes back instances whose
	// release still waits). So does an idle node (not busy, not handed out,
	// not kept for a growth as below) of a fleet with an IdleTimeout, above
	// MinNodes, that is powered off (Policy.OnStopped = OnStoppedReplace) or
	// destroyed out of band (EventInstanceVanished): it would have gone for
	// idleness, and no replacement is bought for it. A busy one is replaced.
	// A controller that re-applies its spec on a timer therefore buys back
	// what the idle release let go (each re-apply of the earlier Nodes is a
	// raise): apply the Nodes read back from Fleets (or ListFleets)
	// unless there is work for more, and keep the nodes wanted at all times
	// with MinNodes. (A read made just before an idle release, applied just
	// after it, is still a raise: there is no compare-and-set on Nodes.)
	//
	// An Apply that raises Nodes wants the fleet's idle nodes too: a node
	// idle at that Apply is not released as idle until the growth is met (as
	// many members ready to run a job as Nodes says) or given up (Nodes
	// lowered again to no more than before the growth — a lowering that
	// still asks for more goes on with the growth, met at the new Nodes —,
	// the fleet deleted or stalled, or still short after
	// Policy.ProvisionTimeout, or BareMetalProvisionTimeout, plus
	// AgentTimeout), and its idle clock then starts again: from the moment
	// the growth was met (from the Apply when given up). Per minute, it goes
	// by the rules above from then: a new node inside its minimum, first in
	// Acquire's order, takes the re-buy hold's spare slot, and the old one
	// goes IdleTimeout after the growth was met, not in the pass that saw
	// the new node ready; one whose job ended inside its minimum, the growth
	// met inside it too, stays 5 minutes (IdleTimeout when shorter) after
	// the growth was met at least, past its minimum's end less the margin
	// when that comes first. Per hour, it stays to the last safe moment of the
	// hour in which 5 minutes (IdleTimeout when shorter) after the growth
	// was met falls, or of the next hour when that moment has passed.
	// Nodes that go idle after the Apply keep their own clock.
	IdleTimeout time.Duration
	// ReleasePolicy overrides Policy.Release for this fleet when set.
	ReleasePolicy ReleasePolicy
	// SSHKeys are authorized_keys lines installed for the login user.
	SSHKeys []string
	// PrivateKey is the key the agent starter logs in with for this fleet
	// (in memory only; passed to an Agent that implements KeyedAgent).
	PrivateKey PrivateKey
}

// KeyedAgent is an Agent that can log in with a fleet's own private key.
type KeyedAgent interface {
	Agent
	// WithKey returns an Agent that uses key.
	WithKey(key PrivateKey) Agent
}

func (s Spec) validate() error {
	if err := ValidateFleetName(s.Name); err != nil {
		return err
	}
	if s.Nodes < 0 || s.MinNodes < 0 || s.IdleTimeout < 0 {
		return fmt.Errorf("gpufleet: fleet %s: Nodes, MinNodes and IdleTimeout must not be negative", s.Name)
	}
	if s.MinNodes > s.Nodes {
		return fmt.Errorf("gpufleet: fleet %s: MinNodes %d is over Nodes %d", s.Name, s.MinNodes, s.Nodes)
	}
	if s.Nodes > MaxNodes {
		return fmt.Errorf("gpufleet: fleet %s: Nodes %d is over %d", s.Name, s.Nodes, MaxNodes)
	}
	if err := s.Requirements.Validate(); err != nil {
		return fmt.Errorf("gpufleet: fleet %s: %w", s.Name, unprefixed(err))
	}
	for i, k := range s.SSHKeys {
		if err := validateAuthorizedKey(k); err != nil {
			return fmt.Errorf("gpufleet: fleet %s: SSHKeys[%d]: %w", s.Name, i, err)
		}
	}
	switch s.Placement {
	case "", PlacementAny, PlacementCluster:
	default:
		return fmt.Errorf("gpufleet: fleet %s: unknown placement %q", s.Name, s.Placement)
	}
	switch s.ReleasePolicy {
	case "", ReleaseAtReservationEnd, ReleaseNow, ReleaseCompat:
	default:
		return fmt.Errorf("gpufleet: fleet %s: unknown release policy %q", s.Name, s.ReleasePolicy)
	}
	return nil
}

// MaxNodes bounds a fleet's size (a typo like 2^40 must not rent anything).
const MaxNodes = 10000

// validateAuthorizedKey accepts exactly one authorized_keys line: no
// newline (it goes into cloud-config and account key lists), and a key that
// parses.
func validateAuthorizedKey(k string) error {
	if strings.ContainsAny(k, "\r\n") {
		return fmt.Errorf("an SSH key must be one line")
	}
	if _, _, _, rest, err := ssh.ParseAuthorizedKey([]byte(k)); err != nil || len(rest) > 0 {
		return fmt.Errorf("not an authorized_keys line")
	}
	return nil
}

// The release margins' bounds: half a Vultr hour (the hourly margins), half
// the shortest Hot Aisle minimum reservation, 30 minutes (the minute
// margin). A margin that long would release a node before it had used
// half of what it paid, and the idle release would lower its fleet.
const (
	maxHourlyMargin = 30 * time.Minute
	maxMinuteMargin = 15 * time.Minute
)

// validate reports a policy that cannot work.
func (p Policy) validate() error {
	for name, d := range map[string]time.Duration{"ProvisionTimeout": p.ProvisionTimeout,
		"BareMetalProvisionTimeout": p.BareMetalProvisionTimeout, "AgentTimeout": p.AgentTimeout,
		"TerminationMinBackoff": p.TerminationMinBackoff, "TerminationMaxBackoff": p.TerminationMaxBackoff,
		"TerminationAlertAfter": p.TerminationAlertAfter, "CompatGiveUp": p.CompatGiveUp, "OrphanGrace": p.OrphanGrace,
		"CreateLookupGrace": p.CreateLookupGrace, "HourlyReleaseMargin": p.HourlyReleaseMargin, "CalmHourlyReleaseMargin": p.CalmHourlyReleaseMargin,
		"MinuteReleaseMargin": p.MinuteReleaseMargin, "CreateTimeout": p.CreateTimeout, "CallTimeout": p.CallTimeout,
		"VisibilityGrace": p.VisibilityGrace, "HistoryRetention": p.HistoryRetention, "DriftCheckInterval": p.DriftCheckInterval,
		"AgentCheckInterval": p.AgentCheckInterval, "LeaseTTL": p.LeaseTTL, "RebuyHold": p.RebuyHold} {
		if d < 0 {
			return fmt.Errorf("gpufleet: Policy.%s must not be negative", name)
		}
	}
	for name, c := range map[string][2]time.Duration{"HourlyReleaseMargin": {p.HourlyReleaseMargin, maxHourlyMargin},
		"CalmHourlyReleaseMargin": {p.CalmHourlyReleaseMargin, maxHourlyMargin}, "MinuteReleaseMargin": {p.MinuteReleaseMargin, maxMinuteMargin}} {
		if c[0] >= c[1] {
			return fmt.Errorf("gpufleet: Policy.%s is %v, not under %v: a node would be released before it had used the time it paid for", name, c[0], c[1])
		}
	}
	for name, d := range map[string]time.Duration{"HourlyReleaseMargin": p.HourlyReleaseMargin,
		"CalmHourlyReleaseMargin": p.CalmHourlyReleaseMargin} {
		if d > 0 && d < boundarySlack {
			return fmt.Errorf("gpufleet: Policy.%s is %v, under %v: a release planned in an hour's last %v counts for the next hour, so the node would never be released", name, d, boundarySlack, boundarySlack)
		}
	}
	if p.RebuySpares < 0 || (p.RebuySpares > 0) != (p.RebuyHold > 0) {
		return fmt.Errorf("gpufleet: Policy.RebuySpares and RebuyHold are set together, neither negative")
	}
	if p.TerminationMaxBackoff > 0 && p.TerminationMinBackoff > p.TerminationMaxBackoff {
		return fmt.Errorf("gpufleet: Policy.TerminationMinBackoff is over TerminationMaxBackoff")
	}
	switch p.Release {
	case "", ReleaseAtReservationEnd, ReleaseNow, ReleaseCompat:
	default:
		return fmt.Errorf("gpufleet: Policy.Release: unknown release policy %q", p.Release)
	}
	switch p.OnStopped {
	case "", OnStoppedReplace, OnStoppedRestart:
	default:
		return fmt.Errorf("gpufleet: Policy.OnStopped: unknown value %q", p.OnStopped)
	}
	if p.VPCAttachAttempts < 0 || p.Parallelism < 0 || p.MaxDeadlineMisses < 0 || p.MaxConcurrentCreates < 0 || p.AgentCheckFailures < 0 {
		return fmt.Errorf("gpufleet: Policy counts must not be negative")
	}
	return nil
}

// Policy holds the Manager's timing rules. Zero fields take the defaults
// documented on each field.
type Policy struct {
	// Release is the default release policy (ReleaseAtReservationEnd).
	Release ReleasePolicy
	// ProvisionTimeout is how long a provider may take to say a VM is
	// running when the offer does not say (20 min). Vultr bare metal
	// offers carry 55 min: under the second billed hour, image pull
	// included; Hot Aisle bare metal 45 min. An instance that misses it
	// inside a prepaid minimum reservation (Hot Aisle: 8 hours of bare
	// metal are charged at the reserve) is kept until the minimum's end
	// less MinuteReleaseMargin ([EventDeadlineDeferred]): releasing it
	// earlier saves nothing.
	ProvisionTimeout time.Duration
	// BareMetalProvisionTimeout is ProvisionTimeout for bare-metal offers
	// that do not say (55 min; bare metal takes 10 to 40 minutes and more
	// to install and boot).
	BareMetalProvisionTimeout time.Duration
	// AgentTimeout is how long the agent may take to become healthy once
	// the provider says running (15 min). Each Agent.Start call is bounded
	// to a third of it and retried with backoff; a start failing with
	// ErrAgentPathDown does not count (the deadline counts from the last
	// such failure), and inside a prepaid minimum reservation the deadline
	// is deferred like ProvisionTimeout ([EventDeadlineDeferred]).
	AgentTimeout time.Duration
	// TerminationMinBackoff and TerminationMaxBackoff bound the capped,
	// jittered exponential backoff between release attempts (10 s, 5 min);
	// near a billing boundary attempts come sooner (see the package
	// documentation, "Releases and reservation windows").
	TerminationMinBackoff time.Duration
	TerminationMaxBackoff time.Duration
	// TerminationAlertAfter raises a TerminationStuck alert once a release has
	// failed for this long (15 min); retrying goes on. A release whose
	// refusals carried it past the end of a billed hour (Vultr) raises it
	// then, however long it has failed: another hour was bought.
	TerminationAlertAfter time.Duration
	// CompatGiveUp is how long ReleaseCompat keeps a refused Hot Aisle bare
	// metal release before untracking it (15 min).
	CompatGiveUp time.Duration
	// OrphanGrace is how long a labelled resource that no fleet claims is
	// left alone before it is deleted (10 min). An orphan instance's grace
	// ends at the latest at the last safe moment of the billed unit it was
	// found in (hourly billing: the hour's end less the hourly release
	// margin; per-minute billing: the minimum reservation's end less
	// MinuteReleaseMargin, for an unknown start the latest minimum it can
	// have, first seen plus the minimum): a grace carried past it would buy
	// a new unit for a machine nobody claimed, and a fleet applied later
	// buys one either way. Found after that moment, it is released at once.
	// The grace counts from the first find: its record is stored (with
	// replicas by the collector, without a lease), and a restarted Manager
	// or the replica taking the collector's lease over resumes it, and a
	// release under way, rather than start a new grace.
	OrphanGrace time.Duration
	// CreateLookupGrace is how long after an ambiguous create failure the
	// Manager keeps looking for the resource by label before it counts the
	// create as failed (5 min).
	CreateLookupGrace time.Duration
	// HourlyReleaseMargin: for hourly-billed offers (Vultr) the reservation
	// window ends this long before the next billed hour starts, so that a
	// release lands inside the hour already paid (10 min), while the
	// provider is unsettled: one of its list or delete calls failed within
	// the last 30 minutes for a reason that passes by itself (an outage,
	// HTTP 5xx, 429, a timeout; not an answer about the request, nor a
	// refusal of the account: 401/403), or the instance's own delete was
	// refused in the billed hour its release tries to land in (a release
	// put off to the next paid hour takes the calm margin there once the
	// provider has settled);
	// and in the first 30 minutes after the Store began to record the
	// providers' trouble (MetaUnsettled), which is the Manager's first 30
	// minutes on a Store without that record (one written by an older
	// release, or a new Store: what failed before is not known) or when it
	// cannot be read at start. The failures are recorded in the Store, so a
	// Manager restarted on it, or a replica that takes a fleet over, keeps
	// the margin its predecessor had: the wide one within 30 minutes (31
	// at most: the stored time is written once it moved by a minute) of a
	// recorded failure, the calm one otherwise. A release already deferred
	// to the calm margin comes forward when the provider turns unsettled.
	// Under 30 minutes and, when set, at least 10 seconds (a
	// release planned in an hour's last 10 seconds counts for the next
	// hour): NewManager refuses others (ErrInvalidConfig).
	HourlyReleaseMargin time.Duration
	// CalmHourlyReleaseMargin is HourlyReleaseMargin while the provider is
	// calm (none of the above): 3 min, six delete attempts at the 30-second
	// retry pace before the hour ends. One over HourlyReleaseMargin (set, or
	// its 10-min default) widens HourlyReleaseMargin to it: the margin kept
	// while the provider is unsettled is never the narrower one.
	// An idle node kept 7 minutes longer can still take a job. Calm is
	// judged on a fresh answer: the provider is listed when the wide margin
	// starts (the hour's end less HourlyReleaseMargin) for every idle node
	// or deferred release. Set it to HourlyReleaseMargin for one margin
	// whatever the provider's health.
	// Under 30 minutes and, when set, at least 10 seconds (a
	// release planned in an hour's last 10 seconds counts for the next
	// hour): NewManager refuses others (ErrInvalidConfig).
	CalmHourlyReleaseMargin time.Duration
	// MinuteReleaseMargin: for per-minute billing with a minimum reservation
	// (Hot Aisle) the window ends this long before the minimum does, and the
	// release is forced (the minimum is charged whole either way), so a
	// delete that blocks or lands a pass late bills no extra minute (1 min).
	// For an instance whose start is unknown (adopted; Hot Aisle gives none)
	// the release is tried without force, and while the provider refuses it
	// for the minimum it is tried again every MinuteReleaseMargin (so it
	// lands within a margin of the minimum's end) and forced at the latest
	// at the last safe moment of the longest minimum it can have (first
	// seen plus the minimum, less the margin). While the provider is
	// troubled (a call failed within 30 minutes, or the instance's delete
	// was refused) and HourlyReleaseMargin is over CalmHourlyReleaseMargin,
	// the window ends HourlyReleaseMargin before the minimum does when that
	// is longer, but at most 15 minutes (half the shortest minimum, 30 min):
	// forcing inside the minimum costs nothing, and the retries fit before
	// it ends. Past the minimum (every minute
	// billed) a refused release is retried every 30 seconds.
	// Under 15 minutes: NewManager refuses more (ErrInvalidConfig).
	MinuteReleaseMargin time.Duration
	// CreateTimeout bounds one create call, which runs detached from the
	// caller's context so that a cancellation cannot lose its answer (5 min).
	CreateTimeout time.Duration
	// VPCAttachAttempts bounds the failed VPC attaches of one instance,
	// whatever the error (an attach the instance's VPC listing does not show
	// counts too), before it goes on without the VPC, with a warning (10).
	// Refusals that ask to wait (the server locked, HTTP 429) do not count
	// but all attempts together stop at three times this number. After an
	// attempt that was not confirmed the instance's VPCs are listed before
	// the next attach; an instance the provider reports already attached is
	// attached.
	VPCAttachAttempts int
	// Parallelism bounds the provider calls under way at once besides
	// creates, lists and agent starts (8). Due releases take the free
	// slots earliest billing boundary first. A release due inside the last
	// release margin before its boundary (its reservation window's last
	// safe moment has come: a Vultr hour's end less the hourly margin, a
	// Hot Aisle minimum's end less MinuteReleaseMargin) starts whatever the
	// bound, besides the calls under way: queued behind others it would
	// land past the boundary and buy a new unit (a Hot Aisle VM DELETE
	// blocks about 20 s while the VM is reset: with Parallelism 1, 10 VMs
	// released at 29:00 billed 4 of them 31 to 32 minutes). Such deletes
	// still share the client's rate limiter. Starting forced releases
	// earlier instead would need each provider's delete time, which is not
	// known ahead. So does the release of an instance billed by the minute
	// past its minimum (every queued minute is paid). While one kind of a
	// provider's instances (VMs, bare metal) is down (its latest list or
	// delete call failed in a way that passes), one delete of that kind at
	// a time probes it and the others of that kind wait for its answer.
	Parallelism int
	// MaxDeadlineMisses stops a fleet's creates after this many instances
	// in a row missed their deadline (3): each may have paid a minimum. An
	// offer whose minimum reservation is over an hour (Hot Aisle bare metal,
	// 8 h prepaid) stalls its fleet at the first miss.
	MaxDeadlineMisses int
	// CallTimeout bounds every provider call but creates: lists, gets,
	// deletes, labels, VPC create, attach and delete, SSH key calls (90 s).
	// Calls run as tasks of the Manager, so even a call that hangs until
	// then delays no other work.
	CallTimeout time.Duration
	// MaxConcurrentCreates bounds the create calls under way at once (4);
	// they also share the clients' rate limiter.
	MaxConcurrentCreates int
	// VisibilityGrace is how long after its create a server that lists and
	// gets miss is taken as not yet visible rather than gone (3 min): new
	// servers can be missing from lists and answer 404 for a while.
	VisibilityGrace time.Duration
	// DriftCheckInterval is how often a running instance's provider listing
	// is read to notice drift: stopped, deleted or relabelled out of band
	// (10 min). One listing serves every instance of a provider and kind.
	// Where listings carry no power state (providers implementing
	// PowerChecker: Hot Aisle), each idle or busy instance that no Agent
	// checks also gets one power read per interval: 6 calls per
	// instance-hour at the default.
	DriftCheckInterval time.Duration
	// OnStopped says what to do with an instance stopped out of band
	// (OnStoppedReplace by default).
	OnStopped OnStopped
	// AgentCheckInterval is how often a ready instance's agent is checked
	// (5 min); AgentCheckFailures failed checks in a row (3) release and
	// replace the instance, each failure restarting the agent first.
	AgentCheckInterval time.Duration
	AgentCheckFailures int
	// RebuyHoldOff turns off the re-buy hold. By default, for offers billed
	// per minute with a minimum reservation (Hot Aisle), a fleet keeps some
	// idle instances for a while after their minimum has ended, since a job
	// arriving meanwhile would otherwise buy a whole new minimum (30 minutes
	// for virtual machines, 8 hours for bare metal).
	//
	// The default is the ski-rental break-even: idle instances kept as long
	// as a re-buy would waste — the whole minimum, or once the fleet has had
	// 4 jobs, the minimum less the mean time a new rental used of one: a
	// re-buy's boot (Offer.TypicalBoot, 10 minutes for bare metal) is billed
	// inside its minimum and never used, and the rest is used by the run of
	// jobs its node serves (a node's jobs less than a minute, or the boot,
	// apart are one run; its use is the busy time of the jobs on that node
	// in the minimum). So the hold is never shorter than the boot, even for
	// jobs longer than the minimum, and a node running jobs back to back,
	// however short each, is held about its boot into a lull. As many as
	// the most of the fleet's recorded jobs that ran at once, up to 8, or
	// as many as ran at once among those under way and those that ended in
	// the hour before the latest one ended, when more (never more nodes
	// than the jobs have needed at once). A kept instance idles at most that
	// hold h past its minimum's end or its last job, the later: an idle
	// period that ends with a job costs at most twice what the best choice
	// knowing the future would (h, or a re-buy that wastes h: the boot and
	// the unused rest of its minimum), when a re-buy wastes what past ones
	// would have; one that ends with no job costs h. The break-even holds
	// until one and a half minimums have passed since the fleet's first job
	// and until an instance of the fleet has been released after idling
	// past its minimum (a hold or an idle timer ran out with no job:
	// RebuyKind.IdledPastMinimum); from then on the default is no hold.
	//
	// Whatever the default, the hold is chosen again when a job starts or
	// ends and at least every ten minutes: the fleet's jobs of the last
	// three hours (or two minimums when longer, and at least its last 4
	// jobs however old) are replayed under the default and each candidate —
	// 1, 2, 3, 5 or 8 instances held an eighth, a quarter, a half or the
	// whole of the minimum, or the break-even — each job taking an idle
	// instance in Acquire's order or a new one, a hold still under way
	// charged only once it has ended; a candidate replaces the default only
	// when it would have saved at least one minimum reservation. The
	// instances kept are the first idle ones in Acquire's order (the most
	// paid time left: those still inside their minimum, paid anyway, first;
	// then the cheaper to keep, a $2.99/h vm-mi300x-1 before a $23.92/h
	// vm-mi300x-8; then the older): at most that many instances wait idle.
	// A fleet with no recorded jobs keeps none. Jobs are counted from
	// Acquire, MarkBusy and MarkIdle (or GiveBack) and stored in the
	// fleet's record (FleetRecord.FirstJob, Jobs), so a Manager that
	// restarts, or a replica that takes the fleet over, chooses as the one
	// that saw them. A node given back (GiveBack or MarkIdle) less than a
	// minute after it was handed out or marked busy did no work — a job
	// cancelled once placed — and is no job: it is not recorded, and the
	// hold does not start from it (its first job is the first that ran a
	// minute, or is still under way). The hold
	// is a bet on the recent past, not a guarantee. With RebuyHoldOff,
	// IdleTimeout alone decides once the minimum is paid. The hold is chosen
	// per kind of offer (its minimum reservation and boot time): a fleet
	// whose spec changed from 30-minute virtual machines to 8-hour bare metal
	// holds each of its idle nodes for its own offer. But a node whose offer
	// the spec no longer matches (its requirements, their price cap) is held
	// no longer than keeping it, at its price per hour, costs less than a
	// re-buy of the offer the spec buys now wastes (that offer's minimum
	// reservation, billed hour or boot, the longest, at its price; from the
	// cached catalog, the cheapest available, else sold out; none cached: as
	// before): a bare-metal node ($27.12/h) of a fleet changed to 60-minute
	// vm-mi300x-8 ($23.92/h) is held at most 53 minutes past its minimum or
	// its last job, not 8 hours; this bounds RebuySpares' holds too. Nodes
	// whose start is unknown (adopted) are not held.
	//
	// A hold never keeps stock another fleet of the Manager is refused for,
	// nor does a release waiting for a minimum's end. A fleet is refused stock
	// when a create of an offer is refused as sold out (ErrNoCapacity) and no
	// other offer it matches is open to it (listed available, not skipped for
	// a recent refusal, its provider's creates not held: with one open, its
	// next create takes it at once, and nothing gives way; once the last is
	// refused, every matching offer refused or listed as sold out counts), or
	// the catalog lists the offers it matches as sold out — the stock is that
	// offer (provider, region, instance type) — or when a create is refused
	// for the account's instance limit (ErrQuotaExceeded: Hot Aisle's team
	// limits, maximum_virtual_machines and maximum_bare_metal_servers) — the
	// stock is then every instance of that provider and kind (VMs, bare
	// metal). While such a fleet is short of members and has no idle member of
	// its own whose job ended since its Nodes were last raised (ready, no job
	// on it, not handed out by Acquire: a fleet with one has no work waiting
	// for more, whatever its Nodes; a new member waiting for its siblings does
	// not count), as many of the nodes other fleets keep on that stock with no
	// job for them as it lacks give way to it, with an EventReleaseRequested
	// that names it: first releases that wait only for a per-minute minimum's
	// end (paid anyway), whatever decided them (a deleted or shrunk fleet's
	// nodes, idle ones, released ones, a node stopped out of band and not
	// replaced, an unhealthy agent's, one no longer wanted), never one a job
	// ran on when its release was decided (Termination.Busy) until that job is
	// given back (GiveBack, MarkIdle), nor one its own fleet's growth takes
	// back in the same pass, released at once with force, which costs nothing
	// more (the minimum is charged whole either way); then idle nodes held
	// past their minimum, released at once; then held nodes still inside it,
	// released at its end (not released unforced before it). A held node gives
	// way only if the idle release may take it: one its fleet's MinNodes or an
	// IdleTimeout of 0 keeps is no hold. A node released for a fleet counts
	// against its need until a create of the fleet takes the stock it freed
	// (accepted on it once the node's release was), the fleet shrinks or is
	// deleted: a fleet short of two nodes that one freed stock served draws
	// another for the node it still lacks. A refusal counts for the need it
	// was answered to: a create of the fleet accepted ends it, and a later
	// shortfall (a growth applied after) makes nodes give way only after a new
	// refusal. It is not timed: it lasts while the fleet is short (a create
	// under way counts as a member), not deleted, and counts while the fleet
	// is not stalled and has no offer open but the ones it was refused — after
	// the refused offer's skip (10 minutes) or the kind's hold ends too, up to
	// the fleet's next try, and a try that finds every offer skipped records
	// the sold-out ones again; but once a sold-out offer's skip is over while
	// the catalog lists it available again, a node that would give way for it
	// makes the fleet's next create be tried at once instead (served: nothing
	// gives way; refused again: the new refusal counts at once). It never
	// counts for an offer whose creates the account holds (its provider's
	// creates held after a refusal of the account — a key, a permission, the
	// balance: EventCreatesRefused — or its kind's listing refused): stock
	// freed before that hold ends serves no create of the fleet, so nothing
	// gives way until it ends. Once such a node is confirmed gone the fleet's
	// next create is tried at once: for a sold-out offer with the provider's
	// offers looked up afresh; for the instance limit with the hold of the
	// provider's creates that the refusal began (10 minutes to an hour,
	// EventCreatesRefused) lifted. This holds for RebuySpares too.
	RebuyHoldOff bool
	// RebuySpares and RebuyHold set the re-buy hold instead of choosing it
	// from the fleet's jobs: up to RebuySpares idle instances of each fleet
	// billed per minute with a minimum reservation (Hot Aisle; hourly-billed
	// nodes, Vultr's, go at their hour's last safe moment as above), whatever
	// their offer (the first in Acquire's order: the most paid time left,
	// then the cheaper to keep, then the older), are each kept RebuyHold
	// past the end of their minimum reservation or past going idle, the
	// later (less for a node the spec no longer matches, as above; never
	// before IdleTimeout after going idle; a release that falls on a billed
	// minute's boundary goes 10 s before it, so that the delete lands in the
	// minute paid), once the fleet has run a job. Both or
	// neither (zero: chosen as RebuyHoldOff says); RebuyHoldOff wins. The
	// break-even is RebuyHold equal to the offer's minimum (at most twice the
	// least possible for an idle period); shorter holds cost less when no job
	// comes and buy a new minimum more often when one does.
	RebuySpares int
	RebuyHold   time.Duration
	// LeaseTTL is how long a replica's lease on a fleet lasts without
	// renewal (30 s; renewed every third of it): a replica that dies is
	// replaced within it. A replica renews the fleets it holds even when
	// its reads of the store's records and intents fail, and cuts each of
	// those reads at a tenth of it. Only with a LeaseStore.
	LeaseTTL time.Duration
	// HistoryRetention is how long terminated records are kept (for
	// Instances and reports) before they are pruned (24 h).
	HistoryRetention time.Duration
}

func (p Policy) withDefaults() Policy {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if p.Release == "" {
		p.Release = ReleaseAtReservationEnd
	}
	def(&p.ProvisionTimeout, 20*time.Minute)
	def(&p.BareMetalProvisionTimeout, 55*time.Minute)
	def(&p.AgentTimeout, 15*time.Minute)
	def(&p.TerminationMinBackoff, 10*time.Second)
	def(&p.TerminationMaxBackoff, 5*time.Minute)
	def(&p.TerminationAlertAfter, 15*time.Minute)
	def(&p.CompatGiveUp, 15*time.Minute)
	def(&p.OrphanGrace, 10*time.Minute)
	def(&p.CreateLookupGrace, 5*time.Minute)
	def(&p.HourlyReleaseMargin, 10*time.Minute)
	// A calm margin over the wide one widens it: the margin for trouble is
	// never the narrower of the two.
	p.HourlyReleaseMargin = max(p.HourlyReleaseMargin, p.CalmHourlyReleaseMargin)
	def(&p.CalmHourlyReleaseMargin, min(3*time.Minute, p.HourlyReleaseMargin))
	def(&p.MinuteReleaseMargin, time.Minute)
	def(&p.CreateTimeout, 5*time.Minute)
	if p.VPCAttachAttempts <= 0 {
		p.VPCAttachAttempts = 10
	}
	if p.Parallelism <= 0 {
		p.Parallelism = 8
	}
	if p.MaxDeadlineMisses <= 0 {
		p.MaxDeadlineMisses = 3
	}
	def(&p.CallTimeout, 90*time.Second)
	if p.MaxConcurrentCreates <= 0 {
		p.MaxConcurrentCreates = 4
	}
	def(&p.VisibilityGrace, 3*time.Minute)
	def(&p.HistoryRetention, 24*time.Hour)
	def(&p.DriftCheckInterval, 10*time.Minute)
	def(&p.LeaseTTL, 30*time.Second)
	def(&p.AgentCheckInterval, 5*time.Minute)
	if p.AgentCheckFailures <= 0 {
		p.AgentCheckFailures = 3
	}
	if p.OnStopped == "" {
		p.OnStopped = OnStoppedReplace
	}
	return p
}
