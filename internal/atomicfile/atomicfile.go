// Package atomicfile replaces files atomically and durably: a reader sees
// the old content or the new, never part of it, and after a crash the new
// content is there once WriteFile has returned. Everyone in the repository
// who replaces a file (shipper offsets, index metadata) goes through it.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile replaces path with data: it writes a temporary file beside it,
// fsyncs it, renames it over path and fsyncs the folder, so that the rename
// itself survives a power loss. perm applies to a newly created file (the
// temporary file is created 0600 and then given perm).
func WriteFile(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("write %s: sync folder: %w", path, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("write %s: sync folder: %w", path, err)
	}
	return nil
}
