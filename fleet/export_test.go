package fleet

import "time"

// FixRebuyHold makes a fleet hold spares idle nodes for hold past their
// minimum, whatever its jobs (the cost comparison's sweep in hindsight).
func FixRebuyHold(m *Manager, fleet string, spares int, hold time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rebuy == nil {
		m.rebuy = map[string]*rebuyLog{}
	}
	m.rebuy[fleet] = &rebuyLog{since: map[string]time.Time{}, fixed: &rebuyChoice{spares, hold}}
}

// RebuyChoices lists the holds the re-buy replay compares for a minimum
// reservation: spares and hold of each.
func RebuyChoices(minimum time.Duration) (spares []int, holds []time.Duration) {
	for _, c := range rebuyChoices(minimum) {
		spares, holds = append(spares, c.spares), append(holds, c.hold)
	}
	return spares, holds
}
