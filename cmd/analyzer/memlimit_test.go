package main

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// --memory-limit takes GOMEMLIMIT's sizes (and 0: none), refuses others,
// and GOMEMLIMIT in the environment wins over it.
func TestMemoryLimitFlag(t *testing.T) {
	for in, want := range map[string]int64{"1GiB": 1 << 30, "512MiB": 512 << 20, "64KiB": 64 << 10, "1048576B": 1 << 20, "4096": 4096, "0": 0} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("%q: %d, %v; want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"1G", "-1MiB", "lots", "1.5GiB", ""} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("%q: accepted as %d", in, b)
		}
	}
	var logs bytes.Buffer
	t.Setenv("GOMEMLIMIT", "300MiB")
	applyMemoryLimit(1<<30, slog.New(slog.NewTextHandler(&logs, nil)))
	if !strings.Contains(logs.String(), "limit=300MiB from=GOMEMLIMIT") {
		t.Errorf("with GOMEMLIMIT set: %q", logs.String())
	}
}
