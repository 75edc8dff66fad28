package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpufleet/gpufleet/fleet"
)

// outcome counts what became of what some refused calls were for, as the
// Manager's events tell (and, for calls no event is about, the calls that
// followed): done (a create on another offer, an attach confirmed by the
// server's VPC listing, a server confirmed gone, a VPC deleted, a call that
// went through), given up (NoOffers, VPCUnavailable), or open (no event
// says either).
type outcome struct {
	ok, gaveUp, open int
	unit             [2]string // what is counted: "server", "servers"
}

// state is what became of one thing, worst last.
type state int

const (
	stateOK state = iota
	stateGaveUp
	stateOpen
)

// tell is all when everything came to what the refused calls were for;
// otherwise head and what became of it: ok, gaveUp and open are formats of
// one count of o's unit, each left out when its count is 0.
func (o outcome) tell(all, head, ok, gaveUp, open string) string {
	if o.gaveUp == 0 && o.open == 0 {
		return all
	}
	var parts []string
	for _, p := range []struct {
		n      int
		format string
	}{{o.ok, ok}, {o.gaveUp, gaveUp}, {o.open, open}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf(p.format, count(p.n, o.unit[0], o.unit[1])))
		}
	}
	return head + strings.Join(parts, "; ") + "."
}

// evidence is what the run's events and calls tell of refusals.
type evidence struct {
	events []fleet.Event
	m      *meter
}

// outcome counts what became of the things rs were about, in f's unit:
// per call for units of calls, else per fleet, server or VPC (the worst
// of its refusals' states).
func (ev evidence) outcome(f fault, rs []refusal) outcome {
	worst := map[string]state{}
	for _, r := range rs {
		key, st := ev.judge(r)
		if f.unit[0] == "call" {
			key = strconv.Itoa(r.seq)
		}
		if old, ok := worst[key]; !ok || st > old {
			worst[key] = st
		}
	}
	o := outcome{unit: f.unit}
	for _, st := range worst {
		switch st {
		case stateOK:
			o.ok++
		case stateGaveUp:
			o.gaveUp++
		default:
			o.open++
		}
	}
	return o
}

// judge names what a refused call was about and tells what became of it.
func (ev evidence) judge(r refusal) (key string, st state) {
	switch r.call {
	case "Create":
		return "fleet " + r.subject, ev.created(r.provider, r.subject)
	case "AttachVPC", "InstanceVPCs":
		return "server " + r.subject, ev.attached(r.subject)
	case "Delete":
		return "server " + r.subject, ev.gone(r.subject)
	case "DeleteVPC":
		return "vpc " + r.subject, ev.vpcDeleted(r.subject)
	case "Get":
		key = "server " + r.subject
	default:
		key = r.call + " " + r.subject
	}
	if ev.m != nil && ev.m.retried(r) {
		return key, stateOK
	}
	return key, stateOpen
}

// created tells what became of a fleet's creates refused by provider:
// each refused create (OfferSkipped, or CreateUncertain until looked up)
// is answered by the fleet's next InstanceCreated or InstanceAdopted
// (another offer was taken) or NoOffers (every other offer failed too),
// whichever comes first; the worst answer is the fleet's.
func (ev evidence) created(provider, fleetName string) state {
	pending, st := 0, stateOK
	for _, e := range ev.events {
		if e.Fleet != fleetName {
			continue
		}
		switch e.Type {
		case fleet.EventOfferSkipped, fleet.EventCreateUncertain:
			if e.Provider == provider {
				pending++
			}
		case fleet.EventInstanceCreated, fleet.EventInstanceAdopted:
			pending = max(pending-1, 0)
		case fleet.EventNoOffers:
			if pending > 0 {
				pending, st = 0, stateGaveUp
			}
		}
	}
	if pending > 0 {
		return stateOpen
	}
	return st
}

// attached tells whether listing a server's VPCs confirmed its attach
// (VPCAttached) or the Manager gave up and ran it without (VPCUnavailable).
func (ev evidence) attached(id string) state {
	st := stateOpen
	for _, e := range ev.events {
		if e.InstanceID != id {
			continue
		}
		switch e.Type {
		case fleet.EventVPCAttached:
			st = stateOK
		case fleet.EventVPCUnavailable:
			st = stateGaveUp
		}
	}
	return st
}

// gone tells whether the provider confirmed a server gone.
func (ev evidence) gone(id string) state {
	for _, e := range ev.events {
		if e.InstanceID == id && (e.Type == fleet.EventInstanceTerminated || e.Type == fleet.EventInstanceVanished) {
			return stateOK
		}
	}
	return stateOpen
}

// vpcDeleted tells whether a VPC was deleted (its id leads VPCDeleted's
// message).
func (ev evidence) vpcDeleted(id string) state {
	for _, e := range ev.events {
		if e.Type == fleet.EventVPCDeleted && (e.Message == id || strings.HasPrefix(e.Message, id+" ")) {
			return stateOK
		}
	}
	return stateOpen
}

// forcedAfterHold counts provider's instances whose release waited for the
// reservation window (ReleaseDeferred) and was then forced before it ended
// (ReleaseForced: a teardown).
func (ev evidence) forcedAfterHold(provider string) int {
	held, forced := map[string]bool{}, map[string]bool{}
	for _, e := range ev.events {
		if e.Provider != provider {
			continue
		}
		switch {
		case e.Type == fleet.EventReleaseDeferred:
			held[e.InstanceID] = true
		case e.Type == fleet.EventReleaseForced && held[e.InstanceID]:
			forced[e.InstanceID] = true
		}
	}
	return len(forced)
}
