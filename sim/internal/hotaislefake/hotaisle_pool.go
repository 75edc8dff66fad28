package hotaislefake

import "slices"

// The bare-metal pool (see the package documentation).

// haMachine is a bare-metal server back in its row's pool: what it keeps
// from rental to rental.
type haMachine struct {
	num      int    // the number in its name (enc1-gpu012 is 12)
	name     string // its host name, the API's name
	ip       string // its private address
	port     int    // its port on the ssh_access front host
	installs int    // how many times its OS was installed for a rental
}

// takeMachine hands out a server of catalog row row: the lowest-numbered
// one released back to the row's pool, else a new one (the next name,
// private address and front-host port).
func (st *haState) takeMachine(row int) haMachine {
	if free := st.bmFree[row]; len(free) > 0 {
		m := free[0]
		st.bmFree[row] = free[1:]
		return m
	}
	m := haMachine{num: st.nextBM, ip: haTakeAddr(&st.nextBMIP), port: st.nextPort}
	m.name = haBMName(m.num)
	st.nextBM++
	st.nextPort++
	return m
}

// returnMachine puts the released server s back in its row's pool, sorted
// by number, to be installed anew at its next rental.
func (st *haState) returnMachine(s *haServer) {
	m := haMachine{num: s.num, name: s.name, ip: s.ip, port: s.sshPort, installs: s.installs + 1}
	free := st.bmFree[s.row]
	i, _ := slices.BinarySearchFunc(free, m.num, func(a haMachine, n int) int { return a.num - n })
	st.bmFree[s.row] = slices.Insert(free, i, m)
}
