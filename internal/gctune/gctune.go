// Package gctune sets the garbage collector for the bulk commands
// (diagnose, ingest): their live heap is small and does not grow with the
// input, while they allocate heavily and briefly, so collecting at several
// times the live heap instead of twice buys 5-15% of the CPU. GOGC and
// GOMEMLIMIT, when the user sets them, win.
package gctune

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// BulkLoad collects when the heap has grown by percent (GOGC) and, when
// limit > 0, keeps the heap under that soft limit (bytes). It says which
// setting is in effect.
func BulkLoad(percent int, limit int64) string {
	if limit > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(limit)
	}
	if v := os.Getenv("GOGC"); v != "" {
		return "GOGC=" + v + " (user)"
	}
	debug.SetGCPercent(percent)
	if limit > 0 {
		return fmt.Sprintf("GOGC %d, soft limit %d MiB (gctune.BulkLoad)", percent, limit>>20)
	}
	return fmt.Sprintf("GOGC %d (gctune.BulkLoad)", percent)
}

// Indexing keeps ~100-150 MB live (blocks being filled, batches, segments
// awaiting persistence) and allocates several GB a minute: collecting at
// 10x saves CPU, and the soft limit keeps the peak under 512 MB (ingest of
// 200k lines on 2 cores: 0.43 GB peak RSS, where 2 GiB let it reach 1 GB
// for no measurable CPU gain).
const (
	IndexPercent = 1000
	IndexLimit   = 400 << 20
)

// FollowLive keeps a soft memory limit of at least floor bytes and at
// least twice the live heap, checked every interval until ctx ends. A soft
// limit below the live heap makes the collector run without pause (half
// the CPU): the shipper's live heap is small with a few files and grows
// with thousands followed. It does nothing when GOMEMLIMIT is set.
func FollowLive(ctx context.Context, floor int64, every time.Duration) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(floor)
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return
		}
		live := int64(sample[0].Value.Uint64())
		debug.SetMemoryLimit(max(floor, 2*live))
	}
}
