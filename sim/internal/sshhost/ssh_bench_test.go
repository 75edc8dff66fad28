package sshhost

import (
	"fmt"
	"testing"
)

// BenchmarkSSHAgentStart is one agent start on a fresh fake host, as the
// shim package runs it for a root login: connect, the install steps, the
// systemd probe, the unit (or setsid/nohup with a pid file), then the health
// check through direct-tcpip. Run:
//
//	go test -run '^$' -bench SSHAgentStart -benchmem ./sim/
func BenchmarkSSHAgentStart(b *testing.B) {
	download := `sh -c 'curl -fsS --compressed --connect-timeout 60 --max-time 240 --retry 1 -o /usr/local/bin/dstack-shim.download '\''https://example.com/0.19.41/dstack-shim-linux-amd64'\'' && chmod +x /usr/local/bin/dstack-shim.download && mv -f /usr/local/bin/dstack-shim.download /usr/local/bin/dstack-shim'`
	systemd := []benchStep{
		{cmd: `sh -c 'mkdir -p /root/.dstack /usr/local/bin'`},
		{cmd: download},
		{cmd: `sh -c 'test -d /run/systemd/system'`},
		{cmd: `sh -c 'cat > /etc/systemd/system/dstack-shim.service'`, stdin: shimUnit},
		{cmd: `sh -c 'systemctl daemon-reload && systemctl enable dstack-shim.service && systemctl restart dstack-shim.service'`},
	}
	nohup := []benchStep{
		{cmd: `sh -c 'mkdir -p /root/.dstack /usr/local/bin'`},
		{cmd: download},
		{cmd: `sh -c 'test -d /run/systemd/system'`, exit: 1},
		{cmd: `sh -c 'DSTACK_SHIM_HOME='\''/root/.dstack'\'' setsid nohup /usr/local/bin/dstack-shim >>/root/.dstack/shim.log 2>&1 & echo $! >/run/dstack-shim.pid'`},
	}
	b.Run("systemd", func(b *testing.B) { benchAgentStart(b, systemd, false) })
	b.Run("nohup", func(b *testing.B) { benchAgentStart(b, nohup, true) })
}

type benchStep struct {
	cmd, stdin string
	exit       int
}

func benchAgentStart(b *testing.B, steps []benchStep, noSystemd bool) {
	n := NewNetwork(nil, 1)
	defer n.Close()
	key := testSigner(b, "bench")
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		h := n.AddHost(HostConfig{Addr: fmt.Sprintf("10.%d.%d.%d:22", i>>16&255, i>>8&255, i&255), User: "root",
			AuthorizedKeys: authorized(key), NoSystemd: noSystemd})
		c := mustDial(b, n, h, key)
		for _, st := range steps {
			_, errOut, exit, err := runE(c, st.cmd, st.stdin)
			if err != nil || exit != st.exit {
				b.Fatalf("%s: exit %d, err %v, stderr %q", st.cmd, exit, err, errOut)
			}
		}
		if status, _, err := get(c, "10998", "/api/healthcheck"); err != nil || status != 200 {
			b.Fatalf("health: %d %v", status, err)
		}
		c.Close()
		n.RemoveHost(h.Addr())
	}
}
