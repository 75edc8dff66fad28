package sshhost

import (
	"errors"
	"io/fs"
	"path"
	"sort"
	"strings"
	"time"
)

// The fake hosts' file system: files and directories in the host's memory,
// with one mode bit, executable. A non-root user may write only under its
// home directory, /tmp, /var/tmp and /dev/shm. /run/systemd/system exists
// exactly when the host runs systemd. The shell's redirections, tests and
// globs reach it through the interpreter's handlers
// (sshhost_fs_handlers.go); nothing reads or writes the process's own
// files.

var (
	errNoEnt  = errors.New("No such file or directory") //nolint:staticcheck // the text sh prints
	errPerm   = errors.New("Permission denied")         //nolint:staticcheck // the text sh prints
	errIsDir  = errors.New("Is a directory")            //nolint:staticcheck // the text sh prints
	errExists = errors.New("File exists")               //nolint:staticcheck // the text sh prints
	errNotDir = errors.New("Not a directory")           //nolint:staticcheck // the text sh prints
)

var binDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

const systemdDir = "/run/systemd/system"

func cleanPath(p string) string { return path.Clean(p) }

func parentDir(p string) string { return path.Dir(p) }

// userWritable reports whether a non-root user may write at absolute p.
func (h *Host) userWritable(p string) bool {
	for _, d := range []string{h.home(), "/tmp", "/var/tmp", "/dev/shm"} {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// isDirLocked reports whether absolute p is a directory; h.mu is held.
func (h *Host) isDirLocked(p string) bool {
	if p == systemdDir {
		return h.systemd
	}
	return h.dirs[p]
}

func (h *Host) readFile(p string) ([]byte, error) {
	p = h.abs(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isDirLocked(p) {
		return nil, errIsDir
	}
	f, ok := h.files[p]
	if !ok {
		return nil, errNoEnt
	}
	return append([]byte(nil), f.data...), nil
}

// writeFile writes (or appends) data at p, creating the file.
func (h *Host) writeFile(p string, data []byte, root, appendMode bool) error {
	p = h.abs(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.isDirLocked(p):
		return errIsDir
	case h.files[parentDir(p)] != nil:
		return errNotDir
	case !h.isDirLocked(parentDir(p)):
		return errNoEnt
	case !root && !h.userWritable(p):
		return errPerm
	}
	f := h.files[p]
	if f == nil {
		f = &file{}
		h.files[p] = f
	}
	if appendMode {
		f.data = append(f.data, data...)
	} else {
		f.data = append([]byte(nil), data...)
	}
	return nil
}

// mkdir creates p (and its parents with parents set).
func (h *Host) mkdir(p string, parents, root bool) error {
	p = h.abs(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.files[p]; ok {
		return errExists
	}
	if h.isDirLocked(p) {
		if parents {
			return nil
		}
		return errExists
	}
	if !root && !h.userWritable(p) {
		return errPerm
	}
	if !parents && !h.isDirLocked(parentDir(p)) {
		return errNoEnt
	}
	for d := p; d != "/"; d = parentDir(d) {
		if h.files[d] != nil {
			return errNotDir
		}
	}
	h.mkdirAll(p)
	return nil
}

// remove deletes the file p (a directory too, with its content, if rec).
func (h *Host) remove(p string, rec, root bool) error {
	p = h.abs(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	_, isFile := h.files[p]
	switch {
	case !isFile && !h.dirs[p]:
		return errNoEnt
	case !root && !h.userWritable(p):
		return errPerm
	case h.dirs[p] && !rec:
		return errIsDir
	}
	delete(h.files, p)
	delete(h.dirs, p)
	for k := range h.files {
		if strings.HasPrefix(k, p+"/") {
			delete(h.files, k)
		}
	}
	for k := range h.dirs {
		if strings.HasPrefix(k, p+"/") {
			delete(h.dirs, k)
		}
	}
	return nil
}

// copyFile copies (or moves) the file src to dst; dst may be a directory.
// mode is 0 to keep src's executable bit, else the mode to give dst.
func (h *Host) copyFile(src, dst string, move, root bool, mode fs.FileMode) error {
	src, dst = h.abs(src), h.abs(dst)
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[src]
	if !ok {
		if h.dirs[src] {
			return errIsDir
		}
		return errNoEnt
	}
	if h.isDirLocked(dst) {
		dst = dst + "/" + path.Base(src)
	}
	switch {
	case !h.isDirLocked(parentDir(dst)):
		return errNoEnt
	case !root && (!h.userWritable(dst) || move && !h.userWritable(src)):
		return errPerm
	}
	exec := f.exec
	if mode != 0 {
		exec = mode&0o111 != 0
	}
	h.files[dst] = &file{data: append([]byte(nil), f.data...), exec: exec}
	if move && dst != src {
		delete(h.files, src)
	}
	return nil
}

// chmod sets or clears the executable bit of p.
func (h *Host) chmod(p string, exec, root bool) error {
	p = h.abs(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[p]
	switch {
	case !ok && h.isDirLocked(p):
		return nil
	case !ok:
		return errNoEnt
	case !root && !h.userWritable(p):
		return errPerm
	}
	f.exec = exec
	return nil
}

// fileInfo is a file's or directory's fs.FileInfo.
type fileInfo struct {
	name string
	size int64
	mode fs.FileMode
}

func (i fileInfo) Name() string       { return i.name }
func (i fileInfo) Size() int64        { return i.size }
func (i fileInfo) Mode() fs.FileMode  { return i.mode }
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.mode.IsDir() }
func (i fileInfo) Sys() any           { return nil }

// statLocked describes absolute p; h.mu is held.
func (h *Host) statLocked(p string) (fileInfo, bool) {
	if h.isDirLocked(p) {
		return fileInfo{name: path.Base(p), mode: fs.ModeDir | 0o755}, true
	}
	if p == "/dev/null" {
		return fileInfo{name: "null", mode: fs.ModeDevice | fs.ModeCharDevice | 0o666}, true
	}
	f, ok := h.files[p]
	if !ok {
		return fileInfo{}, false
	}
	mode := fs.FileMode(0o644)
	if f.exec {
		mode = 0o755
	}
	return fileInfo{name: path.Base(p), size: int64(len(f.data)), mode: mode}, true
}

// stat describes p (relative paths are from the home directory).
func (h *Host) stat(p string) (fileInfo, bool) {
	p = h.abs(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.statLocked(p)
}

// lookPath finds a program: a path, or a name in the PATH directories. It
// returns the path and the file (nil if absent).
func (h *Host) lookPath(name string) (string, *file) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if strings.Contains(name, "/") {
		p := h.abs(name)
		return p, h.files[p]
	}
	for _, d := range binDirs {
		if f := h.files[d+"/"+name]; f != nil {
			return d + "/" + name, f
		}
	}
	return name, nil
}

// readDir lists directory p, sorted by name.
func (h *Host) readDir(p string) ([]fs.DirEntry, error) {
	p = h.abs(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.isDirLocked(p) {
		if h.files[p] != nil {
			return nil, errNotDir
		}
		return nil, errNoEnt
	}
	prefix := strings.TrimSuffix(p, "/") + "/"
	var names []string
	child := func(k string) {
		if rest, ok := strings.CutPrefix(k, prefix); ok && rest != "" && !strings.Contains(rest, "/") {
			names = append(names, k)
		}
	}
	for k := range h.dirs {
		child(k)
	}
	for k := range h.files {
		child(k)
	}
	if p == parentDir(systemdDir) && h.systemd {
		names = append(names, systemdDir)
	}
	sort.Strings(names)
	out := make([]fs.DirEntry, 0, len(names))
	for _, n := range names {
		info, _ := h.statLocked(n)
		out = append(out, fs.FileInfoToDirEntry(info))
	}
	return out, nil
}
