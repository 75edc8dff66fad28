package hotaislefake

import (
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/core"
)

// Billing rule of Hot Aisle (api/hotaisle.md §4): every server is billed per
// started minute at its OnDemandPrice (US cents per hour for the whole
// server), from the POST that assigned it to the DELETE that released it, and
// never less than its MinimumReservationMinutes, which is committed at
// assignment (bare metal: 480 min, "8 hours charged at reserve"). A release
// before the minimum needs force=true, and then the whole minimum is still
// charged: Charge.Unrefunded shows the USD paid for minutes not used. A
// stopped VM keeps billing. The ledger keeps exact (unrounded) USD.

// Ledger returns the bill in USD, one charge per assignment of a VM or
// bare-metal server (a bare-metal server reserved again has one charge per
// reservation, each with its ResourceID), oldest first; live servers are
// charged up to now.
func (h *HotAisle) Ledger() core.Ledger {
	now := h.clock.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	l := core.Ledger{Charges: make([]core.Charge, 0, len(h.st.all))}
	for _, s := range h.st.all {
		c := s.charge(now)
		l.Charges = append(l.Charges, c)
		l.TotalUSD += c.USD
	}
	l.TotalUSD = math.Round(l.TotalUSD*1e6) / 1e6 // per-minute charges have fractions of a cent: no float noise
	return l
}

// charge is the server's ledger entry at now.
func (s *haServer) charge(now time.Time) core.Charge {
	to, live := now, s.billEnd.IsZero()
	if !live {
		to = s.billEnd
	}
	used, billed := s.billedMinutes(now)
	rate := float64(s.priceCents) / 100
	c := core.Charge{
		ResourceID: s.name, Kind: "virtual_machine", Plan: s.plan, RateUSD: rate,
		From: s.created, To: to, Billed: time.Duration(billed) * time.Minute,
		USD: s.billedCents(now) / 100, Live: live,
		Description: fmt.Sprintf("per minute at %d US cents/h: %d min used, minimum %d min, %d min billed",
			s.priceCents, used, s.minMinutes, billed),
	}
	if s.bare {
		c.Kind = "bare_metal"
	}
	if s.forced && used < s.minMinutes {
		c.Unrefunded = float64(s.minMinutes-used) * rate / 60
		c.Description += " (released early with force: minimum not refunded)"
	}
	return c
}

// billedMinutes returns the minutes used (started minutes from assignment to
// release, or to now while billing) and the minutes billed (never under the
// minimum).
func (s *haServer) billedMinutes(now time.Time) (used, billed int64) {
	to := now
	if !s.billEnd.IsZero() {
		to = s.billEnd
	}
	used = haMinutesUp(to.Sub(s.created))
	return used, max(used, s.minMinutes)
}

// billedCents is the server's charge at now in US cents (exact).
func (s *haServer) billedCents(now time.Time) float64 {
	_, billed := s.billedMinutes(now)
	return float64(billed) * float64(s.priceCents) / 60
}

// haMinutesUp is d in started minutes (0 for d <= 0).
func haMinutesUp(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Minute - 1) / time.Minute)
}

// haSpend keeps running sums of the bill so that checking the balance stays
// O(1) while it is large: closed charges exactly, billing servers as sums
// giving an upper bound (a minute more than used, plus the minimum).
type haSpend struct {
	epoch        time.Time
	closedCents  float64 // exact charges of released servers
	price        float64 // sum of priceCents of billing servers
	priceCreated float64 // sum of priceCents × minutes from epoch to created
	priceMin     float64 // sum of priceCents × (minMinutes + 1)
}

func (sp *haSpend) open(s *haServer) {
	p := float64(s.priceCents)
	sp.price += p
	sp.priceCreated += p * s.created.Sub(sp.epoch).Minutes()
	sp.priceMin += p * float64(s.minMinutes+1)
}

// closeBilling ends the server's billing at now (its release was accepted).
func (st *haState) closeBilling(s *haServer, now time.Time) {
	if !s.billEnd.IsZero() {
		return
	}
	sp := &st.spend
	p := float64(s.priceCents)
	sp.price -= p
	sp.priceCreated -= p * s.created.Sub(sp.epoch).Minutes()
	sp.priceMin -= p * float64(s.minMinutes+1)
	s.billEnd = now
	sp.closedCents += s.billedCents(now)
}

// spentCents is the exact amount charged so far, in US cents.
func (st *haState) spentCents(now time.Time) float64 {
	cents := st.spend.closedCents
	for _, s := range st.live {
		if s.billEnd.IsZero() {
			cents += s.billedCents(now)
		}
	}
	return cents
}

// availableCents is the team's available_balance at now.
func (st *haState) availableCents(now time.Time) int64 {
	return st.balanceCents - int64(math.Ceil(st.spentCents(now)-1e-9))
}

// canAfford reports whether the available balance covers costCents more.
func (st *haState) canAfford(now time.Time, costCents float64) bool {
	sp := &st.spend
	bound := sp.closedCents + (sp.price*now.Sub(sp.epoch).Minutes()-sp.priceCreated+sp.priceMin)/60
	if float64(st.balanceCents)-bound >= costCents {
		return true
	}
	return float64(st.availableCents(now)) >= costCents
}

// haBalanceInfo is the spec's BalanceInfo (US cents).
type haBalanceInfo struct {
	AvailableBalance     int64  `json:"available_balance"`
	HourlyRate           int64  `json:"hourly_rate"`
	VirtualMachineCount  int64  `json:"virtual_machine_count"`
	BareMetalServerCount int64  `json:"bare_metal_server_count"`
	EstimatedRunoutTime  string `json:"estimated_runout_time,omitempty"`
}

func (h *HotAisle) getBalance(w http.ResponseWriter, r *http.Request) {
	if !h.teamOK(w, r, false) {
		return
	}
	now := h.clock.Now()
	h.mu.Lock()
	info := haBalanceInfo{AvailableBalance: h.st.availableCents(now)}
	for _, s := range h.st.live {
		if !s.billEnd.IsZero() {
			continue
		}
		info.HourlyRate += s.priceCents
		if s.bare {
			info.BareMetalServerCount++
		} else {
			info.VirtualMachineCount++
		}
	}
	h.mu.Unlock()
	if info.HourlyRate > 0 && info.AvailableBalance > 0 {
		hours := float64(info.AvailableBalance) / float64(info.HourlyRate)
		info.EstimatedRunoutTime = haTime(now.Add(time.Duration(hours * float64(time.Hour))))
	}
	core.WriteJSON(w, http.StatusOK, info)
}

// haTime formats t as the API does (RFC 3339, UTC, milliseconds).
func haTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }
