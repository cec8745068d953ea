// Package alertmanagertest runs a real Alertmanager for tests: the binary
// built from the Alertmanager module that go.mod names (a tool of the
// module, as nats-server is built from its module for the compose tests),
// cached per version under the user's cache folder, started on a free
// port with the configuration the test gives, stopped when the test ends.
package alertmanagertest

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-openapi/strfmt"
	amclient "github.com/prometheus/alertmanager/api/v2/client"
)

// Module and Package are what is built.
const (
	Module  = "github.com/prometheus/alertmanager"
	Package = Module + "/cmd/alertmanager"
)

var buildMu sync.Mutex

// Binary returns the path of the Alertmanager binary, built once per
// version (go build of Package inside this module, so go.mod and go.sum
// pin and verify it) into the user's cache folder. Building takes about a
// minute and a half here the first time.
func Binary(t testing.TB) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", Module).Output()
	if err != nil {
		t.Fatalf("alertmanagertest: the Alertmanager module's version: %v", err)
	}
	version := strings.TrimSpace(string(out))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "faultline-test")
	bin := filepath.Join(dir, fmt.Sprintf("alertmanager-%s-%s-%s", version, runtime.GOOS, runtime.GOARCH))
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// One build at a time across processes: go test ./... runs the tests
	// of several packages that want it at once.
	lock, err := os.OpenFile(filepath.Join(dir, "alertmanager.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if _, err := os.Stat(bin); err == nil {
		return bin // built by another process meanwhile
	}
	tmp := fmt.Sprintf("%s.%d.tmp", bin, os.Getpid())
	start := time.Now()
	cmd := exec.Command("go", "build", "-trimpath", "-o", tmp, Package)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("alertmanagertest: go build %s: %v\n%s", Package, err, b)
	}
	// A rename: a test of another package building the same version at
	// the same time finds a whole binary or none.
	if err := os.Rename(tmp, bin); err != nil {
		t.Fatal(err)
	}
	t.Logf("alertmanagertest: built %s %s in %v", Package, version, time.Since(start).Round(time.Second))
	return bin
}

// Server is a running Alertmanager.
type Server struct {
	// URL is its base URL (http://127.0.0.1:PORT), what --alertmanager
	// takes.
	URL string
	// API is Alertmanager's own API v2 client on it.
	API *amclient.AlertmanagerAPI
}

var listening = regexp.MustCompile(`msg="Listening on" address=(\S+)`)

// Start runs an Alertmanager with the configuration file config (YAML) on
// a port the kernel picks, its data in a temporary folder, clustering off,
// and returns once it answers /-/ready. Its log goes to the test's.
func Start(t testing.TB, config string) *Server {
	t.Helper()
	return StartOn(t, config, "127.0.0.1:0")
}

// StartOn is Start listening on addr (host:port), for an Alertmanager that
// comes up where a client was already pointed.
func StartOn(t testing.TB, config, addr string) *Server {
	t.Helper()
	bin := Binary(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "alertmanager.yml")
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config.file="+conf, "--storage.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--cluster.listen-address=", "--log.level=info")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("alertmanagertest: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-done
		cmd.Wait()
	})
	bound := make(chan string, 1)
	go func() {
		defer close(done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			t.Log("alertmanager: " + line)
			if m := listening.FindStringSubmatch(line); m != nil {
				select {
				case bound <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	var a string
	select {
	case a = <-bound:
	case <-time.After(30 * time.Second):
		t.Fatal("alertmanagertest: Alertmanager did not say where it listens within 30s")
	}
	s := &Server{URL: "http://" + a,
		API: amclient.NewHTTPClientWithConfig(strfmt.Default, amclient.DefaultTransportConfig().WithHost(a))}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("alertmanagertest: not ready after 30s: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
