package costopt

import (
	"errors"
	"fmt"
	"time"
)

// Billing is how one kind of machine is billed and how long it takes to boot.
// A machine is billed from its create call to its deletion ("alive" time):
// the alive time is raised to Minimum, rounded up to a whole number of Units,
// and charged at PricePerHour.
type Billing struct {
	// Name labels the kind in reports, e.g. "Vultr VM".
	Name string
	// Unit is the billing granularity: every started Unit is charged in full
	// (one hour on Vultr, one minute on Hot Aisle). It must be positive.
	Unit time.Duration
	// Minimum is the least alive time charged, even for a machine deleted
	// earlier (Vultr one hour; Hot Aisle the offer's minimum reservation, 30
	// or 60 minutes for virtual machines, 480 minutes for bare metal). It must
	// be a whole number of Units (zero allowed).
	Minimum time.Duration
	// PricePerHour is the price in USD per hour of alive time.
	PricePerHour float64
	// BootTime is the time from the create call until the machine can run a
	// job. It is billed.
	BootTime time.Duration
	// BareMetal marks a bare-metal server (dstack forces only its Hot Aisle
	// VM deletes; see DstackRules).
	BareMetal bool
	// RefusedInMinimum: a delete sent without force before Minimum has
	// passed since the create call is refused (Hot Aisle: 400 "minimum usage
	// requirement"); with force it is accepted and the minimum charged.
	RefusedInMinimum bool
}

// VultrVM is a Vultr Cloud GPU virtual machine (one A100, plan
// vcg-a100-12c-120g-80vram at 2.397 USD per hour): billed per started hour
// with a one-hour minimum; ready about 2.5 minutes after the create call
// (active after 90 seconds, server status ok 60 seconds later).
func VultrVM() Billing {
	return Billing{Name: "Vultr VM", Unit: time.Hour, Minimum: time.Hour,
		PricePerHour: 2.397, BootTime: 150 * time.Second}
}

// VultrBareMetal is a Vultr bare-metal server with eight MI300X (plan
// vbm-256c-2048gb-8-mi300x-gpu at 17.52 USD per hour): billed per started
// hour with a one-hour minimum; pending for about 40 minutes after the create
// call.
func VultrBareMetal() Billing {
	return Billing{Name: "Vultr bare metal", Unit: time.Hour, Minimum: time.Hour,
		PricePerHour: 17.52, BootTime: 40 * time.Minute, BareMetal: true}
}

// HotAisleVM is a Hot Aisle virtual machine with one MI300X at 2.99 USD per
// hour: billed per started minute, never less than its 30-minute minimum
// reservation; SSH answers about 90 seconds after the create call. A delete
// without force is refused inside the minimum.
func HotAisleVM() Billing {
	return Billing{Name: "Hot Aisle VM", Unit: time.Minute, Minimum: 30 * time.Minute,
		PricePerHour: 2.99, BootTime: 90 * time.Second, RefusedInMinimum: true}
}

// HotAisleBareMetal is a Hot Aisle bare-metal server with eight MI300X at
// 27.12 USD per hour: billed per started minute with 480 minutes (eight
// hours) charged at reservation; the operating system is installed about 10
// minutes after the reservation. A delete without force is refused inside
// the minimum.
func HotAisleBareMetal() Billing {
	return Billing{Name: "Hot Aisle bare metal", Unit: time.Minute, Minimum: 480 * time.Minute,
		PricePerHour: 27.12, BootTime: 10 * time.Minute, BareMetal: true, RefusedInMinimum: true}
}

// Kinds returns the four machine kinds above, Vultr first.
func Kinds() []Billing {
	return []Billing{VultrVM(), VultrBareMetal(), HotAisleVM(), HotAisleBareMetal()}
}

// Validate returns an error when Unit is not positive, Minimum is negative or
// not a whole number of Units, or PricePerHour or BootTime is negative.
func (b Billing) Validate() error {
	switch {
	case b.Unit <= 0:
		return errors.New("costopt: billing unit must be positive")
	case b.Minimum < 0 || b.Minimum%b.Unit != 0:
		return fmt.Errorf("costopt: billing minimum %v is not a whole number of units of %v", b.Minimum, b.Unit)
	case b.PricePerHour < 0:
		return errors.New("costopt: negative price per hour")
	case b.BootTime < 0:
		return errors.New("costopt: negative boot time")
	}
	return nil
}

// Units returns the number of Units charged for a machine alive for the given
// time: the alive time (zero if negative) raised to Minimum, in started Units.
func (b Billing) Units(alive time.Duration) int64 {
	return max(unitsUp(alive, b.Unit), int64(b.Minimum/b.Unit))
}

// Cost returns the charge in USD for a machine alive for the given time.
func (b Billing) Cost(alive time.Duration) float64 {
	return b.usd(float64(b.Units(alive)))
}

// usd converts a number of billed Units to USD.
func (b Billing) usd(units float64) float64 {
	return units * b.Unit.Hours() * b.PricePerHour
}

// unitsUp is d in started units (zero for d <= 0).
func unitsUp(d, unit time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + unit - 1) / unit)
}
