package sshhost

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/crypto/ssh"
)

// serverVersion is the banner the fake sshd sends.
const serverVersion = "SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13.5"

var errKeyRejected = errors.New("sim: public key rejected")

// serve runs the host's sshd on one accepted connection, following the
// host's schedule, until the connection ends.
func (h *Host) serve(c net.Conn) {
	defer c.Close()
	now, sched := h.net.clock.Now(), h.Schedule()
	switch {
	case now.Before(sched.HangUntil):
		_, _ = io.Copy(io.Discard, c) // accept bytes, never answer
		return
	case now.Before(sched.NoBannerUntil):
		return // closed before the banner
	}
	h.mu.Lock()
	signer := h.signerLocked()
	h.mu.Unlock()
	cfg := &ssh.ServerConfig{PublicKeyCallback: h.checkKey, ServerVersion: serverVersion}
	cfg.AddHostKey(signer)
	sc, chans, reqs, err := ssh.NewServerConn(c, cfg)
	if err != nil {
		return
	}
	defer sc.Close()
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { ssh.DiscardRequests(reqs) })
	for nc := range chans {
		switch nc.ChannelType() {
		case "session":
			wg.Go(func() { h.session(nc, &wg) })
		case "direct-tcpip":
			wg.Go(func() { h.directTCPIP(nc, &wg) })
		default:
			_ = nc.Reject(ssh.UnknownChannelType, "unknown channel type")
		}
	}
}

// checkKey accepts a key of cfg.AuthorizedKeys() (or the fixed keys a fake
// gave) for cfg.User, unless the schedule still rejects every key.
func (h *Host) checkKey(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	if h.net.clock.Now().Before(h.Schedule().RejectKeysUntil) || meta.User() != h.cfg.User {
		return nil, errKeyRejected
	}
	keys := h.cfg.staticKeys
	if h.cfg.AuthorizedKeys != nil {
		keys = h.cfg.AuthorizedKeys()
	}
	want := key.Marshal()
	for _, k := range keys {
		if k != nil && bytes.Equal(k.Marshal(), want) {
			return &ssh.Permissions{}, nil
		}
	}
	return nil, errKeyRejected
}

// session is one "session" channel.
type session struct {
	host   *Host
	ch     ssh.Channel
	ctx    context.Context // ends when the channel closes
	mu     sync.Mutex
	tied   []*agentProc
	env    map[string]string
	ended  bool
	execed bool
}

// session serves a session channel: "exec" runs a command; "env" takes
// LANG and LC_*; "pty-req", "shell", "subsystem" and the rest are refused.
// When the channel closes, the processes tied to it die.
func (h *Host) session(nc ssh.NewChannel, wg *sync.WaitGroup) {
	ch, reqs, err := nc.Accept()
	if err != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{host: h, ch: ch, ctx: ctx, env: map[string]string{}}
	for req := range reqs {
		ok := false
		switch req.Type {
		case "exec":
			var msg struct{ Command string }
			if ssh.Unmarshal(req.Payload, &msg) == nil && !s.execed {
				s.execed = true
				if req.WantReply {
					_ = req.Reply(true, nil) // before the command can close the channel
				}
				wg.Go(func() { s.exec(msg.Command) })
				continue
			}
		case "env":
			var msg struct{ Name, Value string }
			if ssh.Unmarshal(req.Payload, &msg) == nil && (msg.Name == "LANG" || strings.HasPrefix(msg.Name, "LC_")) {
				s.env[msg.Name], ok = msg.Value, true
			}
		}
		if req.WantReply {
			_ = req.Reply(ok, nil)
		}
	}
	cancel()
	s.end()
	_ = ch.Close()
}

// tie makes p die with the session (at once if it already ended).
func (s *session) tie(p *agentProc) {
	s.mu.Lock()
	ended := s.ended
	if !ended {
		s.tied = append(s.tied, p)
	}
	s.mu.Unlock()
	if ended {
		s.host.stopAgent(p)
	}
}

// liveTied returns a tied process still running, or nil.
func (s *session) liveTied() *agentProc {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.tied {
		if !isClosedChan(p.dead) {
			return p
		}
	}
	return nil
}

func (s *session) end() {
	s.mu.Lock()
	s.ended = true
	tied := s.tied
	s.tied = nil
	s.mu.Unlock()
	for _, p := range tied {
		s.host.stopAgent(p)
	}
}

// exec runs cmd, records it, sends its exit status, then closes the
// channel, after waiting for a session-tied background process to die (as
// sshd waits for a child holding the session's stdout or stderr).
func (s *session) exec(cmd string) {
	h := s.host
	rec := &ExecRecord{Time: h.net.clock.Now(), User: h.cfg.User, Command: cmd, Exit: -1}
	h.mu.Lock()
	h.cmds = append(h.cmds, rec)
	h.mu.Unlock()
	var out, errOut syncBuffer
	in := &recStdin{r: s.ch}
	status, detached := runExec(s, cmd, in, &sessionOutput{io.MultiWriter(s.ch, &out)},
		&sessionOutput{io.MultiWriter(s.ch.Stderr(), &errOut)})
	killed := s.ctx.Err() != nil
	h.mu.Lock()
	rec.Stdin, rec.Stdout, rec.Stderr, rec.Detached = in.consumed(), out.String(), errOut.String(), detached
	if !killed {
		rec.Exit = status
	}
	h.mu.Unlock()
	if killed {
		return
	}
	_ = s.ch.CloseWrite()
	_, _ = s.ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{uint32(status)}))
	if p := s.liveTied(); p != nil {
		select {
		case <-s.ctx.Done():
		case <-p.dead:
		}
	}
	_ = s.ch.Close()
}

// directTCPIP serves a direct-tcpip channel: localhost:<agent port> reaches
// the agent's HTTP API while it listens; a Jump host connects to another
// host of the network (private ones included), whose schedule applies;
// anything else is rejected.
func (h *Host) directTCPIP(nc ssh.NewChannel, wg *sync.WaitGroup) {
	var msg struct {
		Host     string
		Port     uint32
		OrigHost string
		OrigPort uint32
	}
	if err := ssh.Unmarshal(nc.ExtraData(), &msg); err != nil {
		_ = nc.Reject(ssh.ConnectionFailed, "malformed direct-tcpip request")
		return
	}
	ownIP, _, _ := net.SplitHostPort(h.cfg.Addr)
	if isLocalhost(msg.Host) || msg.Host == ownIP {
		spec := h.agentSpec()
		if int(msg.Port) != spec.Port || !h.agentListening(spec) {
			_ = nc.Reject(ssh.ConnectionFailed, "Connection refused")
			return
		}
		ch, reqs, err := nc.Accept()
		if err != nil {
			return
		}
		wg.Go(func() { ssh.DiscardRequests(reqs) })
		h.serveAgentHTTP(ch)
		_ = ch.Close()
		return
	}
	if !h.cfg.Jump {
		_ = nc.Reject(ssh.Prohibited, "administratively prohibited: open failed")
		return
	}
	addr := normAddr(net.JoinHostPort(msg.Host, strconv.Itoa(int(msg.Port))))
	target, st := h.net.lookup(addr, true)
	var pc *pipeConn
	if st == dialOK {
		var ok bool
		if pc, ok = h.net.connect(target, tcpAddr(addr)); !ok {
			st = dialClosed
		}
	}
	switch st {
	case dialRefused:
		_ = nc.Reject(ssh.ConnectionFailed, "Connection refused")
		return
	case dialBlackhole, dialClosed:
		_ = nc.Reject(ssh.ConnectionFailed, "No route to host")
		return
	}
	ch, reqs, err := nc.Accept()
	if err != nil {
		pc.Close()
		return
	}
	wg.Go(func() { ssh.DiscardRequests(reqs) })
	bridge(ch, pc, wg)
}

// bridge copies between a channel and a connection until either ends.
func bridge(ch ssh.Channel, pc net.Conn, wg *sync.WaitGroup) {
	closeBoth := func() {
		_ = ch.Close()
		_ = pc.Close()
	}
	wg.Go(func() {
		_, _ = io.Copy(pc, ch)
		closeBoth()
	})
	_, _ = io.Copy(ch, pc)
	closeBoth()
}
