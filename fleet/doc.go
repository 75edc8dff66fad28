// Package fleet holds the provider-neutral vocabulary of gpufleet (offers,
// instances, VPCs, the error classes) and the [Manager], which keeps fleets
// of rented machines at their desired size and releases them without
// leaking a machine or a dollar.
//
// fleet imports neither provider nor the shim; providers and agents plug in
// through interfaces, the way database/sql drivers do: vultr.NewProvider and
// hotaisle.NewProvider return a [Provider], a *shim.Starter is an [Agent].
//
// # Where to start
//
//   - [NewManager] with a [Config]: the providers, the [Agent] (nil: a machine
//     is ready once its cloud says running), the [Policy] (zero fields take
//     defaults), a [Store] for restarts, [Config.OnEvent] for every [Event].
//   - [Manager.Apply] a [Spec]: a fleet's name, node count, [Requirements]
//     and [Placement]; then [Manager.Run] reconciles until its context ends
//     ([Manager.Reconcile] is one pass, for tests and custom loops, which
//     call it again by [Manager.NextPass]).
//   - [Manager.Acquire] to place a job: it hands out the idle node whose use
//     saves the most (the most paid time left) and marks it busy at once;
//     [Manager.GiveBack] gives it back when the job ends, only while that
//     hand-out is the node's current one ([Instance.HandOut]: a give-back
//     repeated after the node was handed out again changes nothing and
//     answers [ErrHandedOutAgain]). Picking a node
//     from [Manager.Instances] strands paid time (the oldest node often has
//     the least left). [Manager.MarkBusy] marks a node you picked
//     yourself busy, [Manager.MarkIdle] idle again.
//   - [Manager.Instances] and [Manager.Records] to read the fleet;
//     [Manager.Release] for one instance; [Manager.Delete] for the fleet.
//     Releases are carried out by the following passes: keep Run going until
//     [Manager.Fleets] no longer lists the fleet.
//   - [Catalog] (or [Manager.Offers]) and [WriteOffers] to list what the
//     clouds rent, with [Requirements] as the filter.
//   - The error classes ([ErrNotFound], [ErrLocked], [ErrNotActive],
//     [ErrMinReservation], [ErrNoCapacity], ...) that every provider error
//     answers errors.Is for.
//
// The Manager example runs a whole fleet on package sim's fakes of both
// clouds; examples/consumertest in the module shows a test suite doing the
// same inside testing/synctest bubbles.
//
// # Which name holds which behaviour
//
// Intents and one writer. [Manager.Apply], [Manager.Delete],
// [Manager.Release], [Manager.MarkBusy], [Manager.MarkIdle] and
// [Manager.GiveBack] only record
// what the caller wants; the loop ([Manager.Run], or each
// [Manager.Reconcile]) is the only writer of records and applies every
// provider answer against the intent as it is then. Provider calls run as
// tasks bounded by [Policy.CallTimeout] (creates: [Policy.CreateTimeout],
// at most [Policy.MaxConcurrentCreates] at once); every create is in the
// [Store] before its call. After [Manager.Close] every method returns
// [ErrClosed].
//
// Owners. [Config.Owner] goes into every [Label] (format 2, prefix
// [LabelPrefixV2]); only the owner's resources are adopted or collected,
// others' are reported once ([EventForeignFound]). SSH keys a provider
// registers on the account ([SSHKeyProvider]) are removed once no fleet of
// the owner needs them ([EventSSHKeyDeleted]).
//
// Schedules. Each instance has its own next check: near its offer's
// [Offer.TypicalBoot] while it boots, every [Policy.DriftCheckInterval] once
// running; a provider is listed only when something of it is due, by kind
// ([KindLister]). When a provider's listing fails whole, each kind is listed
// alone and backs off alone: a key refused the bare-metal listing hides
// neither the VMs nor their creates (one [EventCreatesRefused]; creates of
// the refused kind wait until it lists again). No delete is tried inside [Offer.DeleteLock]. A server
// younger than [Policy.VisibilityGrace] that lists miss is not concluded
// gone.
//
// Rentals, not ids. A provider id can come back: Hot Aisle gives a released
// bare-metal server's name to its next rental. What a list or a Get shows
// under an id is a record's rental unless its label names another create:
// a terminated record never takes back a server rented again (by this
// Manager, a console user or another owner), and a record being released
// takes such a server as the end of its rental instead of deleting it.
//
// Drift. A machine deleted out of band ([EventInstanceVanished]) is
// replaced, unless it was idle in a fleet whose idle nodes go
// ([Spec.IdleTimeout], above [Spec.MinNodes]): the fleet's Nodes is
// lowered by one instead, as an idle release lowers it. A machine stopped
// out of band ([Instance.Stopped],
// [EventInstanceStopped]) is handled by [Policy.OnStopped]: Vultr's lists
// show the power state; Hot Aisle's do not, so without an Agent each of its
// ready instances gets one power read per [Policy.DriftCheckInterval]
// ([PowerChecker]), and with one a failed check reads it. Agents are
// checked every [Policy.AgentCheckInterval] ([EventAgentUnhealthy]); lost
// or edited labels are written again ([Labeler], [EventLabelRewritten]),
// Vultr servers being known meanwhile by the tags written at create.
// Account-level create refusals back the provider off
// ([EventCreatesRefused]); [Manager.Apply] refuses specs no offer could meet
// ([ErrInvalidSpec]).
//
// Deadlines. An instance must be reported running within its offer's
// [Offer.ProvisionTimeout] (Vultr bare metal: 55 minutes, set by package
// vultr; [EventSlowProvisioning] warns up front; Hot Aisle bare metal 45)
// or else [Policy.BareMetalProvisionTimeout] (55 minutes) for bare metal
// and [Policy.ProvisionTimeout] (20 minutes) for VMs; its agent must then
// be healthy within [Policy.AgentTimeout] (15 minutes; each start attempt
// is bounded to a third of it and retried, and a start failing with
// [ErrAgentPathDown], a jump host down, does not count: the deadline
// counts from the last such failure). An instance that
// misses its provisioning or agent deadline inside a prepaid minimum reservation
// (Hot Aisle: 8 hours of bare metal charged at the reserve) is kept until
// the minimum's end less [Policy.MinuteReleaseMargin]
// ([EventDeadlineDeferred]): releasing it earlier saves nothing, and it may
// still come up. A miss releases the instance
// ([EventDeadlineMissed]); after [Policy.MaxDeadlineMisses] misses in a row
// the fleet stops creating ([EventFleetStalled], [FleetRecord.Stalled])
// until it is applied again.
//
// Releases and reservation windows. [ReleasePolicy] says when a release
// happens relative to [Instance.ReservedUntil]: [ReleaseAtReservationEnd]
// (the default; [EventReleaseDeferred] carries the time), [ReleaseNow]
// (forced on Hot Aisle: [EventReleaseForced] carries the unrefunded
// minimum in USD) or [ReleaseCompat]. The window of an hourly-billed offer
// (Vultr) ends [Policy.CalmHourlyReleaseMargin] (3 minutes; 10 minutes,
// [Policy.HourlyReleaseMargin], while the provider's calls fail) before the next
// billed hour; that of a per-minute offer with a minimum reservation (Hot
// Aisle) ends [Policy.MinuteReleaseMargin] (1 minute) before the minimum
// does, and that release is forced so no extra minute is billed; one that
// waits for that end with no job on it goes at once, forced (the minimum is
// charged whole either way), when another fleet of the Manager is refused
// the stock it keeps ([Policy.RebuyHoldOff]). A release is
// retried with backoff between [Policy.TerminationMinBackoff] and
// [Policy.TerminationMaxBackoff] ([EventTerminationRetry]) until the
// provider confirms the instance gone ([EventInstanceTerminated]). Before
// the next billing boundary (the end of the billed hour; the end of a
// per-minute offer's minimum reservation) the backoff never carries an
// attempt past the start of that boundary's release margin, inside the
// margin attempts are at most 30 seconds apart, and the last is planned 10
// seconds before the boundary, so a delete the provider accepts again just
// before a new billing unit starts lands in time (a Retry-After is always
// honoured). A delete due inside that margin does not wait for a free
// [Policy.Parallelism] slot, and due deletes take free slots earliest
// boundary first. Past the boundary the backoff alone decides again; after
// [Policy.TerminationAlertAfter] an alert is raised
// ([EventTerminationStuck]) and retrying goes on. Except on an hourly-billed
// offer (Vultr), where the boundary bought the next hour: an idle or
// scale-down release (under [ReleaseAtReservationEnd], its fleet not being
// deleted) that did not land before its billed hour ended — refused, or due
// only after it — is put off to the last safe moment of the hour now paid
// ([EventReleaseDeferred]; with [EventTerminationStuck] when deletes were
// refused), and the instance can be taken back meanwhile; a
// [Manager.Release], a fleet [Manager.Delete], a missed deadline and the
// [ReleaseNow] policy go on as above. Per-minute billing (Hot Aisle past its
// minimum) has nothing paid ahead to keep. [WithReleasePolicy]
// overrides the policy for one [Manager.Release].
//
// Idle machines. [Spec.IdleTimeout] turns on the release of idle
// instances, whose idle clock starts at [EventInstanceReady] or the last
// [Manager.GiveBack] or [Manager.MarkIdle]; the fleet shrinks instead of
// replacing them, never below [Spec.MinNodes]. An [Manager.Apply] that
// raises Nodes keeps the fleet's idle instances until the growth is met
// and starts their idle clock again then, so that the idle release does not
// undo the growth (see [Spec.IdleTimeout]). A fleet that grows again first takes back instances
// whose release still waits ([EventReleaseCancelled]), the cheapest to keep
// for the next hour first (a cheaper plan before a dearer one), before any
// delete call of the pass starts; one whose refused retry is under way is
// waited for, not replaced. The release weighs
// billing units, and IdleTimeout only applies where keeping an instance
// longer costs more: an hourly instance goes at the last safe moment of the
// hour it is in, however long its IdleTimeout; a per-minute one whose job
// ended inside its minimum reservation at the minimum's end (less
// [Policy.MinuteReleaseMargin]), one idle past its minimum after
// IdleTimeout, except the few idle instances the re-buy hold keeps a while
// longer, chosen from the fleet's recent jobs ([Policy.RebuyHoldOff] says
// how). An instance whose start is unknown (adopted after a restart that
// lost the [Store]; Hot Aisle gives no start) is released after IdleTimeout
// without force: while the provider refuses for the minimum it is kept and
// tried again ([EventReleaseDeferred]), forced only at the last safe moment
// of the longest minimum it can have. Orchestrators place jobs with
// [Manager.Acquire], which hands out the idle instance with the most paid time
// left, the cheaper to keep among equals.
//
// VPCs. A [PlacementCluster] fleet lands on one provider and region, on
// offers with [Offer.SupportsVPC], through a [VPCProvider] (Vultr). Its VPC
// is created once the first member exists ([EventVPCCreated]), members are
// attached until listing their VPCs confirms it ([EventVPCAttached]; after
// [Policy.VPCAttachAttempts] a member goes on without it,
// [EventVPCUnavailable]), and the VPC is deleted only after every member is
// confirmed gone ([EventVPCDeleted], retried with [EventVPCDeleteRetry]).
//
// Labels, adoption and orphans. Every resource is created with a [Label]
// (the owner, the fleet and a request id). A labelled resource of
// a known fleet that the Manager does not track (after a crash, with an
// empty [Store]) is adopted ([EventInstanceAdopted]); one whose fleet is
// unknown is an orphan ([EventOrphanFound]) and is released after
// [Policy.OrphanGrace] (10 minutes; cut short at the last safe moment of
// the billed unit it was found in) unless a fleet claims it; unlabelled
// resources are reported once ([EventUnlabelledFound]) and never touched. A
// create that failed ambiguously is looked up by its label
// ([EventCreateUncertain]) for [Policy.CreateLookupGrace], then reported
// ([EventCreateUnresolved]); it is never retried blindly. Its instance may
// still land for an hour after (on Hot Aisle unlabelled, the label being a
// second call): its provider is listed every [Policy.DriftCheckInterval]
// during that hour and once at its end, it is taken and released if
// unwanted, and a deleted fleet stays (deleting) in [Manager.Fleets] until
// that instance is gone or the hour is over and listed. One found late on Hot Aisle, which gives no creation time,
// has its start bounded ([InstanceRecord.CreatedLatest]): its minimum
// counts from the earliest start, its release is retried unforced while
// refused for the minimum, and forced only at the latest start's minimum
// end.
//
// Events. Every decision is an [Event] of an [EventType], passed to
// [Config.OnEvent] in order, from the loop's goroutine at the end of the
// step that made it, outside the Manager's locks, and logged to
// [Config.Logger]. [Event.InstanceID] is the provider's id, or the request id
// of [Label] before the provider has given one; [InstanceRecord] links the two
// ([Instance.RequestID] and [Instance.ID]).
//
// Time. Every deadline, window and backoff reads [Config.Clock] (default
// [RealClock]): package sim's clocks drive a Manager through hours of cloud
// time in seconds, or in no time at all inside a testing/synctest bubble.
package fleet
