package costopt

import (
	"errors"
	"math"
)

var errSingular = errors.New("costopt: singular basis")

// invert writes the inverse of the m×m matrix a (destroyed) into inv, by
// Gauss-Jordan elimination with partial pivoting.
func invert(a, inv []float64, m int) error {
	clear(inv)
	for i := range m {
		inv[i*m+i] = 1
	}
	for c := range m {
		p := c
		for r := c + 1; r < m; r++ {
			if math.Abs(a[r*m+c]) > math.Abs(a[p*m+c]) {
				p = r
			}
		}
		if math.Abs(a[p*m+c]) < 1e-12 {
			return errSingular
		}
		swapRows(a, m, p, c)
		swapRows(inv, m, p, c)
		eliminate(a, inv, m, c)
	}
	return nil
}

func swapRows(a []float64, m, i, j int) {
	if i == j {
		return
	}
	for k := range m {
		a[i*m+k], a[j*m+k] = a[j*m+k], a[i*m+k]
	}
}

// eliminate scales row c to a unit pivot and clears column c elsewhere.
func eliminate(a, inv []float64, m, c int) {
	f := 1 / a[c*m+c]
	for k := range m {
		a[c*m+k] *= f
		inv[c*m+k] *= f
	}
	for r := range m {
		g := a[r*m+c]
		if r == c || g == 0 {
			continue
		}
		for k := range m {
			a[r*m+k] -= g * a[c*m+k]
			inv[r*m+k] -= g * inv[c*m+k]
		}
	}
}
