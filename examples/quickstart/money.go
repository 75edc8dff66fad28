package main

import (
	"fmt"
	"math"
)

// micros is an amount in millionths of a USD. Every sum of money in the
// report is a sum of micros, which is exact whatever the order of its
// summands: float sums of the same amounts in another order differ in the
// last bit, and a total of 60.035 printed 60.03 beside the same amounts
// summed to 60.04. Rounding a charge to micros is safe: Vultr's are whole
// cents, and Hot Aisle's, a price per hour in tenths of a cent times the
// minutes over 60, are a whole micro or a third of one from it, never a
// half.
type micros int64

// toMicros is usd in micros, rounded to the nearest.
func toMicros(usd float64) micros { return micros(math.Round(usd * 1e6)) }

// sumMicros adds amounts in USD exactly, each first rounded to micros.
func sumMicros(usd ...float64) micros {
	var s micros
	for _, v := range usd {
		s += toMicros(v)
	}
	return s
}

// usd is m in USD (the nearest float: toMicros gives m back).
func (m micros) usd() float64 { return float64(m) / 1e6 }

// cents is m rounded to the cent, half a cent away from zero: one rule for
// every figure, so rounding keeps the order of two amounts (a total never
// prints below a smaller one).
func (m micros) cents() int64 {
	if m < 0 {
		return -(-m).cents()
	}
	return int64((m + 5000) / 10000)
}

// String is m in USD to the cent: "60.04".
func (m micros) String() string {
	c := m.cents()
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	return fmt.Sprintf("%s%d.%02d", sign, c/100, c%100)
}

// usd formats an amount in USD to the cent, by micros' rounding rule.
func usd(v float64) string { return toMicros(v).String() }
