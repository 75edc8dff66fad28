package fleet_test

import "github.com/gpufleet/gpufleet/fleet"

// summary counts the env's events by type.
func summary(e *env) map[fleet.EventType]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := map[fleet.EventType]int{}
	for _, ev := range e.events {
		m[ev.Type]++
	}
	return m
}
