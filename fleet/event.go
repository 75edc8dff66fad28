package fleet

import (
	"fmt"
	"time"
)

// EventType names what happened.
type EventType string

// Event types. Warnings and alerts are marked in their doc.
const (
	EventFleetApplied        EventType = "FleetApplied"
	EventFleetDeleted        EventType = "FleetDeleted"          // every member and the VPC confirmed gone
	EventOfferSkipped        EventType = "OfferSkipped"          // no capacity or create refused; the next offer is tried
	EventNoOffers            EventType = "NoOffers"              // warning: nothing matched or every offer failed
	EventSlowProvisioning    EventType = "SlowProvisioning"      // warning up front: the offer is known to take long (Vultr bare metal)
	EventInstanceCreated     EventType = "InstanceCreated"       // the create call was accepted
	EventCreateUncertain     EventType = "CreateUncertain"       // warning: the create failed ambiguously; looking it up by label
	EventCreateUnresolved    EventType = "CreateUnresolved"      // alert: no resource carries an uncertain create's label after CreateLookupGrace
	EventInstanceAdopted     EventType = "InstanceAdopted"       // a labelled resource was found and tracked
	EventInstanceRunning     EventType = "InstanceRunning"       // the provider says running
	EventAgentStarting       EventType = "AgentStarting"         // starting the agent
	EventAgentFailed         EventType = "AgentFailed"           // warning: an agent start attempt failed (retried)
	EventInstanceReady       EventType = "InstanceReady"         // agent healthy (or running, with no agent); idle clock starts
	EventInstanceBusy        EventType = "InstanceBusy"          // marked busy
	EventInstanceIdle        EventType = "InstanceIdle"          // marked idle
	EventFleetStalled        EventType = "FleetStalled"          // alert: too many deadline misses in a row; no creates until applied again
	EventAgentKeyMissing     EventType = "AgentKeyMissing"       // warning: restarted without the fleet's private key; agents are neither started nor checked until Apply, and Acquire stops handing out nodes left unchecked for AgentCheckInterval × AgentCheckFailures
	EventDeadlineMissed      EventType = "DeadlineMissed"        // warning: provisioning or agent deadline passed; terminating
	EventDeadlineDeferred    EventType = "DeadlineDeferred"      // warning: the provisioning or agent deadline passed inside a prepaid minimum reservation; kept until Event.At, then released if still not running (ready)
	EventReleaseDeferred     EventType = "ReleaseDeferred"       // release waits for the reservation window (see Event.At)
	EventReleaseCancelled    EventType = "ReleaseCancelled"      // a waiting release was taken back: to grow the fleet again, or (replicas) for a MarkBusy recorded through another replica
	EventReleaseRequested    EventType = "ReleaseRequested"      // terminating
	EventReleaseForced       EventType = "ReleaseForced"         // warning: forced release; Event.USD is the unrefunded minimum
	EventTerminationRetry    EventType = "TerminationRetry"      // a release attempt failed and will be retried (Event.At)
	EventTerminationStuck    EventType = "TerminationStuck"      // alert: releasing has failed for TerminationAlertAfter, or past a billed hour's end; still retrying
	EventInstanceTerminated  EventType = "InstanceTerminated"    // the provider confirmed the instance gone
	EventInstanceVanished    EventType = "InstanceVanished"      // warning: gone without our release (deleted out of band); replaced, or (idle, in a fleet whose idle nodes go) not replaced: the fleet's Nodes lowered by one
	EventManualCleanup       EventType = "ManualCleanupRequired" // alert: untracked while it may still bill (ReleaseCompat)
	EventVPCCreated          EventType = "VPCCreated"
	EventVPCAttached         EventType = "VPCAttached"    // confirmed by listing the instance's VPCs
	EventVPCUnavailable      EventType = "VPCUnavailable" // warning: the instance runs without the fleet's VPC
	EventVPCDeleted          EventType = "VPCDeleted"
	EventVPCDeleteRetry      EventType = "VPCDeleteRetry"      // the VPC still has members; retried
	EventVPCKept             EventType = "VPCKept"             // a fleet growing again keeps the VPC whose delete failed
	EventOrphanFound         EventType = "OrphanFound"         // a labelled resource no fleet claims; collected after OrphanGrace
	EventUnlabelledFound     EventType = "UnlabelledFound"     // reported once; never touched
	EventProviderUnavailable EventType = "ProviderUnavailable" // warning: listing a provider failed this pass
	EventForeignFound        EventType = "ForeignFound"        // a resource labelled by another gpufleet owner (or by the format before owners, unknown here); reported once, never touched
	EventDuplicateFound      EventType = "DuplicateFound"      // alert: a second resource carries one create's label; it is released
	EventInstanceStopped     EventType = "InstanceStopped"     // warning: powered off out of band; restarted, replaced, or (idle, in a fleet whose idle nodes go) released and not replaced (Policy.OnStopped)
	EventAgentUnhealthy      EventType = "AgentUnhealthy"      // warning: an agent check failed; restarted, or released after Policy.AgentCheckFailures
	EventLabelRewritten      EventType = "LabelRewritten"      // a label lost, edited or never written was written again
	EventCreatesRefused      EventType = "CreatesRefused"      // alert: the account refused a create or a listing (key, permission, quota, balance); the provider's creates back off (a listing refused for one kind: that kind's creates wait until it lists)
	EventFleetTaken          EventType = "FleetTaken"          // this replica took a fleet's lease and reconciles it
	EventFleetReleased       EventType = "FleetReleased"       // this replica stopped reconciling a fleet (handed over, or its lease was lost)
	EventReplicaIDInUse      EventType = "ReplicaIDInUse"      // alert: another process holds this replica's lease (the same Config.ReplicaID); this one takes no fleet (see ReplicaIDInUseError)
	EventSSHKeyDeleted       EventType = "SSHKeyDeleted"       // an SSH key this owner registered was removed: no fleet needs it
	EventVPCAdopted          EventType = "VPCAdopted"          // a VPC labelled for a cluster fleet without one became its VPC
	EventStoreWriteFailed    EventType = "StoreWriteFailed"    // warning: writes to the Store failed (kept and retried; at Close, what it gave up on: see Manager.CloseContext); also said once when they work again
	EventMarkDropped         EventType = "MarkDropped"         // alert: with replicas, a busy mark (MarkBusy answered nil) recorded through another replica found its node's release already under way; its job has no node
)

// Event is something the Manager did or saw. It carries no secrets.
type Event struct {
	Time       time.Time
	Type       EventType
	Fleet      string
	Provider   string
	InstanceID string // provider id, or the request id before there is one
	Message    string
	At         time.Time // a time the event refers to (next attempt, earliest release)
	USD        float64   // money the event is about (unrefunded minimum)
	Err        string    // the error text, if any
}

// String is a one-line form for logs.
func (e Event) String() string {
	s := fmt.Sprintf("%s %s", e.Time.Format(time.RFC3339), e.Type)
	if e.Fleet != "" {
		s += " fleet=" + e.Fleet
	}
	if e.Provider != "" {
		s += " provider=" + e.Provider
	}
	if e.InstanceID != "" {
		s += " instance=" + e.InstanceID
	}
	if e.Message != "" {
		s += " " + e.Message
	}
	if e.Err != "" {
		s += " err=" + e.Err
	}
	return s
}
