package fleet

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// attachMember attaches one member and confirms it by listing the member's
// VPCs. A member whose earlier attempt was not confirmed (its answer lost
// or failed: an attach may take effect and still answer 500) is listed
// first, and attached again only when the listing does not show it. A
// member attached at create is only listed. An attempt the provider refused
// outright (the server locked, rate limited) took no effect: neither is it
// listed after, nor the next attempt first. m.mu held.
func (m *Manager) attachMember(vp VPCProvider, r *InstanceRecord, vpcID string) {
	reqID, id := r.Instance.RequestID, r.Instance.ID
	skip, check := r.Instance.VPCID == vpcID, r.VPCAttempts > 0 && !m.attachRefused[reqID]
	m.launch("attach/"+reqID, taskCall, m.pol.CallTimeout, func(ctx context.Context) func(time.Time) {
		out := attachOnce(ctx, vp, id, vpcID, check, skip)
		return func(now time.Time) { m.attached(reqID, vpcID, out, now) }
	})
}

// attachOutcome is what one attach attempt found: the member is in the
// VPC (confirmed), else whether an attach was sent and the error that kept
// the member out (nil: attached, not listed yet).
type attachOutcome struct {
	confirmed, sent bool
	refused         bool // the attach was refused outright (attachWait): it took no effect
	err             error
}

// attachOnce makes one attach attempt: a listing first when check is set
// (done if it shows vpcID), the attach unless skip is set, then a listing.
// ErrAlreadyAttached counts as attached.
func attachOnce(ctx context.Context, vp VPCProvider, id, vpcID string, check, skip bool) attachOutcome {
	if check {
		ids, err := vp.InstanceVPCs(ctx, id)
		if err != nil {
			return attachOutcome{err: err}
		}
		if slices.Contains(ids, vpcID) {
			return attachOutcome{confirmed: true}
		}
	}
	var err error
	if !skip {
		err = vp.AttachVPC(ctx, id, vpcID)
	}
	switch {
	case errors.Is(err, ErrAlreadyAttached):
		return attachOutcome{confirmed: true, sent: true}
	case errors.Is(err, ErrVPCUnsupported):
		return attachOutcome{sent: true, err: err}
	case attachWait(err):
		return attachOutcome{sent: true, refused: true, err: err}
	}
	ids, lerr := vp.InstanceVPCs(ctx, id)
	if lerr == nil && slices.Contains(ids, vpcID) {
		return attachOutcome{confirmed: true, sent: !skip} // whatever the attach answered
	}
	return attachOutcome{sent: !skip, err: err}
}

// vpcTotalFactor bounds every unconfirmed attach attempt of a member,
// refusals to wait and failed listings included, at this many times
// Policy.VPCAttachAttempts.
const vpcTotalFactor = 3

// attachWait reports whether an attach error asks to wait (the server is
// locked, the API rate-limits), not that the attach failed.
func attachWait(err error) bool { return errors.Is(err, ErrLocked) || errors.Is(err, ErrRateLimited) }

// attached applies an attach outcome: confirmed ends it; a plan without
// private networking ends it with a warning; anything else is retried with
// backoff, at most Policy.VPCAttachAttempts failed attaches (any error, or
// an attach the listing does not show) and vpcTotalFactor times as many
// attempts in all (refusals to wait, listings that failed before any
// attach), then the member goes on without the VPC. m.mu held.
func (m *Manager) attached(reqID, vpcID string, out attachOutcome, now time.Time) {
	confirmed, err := out.confirmed, out.err
	rec := m.insts[reqID]
	if rec == nil || rec.VPCDone {
		delete(m.attachRefused, reqID)
		return
	}
	if out.refused {
		m.attachRefused[reqID] = true
	} else {
		delete(m.attachRefused, reqID)
	}
	m.dirtyI[reqID] = true
	ev := Event{Fleet: rec.Instance.Fleet, Provider: rec.Instance.Provider, InstanceID: rec.Instance.ID}
	switch {
	case confirmed:
		rec.VPCDone, rec.Instance.VPCID = true, vpcID
		ev.Type, ev.Message = EventVPCAttached, vpcID
	case errors.Is(err, ErrVPCUnsupported):
		rec.VPCDone = true
		ev.Type, ev.Err, ev.Message = EventVPCUnavailable, err.Error(), "the plan has no private networking; running without the VPC"
	default:
		rec.VPCAttempts++
		rec.VPCNext = now.Add(backoff(rec.VPCAttempts, 15*time.Second, time.Minute))
		if out.sent && !attachWait(err) {
			rec.VPCTries++
		}
		if rec.VPCTries >= m.pol.VPCAttachAttempts || rec.VPCAttempts >= vpcTotalFactor*m.pol.VPCAttachAttempts {
			if err == nil {
				err = errors.New("the attach answered success but the server's VPC listing never showed it")
			}
			rec.VPCDone = true
			ev.Type, ev.Err = EventVPCUnavailable, err.Error()
			ev.Message = fmt.Sprintf("attach not confirmed after %d attempts; running without the VPC", rec.VPCAttempts)
		}
	}
	if ev.Type != "" {
		m.event(ev)
	}
}
