package main

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/internal/gctune"
)

// defaultMemoryLimit is the soft limit of the Go heap of serve and ui. A
// query that would gather too much is refused or stopped (index/limits.go);
// this bounds the rest: many searches at once, big facets, the live
// indexing of serve. Past it the collector runs more often (at most half
// the CPU) instead of letting the heap grow until the kernel kills the
// process.
const defaultMemoryLimit = 1 << 30

// byteSize is a flag value in bytes written like GOMEMLIMIT: 1GiB, 512MiB,
// 64KiB, 1048576B or a plain number of bytes.
type byteSize int64

func (b *byteSize) String() string { return formatBytes(int64(*b)) }
func (b *byteSize) Type() string   { return "SIZE" }

func (b *byteSize) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func parseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	num, mult := s, int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			num, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mult {
		return 0, fmt.Errorf("%q: want a size such as 1GiB, 512MiB or 0", s)
	}
	return n * mult, nil
}

func formatBytes(n int64) string {
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.mult && n%u.mult == 0 {
			return strconv.FormatInt(n/u.mult, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10)
}

// memoryLimitFlag adds --memory-limit to fs.
func memoryLimitFlag(fs *pflag.FlagSet) *byteSize {
	v := byteSize(defaultMemoryLimit)
	fs.Var(&v, "memory-limit", "soft limit of the Go heap (1GiB, 512MiB; 0: none): near it the garbage collector works harder instead of the heap growing; GOMEMLIMIT in the environment wins")
	return &v
}

// applyMemoryLimit sets the soft memory limit of a long-running command
// (gctune.BulkLoad at the default GOGC: GOGC and GOMEMLIMIT, when set, win)
// and logs what holds.
func applyMemoryLimit(limit int64, log *slog.Logger) {
	if env := os.Getenv("GOMEMLIMIT"); env != "" {
		log.Info("memory limit", "limit", env, "from", "GOMEMLIMIT")
		return
	}
	if limit <= 0 {
		log.Info("memory limit", "limit", "none", "from", "--memory-limit")
		return
	}
	gctune.BulkLoad(100, limit)
	log.Info("memory limit", "limit", formatBytes(limit), "from", "--memory-limit")
}
