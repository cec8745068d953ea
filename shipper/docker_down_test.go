package shipper_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/shipper"
)

// phasedPrinter prints phase-1 lines, waits for SIGUSR1, prints phase-2
// lines at once (Docker rotates its json-file log several times), then
// idles.
const phasedPrinter = `package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	go1 := make(chan os.Signal, 1)
	signal.Notify(go1, syscall.SIGUSR1)
	for i := 0; i < %d; i++ {
		fmt.Printf("p1 line %%07d INFO something happened here\n", i)
	}
	<-go1
	for i := 0; i < %d; i++ {
		fmt.Printf("p2 line %%07d INFO something happened here\n", i)
	}
	time.Sleep(time.Hour)
}
`

// buildImage builds a FROM scratch image of a static Go program.
func buildImage(t *testing.T, program string) string {
	t.Helper()
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.go"), []byte(program), 0o644)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module printer\n\ngo 1.22\n"), 0o644)
	build := exec.Command("go", "build", "-o", "printer", ".")
	build.Dir = dir
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build printer: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte("FROM scratch\nCOPY printer /printer\nENTRYPOINT [\"/printer\"]\n"), 0o644)
	tag := fmt.Sprintf("faultline-printer:%d-%d", os.Getpid(), time.Now().UnixNano())
	if out, err := exec.Command("docker", "build", "-q", "-t", tag, dir).CombinedOutput(); err != nil {
		t.Fatalf("docker build: %v\n%s", err, out)
	}
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", tag).Run() })
	return tag
}

// A container with max-size=100k, max-file=5 writes while the shipper is
// down and Docker rotates its log 4 times: the file being read is now
// -json.log.4 and three rotated files were never seen. All are read on
// restart; nothing lost, nothing doubled.
func TestDockerRotationsWhileDown(t *testing.T) {
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine here (docker info: %v: %.200s)", err, out)
	}
	root := "/var/lib/docker"
	if _, err := os.Stat(filepath.Join(root, "containers")); err != nil {
		t.Skipf("Docker data root %s not readable: %v", root, err)
	}
	// A json-file line of this program is ~117 bytes: phase 1 fills half a
	// file, phase 2 takes the log through exactly 4 rotations (of 5 files
	// kept, so none is deleted).
	const p1, p2 = 400, 3400
	tag := buildImage(t, fmt.Sprintf(phasedPrinter, p1, p2))
	s := testutil.RunJetStreamServer(t)
	name := fmt.Sprintf("faultline-down-%d", os.Getpid())
	cfg := shipper.Config{Containers: []string{name}, DockerRoot: root,
		NATS: shipper.NATSOptions{URL: s.ClientURL()}, StateDir: t.TempDir()}
	stop := runInProcess(t, cfg)
	out, err := exec.Command("docker", "run", "-d", "--name", name, "--log-driver", "json-file",
		"--log-opt", "max-size=100k", "--log-opt", "max-file=5", tag).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
	waitLines(t, s.ClientURL(), 60*time.Second, map[string]int{"p1": p1})
	stop()

	if out, err := exec.Command("docker", "kill", "--signal", "USR1", name).CombinedOutput(); err != nil {
		t.Fatalf("docker kill -s USR1: %v\n%s", err, out)
	}
	logPath := filepath.Join(root, "containers", id, id+"-json.log")
	last := fmt.Sprintf("p2 line %07d", p2-1)
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		b, err := os.ReadFile(logPath)
		if err != nil || !strings.Contains(string(b), last) {
			return fmt.Errorf("the container has not written its last line yet (%v)", err)
		}
		return nil
	})
	rotated, _ := filepath.Glob(logPath + ".*")
	if len(rotated) != 4 {
		t.Fatalf("Docker rotated %d times while the shipper was down, want 4: %v", len(rotated), rotated)
	}

	runInProcess(t, cfg)
	c := waitLines(t, s.ClientURL(), 60*time.Second, map[string]int{"p1": p1, "p2": p2})
	if c.dups() != 0 {
		t.Errorf("%d records stored twice", c.dups())
	}
	if n := len(c.records); n != p1+p2 {
		t.Errorf("%d records in the stream, want %d", n, p1+p2)
	}
}
