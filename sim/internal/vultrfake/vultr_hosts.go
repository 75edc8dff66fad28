package vultrfake

import (
	"strings"
	"sync"
	"time"

	"github.com/gpufleet/gpufleet/sim/internal/sshhost"
	"golang.org/x/crypto/ssh"
)

// registerHost (re)places the server's SSH host on the network at
// main_ip:22 for user root with the keys the server was deployed with; sshd
// refuses TCP until SSHDelay after the later of becoming active and
// restartAt (a start or reboot). A halted or deleted server has no host.
// The change is queued and applied by unlock. Callers hold v.mu.
func (v *Vultr) registerHost(srv *vultrServer, restartAt time.Time) {
	if srv.halted || srv.destroying() {
		v.removeHost(srv)
		return
	}
	up := srv.activeAt()
	if restartAt.After(up) {
		up = restartAt
	}
	if srv.sshAddr == "" {
		srv.sshAddr = srv.mainIP + ":22"
	}
	// The first host (at create) lives in the server's own allocation;
	// later ones (start, reboot) get their own, as the network may still
	// read a queued one.
	cfg := &srv.firstHost
	if cfg.Addr != "" {
		cfg = new(sshhost.HostConfig)
	}
	*cfg = sshhost.HostConfig{
		Addr:       srv.sshAddr,
		InstanceID: srv.id,
		User:       "root",
		Schedule:   sshhost.HostSchedule{RefuseUntil: up.Add(srv.timing.SSHDelay)},
	}
	v.hostOps = append(v.hostOps, vultrHostOp{add: cfg, keys: srv.keys}) // keys: set at create, never changed
	srv.hostAddr = srv.sshAddr
}

// removeHost takes the server's SSH host off the network. Callers hold v.mu.
func (v *Vultr) removeHost(srv *vultrServer) {
	if addr := srv.hostAddr; addr != "" {
		v.hostOps = append(v.hostOps, vultrHostOp{remove: addr})
		srv.hostAddr = ""
	}
}

// vultrHostOp is a network change queued under v.mu: add a host (lazily),
// or remove the host at an address.
type vultrHostOp struct {
	add    *sshhost.HostConfig
	keys   []ssh.PublicKey
	remove string
}

func (op vultrHostOp) apply(n *sshhost.Network) {
	if op.add != nil {
		sshhost.AddLazy(n, op.add, op.keys)
		return
	}
	n.RemoveHost(op.remove)
}

// unlock releases v.mu and then applies the network changes queued under
// it, outside v.mu (Network runs OnAddHost hooks and closes connections,
// which may call back into the fake), in the order they were queued.
func (v *Vultr) unlock() {
	if len(v.hostOps) == 0 {
		v.mu.Unlock()
		return
	}
	var local [4]vultrHostOp
	ops := v.hostOps
	if len(ops) <= len(local) { // the usual case: keep the queue's array for the next batch
		ops = local[:copy(local[:], v.hostOps)]
		clear(v.hostOps)
		v.hostOps = v.hostOps[:0]
	} else {
		v.hostOps = nil
	}
	ticket := v.hostTicket
	v.hostTicket++
	v.mu.Unlock()
	q := &v.hostQueue
	q.mu.Lock()
	for q.serving != ticket {
		q.turn.Wait()
	}
	q.mu.Unlock()
	for _, op := range ops {
		op.apply(v.net)
	}
	q.mu.Lock()
	q.serving++
	q.turn.Broadcast()
	q.mu.Unlock()
}

// vultrHostQueue serves batches of network changes by ticket.
type vultrHostQueue struct {
	mu      sync.Mutex
	turn    *sync.Cond
	serving uint64
}

// vultrCloudConfigKeys returns the keys of every ssh_authorized_keys list of
// a cloud-config (user_data starting with "#cloud-config"), top level or
// under users; block ("- key") and flow ("[a, b]") sequences. It is a
// minimal line parser, not YAML: keys that do not parse are skipped.
func vultrCloudConfigKeys(text string) []ssh.PublicKey {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if !strings.HasPrefix(strings.TrimSpace(text), "#cloud-config") {
		return nil
	}
	var keys []ssh.PublicKey
	add := func(s string) {
		if pk, err := vultrParseKey(vultrUnquote(s)); err == nil {
			keys = append(keys, pk)
		}
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		indent := len(line) - len(strings.TrimLeft(line, " "))
		t := strings.TrimSpace(line)
		if s, ok := strings.CutPrefix(t, "- "); ok {
			t, indent = strings.TrimSpace(s), indent+2
		}
		rest, ok := strings.CutPrefix(t, "ssh_authorized_keys:")
		if !ok {
			continue
		}
		if rest = strings.TrimSpace(rest); strings.HasPrefix(rest, "[") {
			for _, item := range strings.Split(strings.Trim(rest, "[]"), ",") {
				add(item)
			}
			continue
		}
		for i+1 < len(lines) {
			next := lines[i+1]
			nt := strings.TrimSpace(next)
			if nt == "" || strings.HasPrefix(nt, "#") {
				i++
				continue
			}
			item, isItem := strings.CutPrefix(nt, "- ")
			if !isItem || len(next)-len(strings.TrimLeft(next, " ")) < indent {
				break
			}
			i++
			add(item)
		}
	}
	return keys
}

// vultrUnquote strips spaces and one pair of matching quotes.
func vultrUnquote(s string) string {
	s = strings.TrimSpace(s)
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	return s
}
