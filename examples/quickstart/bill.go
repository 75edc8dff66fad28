package main

import (
	"math"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/sim"
)

// billedUSD applies a provider's billing rule to an instance kept from
// created to end and returns the time charged and its price: Vultr bills
// every started hour, at least one (docs.vultr.com "How Am I Billed"); Hot
// Aisle bills every started minute and never less than the minimum
// reservation (api/hotaisle.md §4). rate is USD per hour.
func billedUSD(provider string, rate float64, created, end time.Time, minimum time.Duration) (time.Duration, float64) {
	if m := created.Add(minimum); m.After(end) {
		end = m
	}
	d := max(end.Sub(created), 0)
	if provider == fleet.ProviderVultr {
		hours := max((d+time.Hour-1)/time.Hour, 1)
		return hours * time.Hour, float64(hours) * rate
	}
	minutes := (d + time.Minute - 1) / time.Minute
	return minutes * time.Minute, float64(minutes) * rate / 60
}

// leastUSD is the least possible bill of one instance: billed only from its
// create to the later of the end of its work and the end of its minimum
// reservation, by its provider's rule.
func leastUSD(provider string, rate float64, created, workEnd time.Time, minimum time.Duration) float64 {
	_, usd := billedUSD(provider, rate, created, workEnd, minimum)
	return usd
}

// ledgerRounded is a charge in USD as the fakes' ledgers write it: the
// Vultr fake rounds each server's charge to the cent (as an invoice line
// is), the Hot Aisle fake keeps fractions of a cent. A least possible bill
// compared with a ledger's charges is rounded the same way, or a plan
// priced below a cent an hour shows an overspend that is only rounding.
func ledgerRounded(provider string, usd float64) float64 {
	if provider == fleet.ProviderVultr {
		return math.Round(usd*100) / 100
	}
	return usd
}

// charge is one instance's line of the bill.
type charge struct {
	provider, id, plan string
	request            string        // the Manager's request id, "" when not known
	billed             time.Duration // time charged, after rounding and minimums
	usd, least         float64
	live               bool // still billing when the report was made
	ledger             bool // read from a fake's ledger (rounded as it rounds)
	created            time.Time
	rate               float64       // USD per hour
	minimum            time.Duration // the offer's minimum reservation
	unrefunded         float64       // USD of the minimum charged but unused (a forced release; ledger only)
}

// simCharges reads the fakes' ledgers and sets each charge beside its least
// possible amount.
func (d *driver) simCharges() []charge {
	records := d.recordsByID()
	var out []charge
	for _, side := range []struct {
		provider string
		ledger   sim.Ledger
	}{{fleet.ProviderVultr, d.w.sims.vultr.Ledger()}, {fleet.ProviderHotAisle, d.w.sims.hot.Ledger()}} {
		for _, c := range side.ledger.Charges {
			var minimum time.Duration
			if r, ok := records[c.ResourceID]; ok {
				minimum = r.Instance.Offer.MinimumReservation
			}
			req, _ := d.w.meter.link(c.ResourceID)
			out = append(out, charge{provider: side.provider, id: c.ResourceID, request: req, plan: c.Plan, billed: c.Billed, usd: c.USD,
				least: ledgerRounded(side.provider, leastUSD(side.provider, c.RateUSD, c.From, d.workEndOf(c.ResourceID, c.From), minimum)), live: c.Live,
				created: c.From, rate: c.RateUSD, minimum: minimum, ledger: true, unrefunded: c.Unrefunded})
		}
	}
	return out
}

// estimatedCharges applies the billing rules to the Manager's records (the
// real clouds' invoices are not read): billing runs from the create to the
// accepted release, or to now for what is still there.
func (d *driver) estimatedCharges() []charge {
	now := d.w.clock.Now()
	var out []charge
	for _, r := range d.m.Records() {
		i := r.Instance
		if i.ID == "" || i.Created.IsZero() {
			continue
		}
		end, live := now, i.Status.Active()
		if t := r.Termination; t != nil && !t.Accepted.IsZero() {
			end, live = t.Accepted, false
		} else if i.Status == fleet.StatusTerminated && len(i.History) > 0 {
			end = i.History[len(i.History)-1].Time
		}
		o := i.Offer
		billed, usd := billedUSD(i.Provider, o.PricePerHour, i.Created, end, o.MinimumReservation)
		out = append(out, charge{provider: i.Provider, id: i.ID, request: i.RequestID, plan: o.InstanceType, billed: billed, usd: usd,
			least: leastUSD(i.Provider, o.PricePerHour, i.Created, d.workEndOf(i.ID, i.Created), o.MinimumReservation), live: live,
			created: i.Created, rate: o.PricePerHour, minimum: o.MinimumReservation})
	}
	return out
}

func (d *driver) recordsByID() map[string]fleet.InstanceRecord {
	out := map[string]fleet.InstanceRecord{}
	for _, r := range d.m.Records() {
		if r.Instance.ID != "" {
			out[r.Instance.ID] = r
		}
	}
	return out
}

// workEndOf is when the instance's work stopped, or created if it did none.
func (d *driver) workEndOf(id string, created time.Time) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if t, ok := d.workEnd[id]; ok {
		return t
	}
	return created
}
