package sshhost

// The interpreter's open, stat and read-directory handlers: redirections,
// $(<file), tests and globs reach the host's in-memory file system through
// them, and pipelines' captures live in the exec's memory.

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"strings"

	"mvdan.cc/sh/v3/interp"
)

func (sh shellEnv) absIn(dir, p string) string {
	if p != "" && !strings.HasPrefix(p, "/") {
		p = dir + "/" + p
	}
	return sh.x.h.abs(p)
}

// open is the interpreter's OpenHandler: redirections, $(<file) and
// source. Writes are checked with the shell's privileges when the file is
// opened and land in the host's file as they are written.
func (sh shellEnv) open(ctx context.Context, name string, flag int, _ os.FileMode) (io.ReadWriteCloser, error) {
	hc := interp.HandlerCtx(ctx)
	p := sh.absIn(hc.Dir, name)
	switch p {
	case "/dev/null":
		return nullFile{}, nil
	case "/dev/stdout":
		return writeOnly{hc.Stdout}, nil
	case "/dev/stderr":
		return writeOnly{hc.Stderr}, nil
	}
	write := flag&(os.O_WRONLY|os.O_RDWR) != 0
	if key, ok := strings.CutPrefix(p, pipeDir); ok {
		return sh.x.capture(key, write)
	}
	h := sh.x.h
	if !write {
		data, err := h.readFile(p)
		if err != nil {
			return nil, &os.PathError{Op: "sh: cannot open", Path: name, Err: err}
		}
		return pipeReader(data)
	}
	if err := h.writeFile(p, nil, sh.root, flag&os.O_TRUNC == 0); err != nil {
		return nil, &os.PathError{Op: "sh: cannot create", Path: name, Err: err}
	}
	return &hostFile{h: h, path: p}, nil
}

// stat is the interpreter's StatHandler (test -e, -d, -f, -s, [[ ]] and cd).
func (sh shellEnv) stat(_ context.Context, name string, _ bool) (fs.FileInfo, error) {
	if info, ok := sh.x.h.stat(name); ok {
		return info, nil
	}
	return nil, &os.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

// readDir is the interpreter's ReadDirHandler2 (globs).
func (sh shellEnv) readDir(_ context.Context, name string) ([]fs.DirEntry, error) {
	entries, err := sh.x.h.readDir(name)
	if err != nil {
		return nil, &os.PathError{Op: "readdir", Path: name, Err: err}
	}
	return entries, nil
}

// hostFile is a file of the host opened for writing: every Write appends
// to it.
type hostFile struct {
	h    *Host
	path string
}

func (f *hostFile) Read([]byte) (int, error) { return 0, errors.New("bad file descriptor") }
func (f *hostFile) Close() error             { return nil }

func (f *hostFile) Write(p []byte) (int, error) {
	if err := f.h.writeFile(f.path, p, true, true); err != nil {
		return 0, err
	}
	return len(p), nil
}

// pipeDir holds the captures of rewritten pipelines (see rewritePipe).
const pipeDir = "/dev/sim-pipe/"

// capture opens a pipeline's capture: for writing it starts empty; reading
// takes it.
func (x *execState) capture(key string, write bool) (io.ReadWriteCloser, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if write {
		b := &syncBuffer{}
		x.captures[key] = b
		return writeOnly{b}, nil
	}
	b := x.captures[key]
	delete(x.captures, key)
	if b == nil {
		return pipeReader(nil)
	}
	return pipeReader([]byte(b.String()))
}

// pipeReader returns a file that reads data: the interpreter gives a
// command's stdin as an *os.File (an operating-system pipe, no file), and
// when given one it starts no copy of its own. The writer ends when data is
// written or the reader is closed (the interpreter closes it after the
// command).
func pipeReader(data []byte) (*os.File, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	go func() {
		_, _ = w.Write(data)
		_ = w.Close()
	}()
	return r, nil
}

type writeOnly struct{ io.Writer }

func (writeOnly) Read([]byte) (int, error) { return 0, errors.New("bad file descriptor") }
func (writeOnly) Close() error             { return nil }

type nullFile struct{}

func (nullFile) Read([]byte) (int, error)    { return 0, io.EOF }
func (nullFile) Write(p []byte) (int, error) { return len(p), nil }
func (nullFile) Close() error                { return nil }
