package index

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"
)

// Writes that fail are retried, not dropped: a full disk (or any write
// error) stalls the shard's writer, which backs off and tries again, and
// Add blocks behind it. The condition is logged when it starts (again only
// after stallLogEvery) and when writes resume; Health and Stats.Stalled
// say it meanwhile.

// ErrDiskFull is the stall of a disk with less free space than
// Options.DiskReserve.
var ErrDiskFull = errors.New("disk full")

// checkSpace fails, before anything is written, when the data directory's
// file system has less free than need plus a reserve: Bleve must not meet
// a full disk half-way through a batch (scorch then leaves the batch's
// segment half-closed, and its next use panics) or a merge, which writes
// its new segment before it removes the old ones. The reserve is
// Options.DiskReserve or half the largest shard's Bleve files, whichever
// is more.
func (x *Index) checkSpace(need int64) error {
	if x.opts.DiskReserve < 0 {
		return nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(x.dir, &st); err != nil {
		return nil // cannot tell: let the write say
	}
	free := int64(st.Bavail) * int64(st.Bsize)
	want := max(x.opts.DiskReserve, x.bleveSize()/2) + need
	if free < want {
		return fmt.Errorf("%w: %d MiB free on %s, writes wait for %d MiB", ErrDiskFull, free>>20, x.dir, (want+(1<<20)-1)>>20)
	}
	return nil
}

// bleveSize is the size of the largest shard's Bleve files, read at most
// every few seconds.
func (x *Index) bleveSize() int64 {
	x.stallMu.Lock()
	defer x.stallMu.Unlock()
	if time.Since(x.sizeAt) < 5*time.Second {
		return x.size
	}
	var largest int64
	for _, s := range x.shards {
		var n int64
		filepath.WalkDir(s.path, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					n += fi.Size()
				}
			}
			return nil
		})
		largest = max(largest, n)
	}
	x.size, x.sizeAt = largest, time.Now()
	return largest
}

// stallLogEvery is how often a stall that comes back is logged again: a
// disk at its limit stalls and resumes with every merge that frees space.
const stallLogEvery = 10 * time.Minute

func (x *Index) stalled(shard int, err error) {
	x.stallMu.Lock()
	defer x.stallMu.Unlock()
	if len(x.stalls) == 0 {
		x.stallAt = time.Now()
		if x.loggedAt.IsZero() || time.Since(x.loggedAt) > stallLogEvery {
			x.loggedAt = x.stallAt
			var writer any = shard
			if shard == findingsShard {
				writer = "findings"
			}
			x.log.Error("index writes are failing; retrying until they succeed, nothing is dropped", "shard", writer, "err", err)
		}
	}
	x.stalls[shard] = err
}

func (x *Index) resumed(shard int) {
	x.stallMu.Lock()
	defer x.stallMu.Unlock()
	if _, ok := x.stalls[shard]; !ok {
		return
	}
	delete(x.stalls, shard)
	if len(x.stalls) == 0 {
		x.log.Info("index writes resumed", "stalled", time.Since(x.stallAt).Round(time.Millisecond))
	}
}

// stallReason says why writes wait, or "".
func (x *Index) stallReason() string {
	x.stallMu.Lock()
	defer x.stallMu.Unlock()
	if len(x.stalls) == 0 {
		return ""
	}
	var msgs []string
	for _, err := range x.stalls {
		msgs = append(msgs, err.Error())
	}
	slices.Sort(msgs)
	msgs = slices.Compact(msgs)
	return fmt.Sprintf("index writes stalled for %v: %s", time.Since(x.stallAt).Round(time.Second), strings.Join(msgs, "; "))
}

// Health is nil while the index takes writes, else why it does not (they
// are being retried).
func (x *Index) Health() error {
	if r := x.stallReason(); r != "" {
		return errors.New(r)
	}
	return nil
}
