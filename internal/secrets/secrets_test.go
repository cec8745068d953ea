package secrets

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("  from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAULTLINE_TEST_TOKEN", "from-env")
	for _, tt := range []struct {
		value, file, want, err string
	}{
		{value: "from-flag", want: "from-flag"},
		{file: file, want: "from-file"},
		{want: "from-env"},
		{value: "x", file: file, err: "--token and --token-file are both set"},
		{file: filepath.Join(dir, "missing"), err: "--token-file: open"},
		{file: empty, err: "the file is empty"},
	} {
		got, err := Resolve("token", tt.value, tt.file, "FAULTLINE_TEST_TOKEN")
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Resolve(%q, %q): %v, want an error containing %q", tt.value, tt.file, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q", tt.value, tt.file, got, err, tt.want)
		}
	}
}
