package version

import (
	"runtime"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	i := Info{Version: "v1.2.3", Revision: "0123456789abcdef", Time: "2026-12-01T20:00:00Z", Modified: true, Go: "go1.26"}
	if got, want := i.String(), "v1.2.3 (0123456789ab 2026-12-01T20:00:00Z, modified) go1.26"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got, want := (Info{Version: "(devel)", Go: "go1.26"}).String(), "(devel) go1.26"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestGet(t *testing.T) {
	i := Get()
	if i.Go != runtime.Version() || i.Version == "" {
		t.Errorf("Get() = %+v", i)
	}
	Version = "v9.9.9"
	defer func() { Version = "" }()
	if got := Get().String(); !strings.HasPrefix(got, "v9.9.9") {
		t.Errorf("with Version set at link time: %q", got)
	}
}
