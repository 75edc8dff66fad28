package fleet_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/gpufleet/gpufleet/fleet"
	"github.com/gpufleet/gpufleet/fleet/storetest"
)

func TestMemoryStoreContract(t *testing.T) {
	storetest.Run(t, func(*testing.T) fleet.Store { return fleet.NewMemoryStore() })
}

// The memory lease store runs each case in a bubble: its leases expire by
// the bubble's clock.
func TestMemoryLeaseStoreContract(t *testing.T) {
	storetest.RunLeases(t, storetest.LeaseHarness{
		New:     func(*testing.T) fleet.LeaseStore { return fleet.NewMemoryLeaseStore(nil) },
		Short:   10 * time.Second,
		Wait:    time.Sleep,
		Isolate: synctest.Test,
	})
}
