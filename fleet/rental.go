package fleet

// A provider id does not always name one rental: Hot Aisle gives a
// released bare-metal server's name to its next rental (the server goes
// back to the pool and is reserved again, reinstalled). So the records
// closed for earlier rentals of an id meet it again in lists and Gets, and
// what a list or a Get shows under an id is taken as a record's rental only
// when its label does not name another create.

// labelNamesOther reports whether seen, what a list or a Get shows under
// the provider id of inst, carries the label of another create than inst's
// (another request of this owner, or another owner's): the server was
// released and rented again. A duplicate's record (its key is the label's
// request id, a dash and the provider id) is named by the label it shares.
func labelNamesOther(inst, seen Instance) bool {
	return seen.RequestID != "" && seen.RequestID != inst.RequestID &&
		inst.RequestID != seen.RequestID+"-"+seen.ID
}

// rentalOf reports whether seen, shown under r's provider id, is r's
// rental. A closed (terminated) record claims an instance again only by its
// own label, or its owner's tags, and never while an open record holds the
// id. A record being released yields to any other create's label (its
// server was released and rented again). An open record yields only to
// another owner's label: its own owner's labels can name another of its
// creates for a while (a label written after the create races another
// create's recovery), which the label repair settles. m.mu held.
func (m *Manager) rentalOf(r *InstanceRecord, seen Instance) bool {
	switch {
	case r.Instance.Status == StatusTerminated:
		if labelNamesOther(r.Instance, seen) || m.heldByAnother(r, seen.ID) {
			return false
		}
		return seen.RequestID != "" || (seen.Owner != "" && seen.Owner == m.owner)
	case r.Termination != nil:
		return !labelNamesOther(r.Instance, seen)
	}
	return !otherOwners(r.Instance, seen, m.owner)
}

// otherOwners reports whether seen, shown under inst's provider id, carries
// another owner's label naming another create (owner is this Manager's).
func otherOwners(inst, seen Instance, owner string) bool {
	return labelNamesOther(inst, seen) && seen.Owner != owner
}

// knownRental reports whether a record holds seen: one of its id whose
// rental it is, or, for an instance without a label, any record of its id
// (a closed record's server still listed, or another rental this Manager
// never touches). m.mu held.
func (m *Manager) knownRental(holders []*InstanceRecord, seen Instance) bool {
	for _, r := range holders {
		if seen.RequestID == "" || m.rentalOf(r, seen) {
			return true
		}
	}
	return false
}

// newerHolder reports whether record a, rather than b, answers for a
// provider id both hold: an open record before a closed one, then the later
// create, then the greater request id (so the choice never depends on map
// order).
func newerHolder(a, b *InstanceRecord) bool {
	if ao, bo := a.Instance.Status != StatusTerminated, b.Instance.Status != StatusTerminated; ao != bo {
		return ao
	}
	if !a.Instance.Created.Equal(b.Instance.Created) {
		return a.Instance.Created.After(b.Instance.Created)
	}
	return a.Instance.RequestID > b.Instance.RequestID
}
