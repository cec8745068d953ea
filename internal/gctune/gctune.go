// Package gctune sets the garbage collector for the bulk commands
// (diagnose, ingest): their live heap is small and does not grow with the
// input, while they allocate heavily and briefly, so collecting at several
// times the live heap instead of twice buys 5-15% of the CPU. GOGC and
// GOMEMLIMIT, when the user sets them, win.
package gctune

import (
	"fmt"
	"os"
	"runtime/debug"
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
