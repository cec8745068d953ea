package pipeline

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"github.com/faultline/faultline/parsers"
)

// expandSkips runs Expand and returns the files found (relative to root)
// and the reason of every path skipped, by path relative to root.
func expandSkips(t *testing.T, root string, inputs []Input) ([]string, map[string]string) {
	t.Helper()
	skips := map[string]string{}
	files, err := Expand(inputs, func(err error) {
		var s *parsers.SkippedInput
		if !errors.As(err, &s) {
			t.Errorf("warning %v: want a *parsers.SkippedInput", err)
			return
		}
		if !strings.Contains(err.Error(), s.Path) || !strings.Contains(err.Error(), s.Reason) {
			t.Errorf("warning %q names neither the path nor the reason", err)
		}
		rel, _ := filepath.Rel(root, s.Path)
		skips[rel] = s.Reason
	})
	if err != nil {
		t.Fatalf("Expand: %v", err)
	}
	var got []string
	for _, f := range files {
		rel, _ := filepath.Rel(root, f.Path)
		got = append(got, f.Node+":"+rel)
	}
	sort.Strings(got)
	return got, skips
}

// A symlink loop, a link to a folder above, a FIFO or a dangling link is
// skipped with a warning that names it, in a folder as given on the
// command line, and the rest is read: no layout aborts the diagnosis, none
// skips in silence. Links to files and folders are followed.
func TestExpandSkipsWithAWarning(t *testing.T) {
	root := t.TempDir()
	mk := func(p, content string) {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, p string) {
		if err := os.Symlink(target, filepath.Join(root, p)); err != nil {
			t.Fatal(err)
		}
	}
	mk("bundle/spark-1/a.log", "a\n")
	mk("bundle/spark-2/b.log", "b\n")
	mk("elsewhere/c.log", "c\n")
	link("loop.log", "bundle/spark-1/loop.log")
	link("..", "bundle/spark-1/up")
	link("../../elsewhere", "bundle/spark-2/more")
	link("gone.log", "bundle/spark-2/dangling.log")
	if err := syscall.Mkfifo(filepath.Join(root, "bundle/spark-2/fifo.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	link("self", "self")

	got, skips := expandSkips(t, root, []Input{{Path: filepath.Join(root, "bundle")}, {Node: "x", Path: filepath.Join(root, "self")}})
	if want := "spark-1:bundle/spark-1/a.log spark-2:bundle/spark-2/b.log spark-2:bundle/spark-2/more/c.log"; strings.Join(got, " ") != want {
		t.Errorf("files %v, want %s", got, want)
	}
	want := map[string]string{
		"bundle/spark-1/loop.log":     parsers.SkipSymlinkLoop,
		"bundle/spark-1/up":           parsers.SkipSymlinkLoop,
		"bundle/spark-2/dangling.log": parsers.SkipUnreadable,
		"bundle/spark-2/fifo.log":     parsers.SkipNotRegular,
		"self":                        parsers.SkipSymlinkLoop,
	}
	if len(skips) != len(want) {
		t.Errorf("skipped %v, want %v", skips, want)
	}
	for p, r := range want {
		if skips[p] != r {
			t.Errorf("%s: skipped as %q, want %q", p, skips[p], r)
		}
	}
	// What does not exist is still an error (a mistyped path), and so is a
	// folder in which nothing can be read.
	if _, err := Expand([]Input{{Path: filepath.Join(root, "nope")}}, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing input: %v", err)
	}
	os.MkdirAll(filepath.Join(root, "empty"), 0o755)
	link("loop2", "empty/loop2")
	if _, err := Expand([]Input{{Path: filepath.Join(root, "empty")}}, nil); err == nil || !strings.Contains(err.Error(), "1 skipped") {
		t.Errorf("folder with nothing readable: %v", err)
	}
}

// A folder that cannot be listed is skipped with a warning and the rest of
// the bundle is read. Root reads every folder, so as root the test runs
// itself again as nobody.
func TestExpandSkipsUnreadableFolders(t *testing.T) {
	if os.Getuid() == 0 {
		asNobody(t, "TestExpandSkipsUnreadableFolders")
		return
	}
	root := t.TempDir()
	for _, p := range []string{"bundle/spark-1/a.log", "bundle/spark-2/b.log"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte("x\n"), 0o644)
	}
	locked := filepath.Join(root, "bundle/spark-2")
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o755) })
	got, skips := expandSkips(t, root, []Input{{Path: filepath.Join(root, "bundle")}})
	if strings.Join(got, " ") != "spark-1:bundle/spark-1/a.log" || len(skips) != 1 || skips["bundle/spark-2"] != parsers.SkipUnreadable {
		t.Errorf("files %v, skipped %v: want spark-1's file read and spark-2 skipped as unreadable", got, skips)
	}
}

// asNobody runs the test named test in a copy of this test binary as user
// nobody, and fails t if it fails.
func asNobody(t *testing.T, test string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "asnobody")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755) // (t.TempDir's parent is root's alone)
	bin := filepath.Join(dir, "test.bin")
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	dst.Close()
	cmd := exec.Command(bin, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TMPDIR=/tmp", "HOME="+dir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("as nobody: %v\n%s", err, out)
	}
}

// A file given alone is a node named after it, and a rotated or compressed
// copy names the same node as the live file (vllm.log.1.gz was node
// vllm.log.1).
func TestNodeOfAFileGivenAlone(t *testing.T) {
	for _, c := range []struct{ file, node string }{
		{"vllm.log", "vllm"},
		{"vllm.log.1", "vllm"},
		{"vllm.log.1.gz", "vllm"},
		{"vllm.log.gz", "vllm"},
		{"spark-1.txt", "spark-1"},
		{"abc-json.log", "abc"},
		{"abc-json.log.3", "abc"},
		{"abc-json.log.3.gz", "abc"},
		{"monitor.log.12", "monitor"},
		{"raylet.out", "raylet"},
		{"paste", "paste"},
		{"10.1.230.180.log", "10.1.230.180"},
		{"10.1.230.180", "10.1.230.180"},
		{".log", "node"},
	} {
		p := filepath.Join(t.TempDir(), c.file)
		if err := os.WriteFile(p, []byte("line\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files, err := Expand([]Input{{Path: p}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != 1 || files[0].Node != c.node {
			t.Errorf("%s: files %+v, want one of node %q", c.file, files, c.node)
		}
	}
}
