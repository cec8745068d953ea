package testutil

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// Disk is a small file system of its own (a tmpfs) mounted for a test: the
// disk-full tests fill it, watch a store fail, and give the space back.
type Disk struct {
	Dir    string
	filler string
}

// SmallDisk mounts a tmpfs of size bytes at dir (made if missing) and
// unmounts it when the test ends. Mounting needs root (CAP_SYS_ADMIN), which
// the development machine and CI have; elsewhere the test is skipped, saying
// why.
func SmallDisk(t testing.TB, dir string, size int64) *Disk {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size="+strconv.FormatInt(size, 10)); err != nil {
		if errors.Is(err, syscall.EPERM) {
			t.Skipf("mounting a tmpfs at %s needs root (CAP_SYS_ADMIN): %v", dir, err)
		}
		t.Fatalf("mount tmpfs at %s: %v", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return &Disk{Dir: dir, filler: filepath.Join(dir, ".filler")}
}

// Available is the space left, in bytes.
func (d *Disk) Available(t testing.TB) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(d.Dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// Fill writes a file that leaves about free bytes of the disk free (0: none).
func (d *Disk) Fill(t testing.TB, free int64) {
	t.Helper()
	f, err := os.OpenFile(d.filler, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		n := d.Available(t) - free
		if n <= 0 {
			return
		}
		if _, err := f.Write(buf[:min(n, int64(len(buf)))]); err != nil {
			if errors.Is(err, syscall.ENOSPC) {
				return
			}
			t.Fatal(err)
		}
	}
}

// Free removes what Fill wrote: the space comes back.
func (d *Disk) Free(t testing.TB) {
	t.Helper()
	if err := os.Remove(d.filler); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
}
