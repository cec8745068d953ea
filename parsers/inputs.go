package parsers

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// Input paths. Offline diagnose walks the folders it is given, the shipper
// follows what its globs match; both decide what a path found as input is
// with StatInput, so a symlink loop, a folder that cannot be read or a path
// that is not a regular file is skipped the same way everywhere: with a
// SkippedInput that names the path and the reason, never silently and never
// by giving up the other inputs.

// Reasons a path found as input is not read. The shipper counts them as
// faultline_shipper_skipped_total{reason}.
const (
	SkipSymlinkLoop = "symlink-loop" // a symlink that leads back to itself, or a folder link to a folder above it
	SkipUnreadable  = "unreadable"   // it cannot be opened, listed or stat'ed (permissions, I/O)
	SkipNotRegular  = "not-regular"  // a FIFO, a socket, a device
)

// SkippedInput is a path found as input that is not read.
type SkippedInput struct {
	Path   string
	Reason string // one of the Skip* reasons
	Err    error
}

func (e *SkippedInput) Error() string {
	return fmt.Sprintf("%s: skipped (%s): %v", e.Path, e.Reason, e.Err)
}

func (e *SkippedInput) Unwrap() error { return e.Err }

// SkipReason names why err keeps a path from being read.
func SkipReason(err error) string {
	if errors.Is(err, syscall.ELOOP) {
		return SkipSymlinkLoop
	}
	return SkipUnreadable
}

// StatInput stats a path found as input, following symlinks. It returns the
// file's (or folder's) info, fs.ErrNotExist when nothing is there (a glob
// match that went away, a mistyped argument), or a *SkippedInput.
func StatInput(path string) (fs.FileInfo, error) {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if _, lerr := os.Lstat(path); lerr == nil {
			// A dangling link: there is something, and it cannot be read.
			return nil, &SkippedInput{Path: path, Reason: SkipUnreadable, Err: err}
		}
		return nil, err
	case err != nil:
		return nil, &SkippedInput{Path: path, Reason: SkipReason(err), Err: err}
	case !fi.Mode().IsRegular() && !fi.IsDir():
		return nil, &SkippedInput{Path: path, Reason: SkipNotRegular, Err: fmt.Errorf("mode %v", fi.Mode().Type())}
	}
	return fi, nil
}

// WalkInputs walks the folder root and calls visit with every regular file
// below it, in lexical order, symlinks followed (a folder reached twice
// through links is walked once; a link to a folder above it is a loop).
// Hidden files and folders (".name") are left out. Paths that cannot be
// read are passed to skip and the walk goes on; only an error of visit
// stops it.
func WalkInputs(root string, visit func(path string) error, skip func(*SkippedInput)) error {
	seen := map[[2]uint64]bool{}
	var walk func(dir string, ancestors map[[2]uint64]bool) error
	walk = func(dir string, ancestors map[[2]uint64]bool) error {
		ents, err := os.ReadDir(dir)
		if err != nil {
			skip(&SkippedInput{Path: dir, Reason: SkipReason(err), Err: err})
			return nil
		}
		sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") {
				continue
			}
			p := filepath.Join(dir, e.Name())
			fi, err := StatInput(p)
			if err != nil {
				var si *SkippedInput
				if errors.As(err, &si) {
					skip(si)
				}
				continue // (gone since it was listed)
			}
			if !fi.IsDir() {
				if err := visit(p); err != nil {
					return err
				}
				continue
			}
			id, ok := dirID(fi)
			switch {
			case ok && ancestors[id]:
				skip(&SkippedInput{Path: p, Reason: SkipSymlinkLoop, Err: errors.New("a link to a folder it is in")})
				continue
			case ok && seen[id]:
				continue // reached before through another link
			}
			seen[id] = true
			ancestors[id] = true
			err = walk(p, ancestors)
			delete(ancestors, id)
			if err != nil {
				return err
			}
		}
		return nil
	}
	ancestors := map[[2]uint64]bool{}
	if fi, err := os.Stat(root); err == nil {
		if id, ok := dirID(fi); ok {
			seen[id], ancestors[id] = true, true
		}
	}
	return walk(root, ancestors)
}

func dirID(fi fs.FileInfo) ([2]uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return [2]uint64{}, false
	}
	return [2]uint64{uint64(st.Dev), st.Ino}, true
}
