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
)

// logprinter is the container's program: it prints numbered lines to
// stdout (captured by Docker's json-file driver, rotated by max-size) and
// writes a Ray-like session log inside the container, then idles.
const logprinter = `package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	os.MkdirAll("/tmp/ray/session_2025-01-01_00-00-00_1/logs", 0o755)
	os.Symlink("/tmp/ray/session_2025-01-01_00-00-00_1", "/tmp/ray/session_latest")
	f, _ := os.Create("/tmp/ray/session_2025-01-01_00-00-00_1/logs/raylet.out")
	for i := 0; i < 20000; i++ {
		fmt.Printf("d line %07d INFO something happened here\n", i)
		if i%1000 == 0 {
			fmt.Fprintf(f, "ray line %07d INFO something happened here\n", i/1000)
		}
		if i%100 == 0 {
			time.Sleep(20 * time.Millisecond) // ~4 s, a rotation every ~0.5 s
		}
	}
	f.Close()
	time.Sleep(time.Hour)
}
`

// Docker discovery against the real engine: a FROM scratch image holding a
// static Go program, run with max-size so Docker rotates its json-file log
// while the shipper follows it; every line arrives, labelled with the
// container name, and the session log inside the container is shipped too.
func TestDockerDiscovery(t *testing.T) {
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("no Docker engine here (docker info: %v: %.200s)", err, out)
	}
	root := "/var/lib/docker"
	if _, err := os.Stat(filepath.Join(root, "containers")); err != nil {
		t.Skipf("Docker data root %s not readable: %v", root, err)
	}
	dir := t.TempDir()
	tag := buildImage(t, logprinter)

	s := testutil.RunJetStreamServer(t)
	name := fmt.Sprintf("faultline-test-%d", os.Getpid())
	// A pattern, as users give one, kept to this run's container by its
	// label: the engine is shared, and another run's faultline-test-*
	// container was tailed too.
	startShipper(t, shipperArgs(s.ClientURL(), "spark-1", filepath.Join(dir, "state"),
		"--container", "faultline-test-*", "--container-label", "faultline.test="+name, "--docker-root", root, "--log-level", "info")...)
	out, err := exec.Command("docker", "run", "-d", "--name", name, "--label", "faultline.test="+name, "--log-driver", "json-file",
		"--log-opt", "max-size=200k", "--log-opt", "max-file=5", tag).CombinedOutput()
	if err != nil {
		t.Fatalf("docker run: %v\n%s", err, out)
	}
	id := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })

	var c *contents
	testutil.CheckFor(t, 90*time.Second, 500*time.Millisecond, func() error {
		c = readStream(t, s.ClientURL())
		if m := missing(c, "d", 20000); len(m) > 0 {
			return fmt.Errorf("%d container lines missing, first %q", len(m), m[0])
		}
		return nil
	})
	rotated, _ := filepath.Glob(filepath.Join(root, "containers", id, id+"-json.log.*"))
	if len(rotated) == 0 {
		t.Errorf("Docker did not rotate the log: the test did not exercise max-size")
	}
	t.Logf("Docker rotated files: %d", len(rotated))
	for _, r := range c.records {
		if strings.HasPrefix(r.Text, "d line") && (r.Container != name || r.Stream != "stdout") {
			t.Fatalf("record without the container label: %+v", r)
		}
	}
	if c.dups() != 0 {
		t.Errorf("%d duplicates", c.dups())
	}
	// The Ray session log inside the container, through its root file system.
	testutil.CheckFor(t, 20*time.Second, 500*time.Millisecond, func() error {
		c = readStream(t, s.ClientURL())
		if m := missing(c, "ray", 20); len(m) > 0 {
			return fmt.Errorf("%d session log lines missing, first %q", len(m), m[0])
		}
		return nil
	})
	for _, r := range c.records {
		if strings.HasPrefix(r.Text, "ray line") && !strings.HasPrefix(r.File, "/tmp/ray/") {
			t.Fatalf("session log record with a host path: %+v", r)
		}
	}
}
