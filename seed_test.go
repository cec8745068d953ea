package faultline

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// The embedded seed is the seed on disk, file for file and byte for byte.
func TestSeedFailedIsTheSeed(t *testing.T) {
	dir := filepath.Join("testdata", "logs", "seed", "failed")
	n := 0
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		want, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		got, err := fs.ReadFile(SeedFailed(), filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			t.Errorf("embedded %s differs from the file", rel)
		}
		n++
		return nil
	})
	if err != nil || n == 0 {
		t.Fatalf("%d files compared: %v", n, err)
	}
}
