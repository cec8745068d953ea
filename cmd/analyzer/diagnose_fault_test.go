package main

import (
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// writeNodeFiles writes n small log files under dir/spark-1 and dir/spark-2.
func writeNodeFiles(t *testing.T, dir string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		node := fmt.Sprintf("spark-%d", 1+i%2)
		os.MkdirAll(filepath.Join(dir, node), 0o755)
		line := fmt.Sprintf("2025-01-01 00:00:%02d INFO worker %d started\n", i%60, i)
		if err := os.WriteFile(filepath.Join(dir, node, fmt.Sprintf("w%05d.log", i)), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// With an open-files limit far below the number of files, every file is
// still read (the replay does not hold them all open), and nothing is
// skipped with only a warning.
func TestDiagnoseManyFilesUnderLowOpenFilesLimit(t *testing.T) {
	dir := t.TempDir()
	const files = 1200
	writeNodeFiles(t, dir, files)
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	low := old
	low.Cur = 256
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Skipf("cannot lower the open-files limit: %v", err)
	}
	out, errs, code := diagnose(t, dir)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	if code != 0 || errs != "" {
		t.Fatalf("exit %d, stderr:\n%.2000s", code, errs)
	}
	if want := fmt.Sprintf("%d files, %d lines", files, files); !strings.Contains(out, want) {
		t.Fatalf("output does not say %q:\n%.500s", want, out)
	}
}

// A file that cannot be read (a broken gzip rotation; without root, a file
// without read permission) makes diagnose exit 1 naming it, after the
// report of what it could read.
func TestDiagnoseUnreadableInputExits1(t *testing.T) {
	dir := t.TempDir()
	writeNodeFiles(t, dir, 4)
	bad := filepath.Join(dir, "spark-1", "raylet.out.1.gz")
	var b strings.Builder
	zw := gzip.NewWriter(&b)
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(zw, "2025-01-01 00:00:00 INFO line %d of a rotated file\n", i)
	}
	zw.Close()
	// Cut in the middle: a valid header, a body that ends early.
	if err := os.WriteFile(bad, []byte(b.String()[:b.Len()/2]), 0o644); err != nil {
		t.Fatal(err)
	}
	unreadable := ""
	if os.Geteuid() != 0 {
		unreadable = filepath.Join(dir, "spark-2", "secret.log")
		os.WriteFile(unreadable, []byte("2025-01-01 00:00:00 INFO x\n"), 0o000)
	}
	out, errs, code := diagnose(t, dir)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr:\n%s", code, errs)
	}
	for _, p := range []string{bad, unreadable} {
		if p != "" && !strings.Contains(errs, "error: "+p) {
			t.Errorf("stderr does not name %s:\n%s", p, errs)
		}
	}
	if !strings.Contains(errs, "incomplete") {
		t.Errorf("stderr does not say the diagnosis is incomplete:\n%s", errs)
	}
	if !strings.Contains(out, "Faultline diagnosis:") {
		t.Errorf("no report of what could be read:\n%s", out)
	}
}
