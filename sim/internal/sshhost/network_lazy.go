package sshhost

import "golang.org/x/crypto/ssh"

// AddLazy adds (or replaces) the host at cfg.Addr like AddHost, but makes
// the Host (its file system, its key, the OnAddHost hooks) only when it is
// first used: dialled, or asked for by Host or Hosts. The fakes add their
// servers' hosts this way, so a create pays for none of it. cfg.Addr must be
// in canonical form ("a.b.c.d:22", as normAddr leaves it). keys, when
// cfg.AuthorizedKeys is nil, are the keys the host accepts (a server
// deployed with fixed keys needs no function of its own).
func AddLazy(n *Network, cfg *HostConfig, keys []ssh.PublicKey) {
	if keys != nil {
		cfg.staticKeys = keys
	}
	addr := cfg.Addr
	n.mu.Lock()
	old := n.hosts[addr]
	if old != nil {
		delete(n.hosts, addr)
	}
	n.lazy[addr] = cfg
	if len(n.removed) > 0 {
		delete(n.removed, addr)
	}
	n.mu.Unlock()
	if old != nil {
		n.dropHost(old)
	}
}

// materialize makes the lazily added host at addr (if any) and runs the
// OnAddHost hooks on it.
func (n *Network) materialize(addr string) {
	n.mu.Lock()
	cfg, ok := n.lazy[addr]
	if !ok {
		n.mu.Unlock()
		return
	}
	delete(n.lazy, addr)
	h := newHost(n, *cfg)
	n.hosts[addr] = h
	hooks := append([]func(*Host){}, n.onAdd...)
	n.mu.Unlock()
	for _, f := range hooks {
		f(h)
	}
}

// HasExact reports whether a host (made or not) is at addr, which must be
// in canonical form ("a.b.c.d:22").
func HasExact(n *Network, addr string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	_, lazy := n.lazy[addr]
	return lazy || n.hosts[addr] != nil
}
