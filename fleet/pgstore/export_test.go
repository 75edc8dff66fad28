package pgstore

// InstanceByIDQuery is the statement Instance runs ($1: the id).
func InstanceByIDQuery(s *Store) string { return s.q.instanceByID }
