package sim

import (
	"errors"
	"path"
	"strings"
)

// The fake hosts' file system: files and directories in memory. A non-root
// user may write only under its home directory, /tmp and /var/tmp.

var (
	errNoEnt  = errors.New("No such file or directory") //nolint:staticcheck // the text sh prints
	errPerm   = errors.New("Permission denied")         //nolint:staticcheck // the text sh prints
	errIsDir  = errors.New("Is a directory")            //nolint:staticcheck // the text sh prints
	errExists = errors.New("File exists")               //nolint:staticcheck // the text sh prints
)

var binDirs = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

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

func (h *Host) readFile(p string) ([]byte, error) {
	p = h.abs(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.dirs[p] {
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
	case h.dirs[p]:
		return errIsDir
	case !h.dirs[parentDir(p)]:
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
	if h.dirs[p] {
		if parents {
			return nil
		}
		return errExists
	}
	if !root && !h.userWritable(p) {
		return errPerm
	}
	if !parents && !h.dirs[parentDir(p)] {
		return errNoEnt
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
func (h *Host) copyFile(src, dst string, move, root bool) error {
	src, dst = h.abs(src), h.abs(dst)
	h.mu.Lock()
	defer h.mu.Unlock()
	f, ok := h.files[src]
	if !ok {
		return errNoEnt
	}
	if h.dirs[dst] {
		dst = dst + "/" + path.Base(src)
	}
	switch {
	case !h.dirs[parentDir(dst)]:
		return errNoEnt
	case !root && (!h.userWritable(dst) || move && !h.userWritable(src)):
		return errPerm
	}
	h.files[dst] = &file{data: append([]byte(nil), f.data...), exec: f.exec}
	if move {
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
	case !ok && h.dirs[p]:
		return nil
	case !ok:
		return errNoEnt
	case !root && !h.userWritable(p):
		return errPerm
	}
	f.exec = exec
	return nil
}

// stat reports whether p is a file, a directory, and executable.
func (h *Host) stat(p string) (isFile, isDir, exec bool) {
	p = h.abs(p)
	h.mu.Lock()
	defer h.mu.Unlock()
	if p == "/run/systemd/system" {
		return false, h.systemd, false
	}
	f, ok := h.files[p]
	return ok, h.dirs[p], ok && f.exec
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
