package fleet

import (
	"context"
	"encoding/json"
	"maps"
	"time"
)

// MetaUnsettled is the Store metadata key under which the Manager records
// its providers' trouble, so that a Manager restarted on the Store, or a
// replica that takes a fleet over, chooses the same hourly release margin
// (Policy.HourlyReleaseMargin or CalmHourlyReleaseMargin) as the Manager
// before it. Its value is JSON: "since", when the Store began to record
// (the first start of a Manager that records), and "failed", the time of
// the last failed list or delete call per provider name (one that passes
// by itself: an outage, HTTP 5xx, 429, a timeout), written when it moved
// by more than a minute. It holds no secret. A Store without it (written by
// an older release) keeps the wide margin for the Manager's first 30
// minutes.
const MetaUnsettled = "unsettled"

// settleEvery is how far a provider's last call failure moves before it is
// written to the Store again (MetaUnsettled): writes stay rare in a long
// outage. The stored time may thus be up to this much older than the last
// failure; it is read as that much later, so a restart errs on the wide
// side only.
const settleEvery = time.Minute

// settleRetry is how long after a failed read or write of MetaUnsettled the
// loop tries again: a Store that hangs must not hold every step.
const settleRetry = time.Minute

// settleMeta is the value stored under MetaUnsettled.
type settleMeta struct {
	Since  time.Time            `json:"since"`
	Failed map[string]time.Time `json:"failed,omitempty"`
}

// parseSettle decodes a MetaUnsettled value; ok false when it is not one.
func parseSettle(v string) (settleMeta, bool) {
	var s settleMeta
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		return settleMeta{}, false
	}
	return s, true
}

// loadSettle reads MetaUnsettled at start (NewManager, after startedAt is
// set): the failures it records (known providers) are the Manager's own,
// and the wide margin of the first unsettledFor runs from its "since"
// rather than from this start. Without it, or when it cannot be read, the
// first unsettledFor after this start keep the wide margin (what failed
// before is not known), and the loop writes it.
func (m *Manager) loadSettle(ctx context.Context) {
	m.settleSince, m.settleDirty = m.startedAt, true
	v, ok, err := m.store.Meta(ctx, MetaUnsettled)
	if err != nil {
		m.log.Warn("gpufleet: could not read the providers' recorded trouble; the wide hourly release margin holds for 30 minutes", "err", err)
		return
	}
	if !ok {
		return
	}
	s, ok := parseSettle(v)
	if !ok {
		m.log.Warn("gpufleet: the providers' recorded trouble is not readable; the wide hourly release margin holds for 30 minutes")
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settleSince, m.settleDirty = s.Since, false
	m.mergeSettle(s.Failed)
}

// mergeSettle takes the provider failures read from the Store (failed) as
// this Manager's own where they are later, each read settleEvery later
// than stored (see settleEvery). m.mu held.
func (m *Manager) mergeSettle(failed map[string]time.Time) {
	for p, at := range failed {
		if _, known := m.providers[p]; !known || at.IsZero() {
			continue
		}
		if at.After(m.settleStored[p]) {
			m.settleStored[p] = at
		}
		if at = at.Add(settleEvery); at.After(m.unsettled[p]) {
			m.unsettled[p] = at
		}
	}
}

// settleDue reports the provider failures to write to the Store now
// (MetaUnsettled), when one moved by more than settleEvery since it was
// last written or read (one read is taken settleEvery later: not written
// again for that), or the record is to be written at all (none at start);
// nil when no write is due. A failure that moved less is written as
// stored. m.mu held.
func (m *Manager) settleDue(now time.Time) map[string]time.Time {
	if now.Before(m.settleNext) {
		return nil
	}
	due, out := m.settleDirty, maps.Clone(m.settleStored)
	for p, at := range m.unsettled {
		if at.Sub(m.settleStored[p]) > settleEvery {
			due, out[p] = true, at
		}
	}
	if !due {
		return nil
	}
	return out
}

// writeSettle stores failed (from settleDue) under MetaUnsettled, merged
// with what the Store holds (replicas share it: the later time of each
// provider, the stored "since"), at the end of a flush that wrote its
// records. A failure is logged and tried again settleRetry later: it never
// fails the pass. Not under m.mu.
func (m *Manager) writeSettle(ctx context.Context, failed map[string]time.Time) {
	s := settleMeta{Since: m.startedAt, Failed: map[string]time.Time{}}
	v, ok, err := m.store.Meta(ctx, MetaUnsettled)
	if err == nil && ok {
		if old, ok := parseSettle(v); ok {
			s.Since = old.Since
			maps.Copy(s.Failed, old.Failed)
		}
	}
	if err == nil {
		for p, at := range failed {
			if at.After(s.Failed[p]) {
				s.Failed[p] = at
			}
		}
		var b []byte
		if b, err = json.Marshal(s); err == nil {
			err = m.store.PutMeta(ctx, MetaUnsettled, string(b))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.settleNext = m.clock.Now().Add(settleRetry)
		m.log.Warn("gpufleet: could not record the providers' trouble in the store; tried again in a minute", "err", err)
		return
	}
	m.settleDirty = false
	for p, at := range failed {
		if at.After(m.settleStored[p]) {
			m.settleStored[p] = at
		}
	}
}
