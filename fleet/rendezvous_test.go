package fleet

import (
	"fmt"
	"testing"
)

// Replicas named alike ("r1", "r2", "r3") get about equal shares of the
// fleets, and removing one moves only its own fleets.
func TestRendezvousSpreadsFleetsEvenly(t *testing.T) {
	for _, holders := range [][]string{{"r1", "r2", "r3"}, {"host-a", "host-b", "host-c", "host-d"}} {
		const n = 6000
		share := map[string]int{}
		for i := range n {
			share[rendezvous(fmt.Sprintf("fleet-%d", i), holders)]++
		}
		for _, h := range holders {
			if got, want := share[h], n/len(holders); got < want*9/10 || got > want*11/10 {
				t.Errorf("%v: %s holds %d of %d fleets, want about %d", holders, h, got, n, want)
			}
		}
		for i := range n {
			key := fmt.Sprintf("fleet-%d", i)
			if was := rendezvous(key, holders); was != holders[0] && rendezvous(key, holders[1:]) != was {
				t.Fatalf("%s moved from %s though %s was removed", key, was, holders[0])
			}
		}
	}
}
