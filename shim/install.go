package shim

import (
	"context"
	"time"
)

// install runs the install steps, then starts the agent detached: with
// systemd (unit written, daemon-reload, enable, restart) when the host
// runs it, else with setsid/nohup in the background and a pid file.
func (s *Starter) install(ctx context.Context, c *Conn) error {
	cmds := commands{spec: s.spec, sudo: c.sudo}
	r := stepRunner{s: s, c: c}
	for _, st := range s.spec.Install {
		timeout := st.Timeout
		if timeout <= 0 {
			timeout = s.timeouts.Step
		}
		if _, err := r.step(ctx, st.Name, cmds.wrap(st.Command), nil, timeout, 0); err != nil {
			return err
		}
	}
	systemd, err := s.useSystemd(ctx, &r, cmds)
	if err != nil {
		return err
	}
	if !systemd {
		_, err = r.step(ctx, "start detached", cmds.startDetached(), nil, s.timeouts.Start, 0)
		return err
	}
	if _, err := r.step(ctx, "write unit", cmds.writeUnit(), []byte(s.spec.unitText()), s.timeouts.Start, 0); err != nil {
		return err
	}
	_, err = r.step(ctx, "start unit", cmds.startSystemd(), nil, s.timeouts.Start, 0)
	return err
}

// useSystemd says whether the agent runs under systemd: as configured, or
// when the host has /run/systemd/system.
func (s *Starter) useSystemd(ctx context.Context, r *stepRunner, cmds commands) (bool, error) {
	switch s.supervisor {
	case SupervisorSystemd:
		return true, nil
	case SupervisorNohup:
		return false, nil
	}
	exit, err := r.step(ctx, "detect systemd", cmds.probeSystemd(), nil, s.timeouts.Start, 0, 1)
	return exit == 0, err
}

// stepRunner numbers and runs the steps of one start.
type stepRunner struct {
	s *Starter
	c *Conn
	n int
}

// step runs cmd; an exit status not in ok (or a transport failure, or a
// timeout) is a *StepError carrying stderr.
func (r *stepRunner) step(ctx context.Context, name, cmd string, stdin []byte, timeout time.Duration, ok ...int) (int, error) {
	r.n++
	start := time.Now()
	_, stderr, exit, err := r.c.run(ctx, cmd, stdin, timeout)
	r.s.log.Debug("shim: step", "instance", r.c.instID, "step", r.n, "name", name, "exit", exit,
		"took", time.Since(start), "err", err)
	if err == nil {
		for _, o := range ok {
			if exit == o {
				return exit, nil
			}
		}
	}
	serr := &StepError{Step: name, Index: r.n, ExitStatus: exit, Stderr: stderr, Err: err}
	r.s.log.Warn("shim: step failed", "instance", r.c.instID, "err", serr)
	return exit, serr
}
