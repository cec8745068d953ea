package shipper

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A rotated file read to its end long ago (logrotate keeps weekly files for
// a year) keeps its entry while it is on disk: once pruned, it would be read
// again as never seen.
func TestRotatedFileEntryIsKeptWhileOnDisk(t *testing.T) {
	dir := t.TempDir()
	live := filepath.Join(dir, "worker.log")
	os.WriteFile(live, []byte("live line\n"), 0o644)
	old := live + ".7"
	os.WriteFile(old, []byte("old line 1\nold line 2\n"), 0o644)
	f, _ := os.Open(old)
	fi, _ := f.Stat()
	fp, err := fingerprint(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	key := fileKey(statDevIno(fi), fp)
	store, err := OpenStore(filepath.Join(dir, "state"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	store.files[key] = Entry{Path: old, Offset: fi.Size(), Updated: time.Now().Add(-29 * 24 * time.Hour)}
	cfg := Config{}
	cfg.Defaults()
	sh := &Shipper{cfg: cfg, log: cfg.Log, metrics: cfg.Metrics, store: store, inodes: map[devIno]string{}, once: map[string]bool{}, fds: newFDSlots(8)}
	sh.scanRotated(context.Background(), source{path: live, display: live}, time.Now())
	e, ok := store.Get(key)
	if !ok || time.Since(e.Updated) > time.Hour {
		t.Fatalf("entry of %s not refreshed: %+v", old, e)
	}
	if e.Offset != fi.Size() {
		t.Fatalf("offset %d, want %d (read to its end)", e.Offset, fi.Size())
	}
}
