package server

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/rule"
)

// startShipperProc runs a shipper process; it is killed when the test ends
// and its stderr is shown if the test failed.
func startShipperProc(t *testing.T, bin string, args ...string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr := &testutil.Buffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if t.Failed() {
			t.Logf("shipper %v stderr:\n%s", args, stderr)
		}
	})
}

// seedLines holds the lines of one seed file and where they are appended.
type seedLines struct {
	dst   string
	lines []string
}

// readSeedNode reads every file of a seed node folder, with its path
// (name and subfolder kept) under dst.
func readSeedNode(t *testing.T, src, dst string) []*seedLines {
	t.Helper()
	var out []*seedLines
	err := filepath.WalkDir(src, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		s := &seedLines{dst: filepath.Join(dst, rel)}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			s.lines = append(s.lines, sc.Text())
		}
		out = append(out, s)
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestEndToEndProcesses: the acceptance test of issue 5 with real
// processes. The analyzer binary runs `serve` with its embedded NATS, two
// shipper binaries (spark-1, spark-2) tail files that the test appends the
// seed scenario to, line by line; the ray-node-ip-mismatch finding arrives
// on faultline.findings.>, at a webhook server and on GET /api/findings.
func TestEndToEndProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the analyzer and shipper binaries")
	}
	start := time.Now()
	analyzer := buildBin(t, "analyzer")
	shipperBin := buildBin(t, "shipper")
	t.Logf("built binaries in %v", time.Since(start).Round(time.Millisecond))

	var hookMu sync.Mutex
	var hooks []payload
	hookSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var p payload
		if err := json.Unmarshal(b, &p); err != nil || p.Text == "" {
			t.Errorf("webhook body %s: %v (text %q)", b, err, p.Text)
			return
		}
		hookMu.Lock()
		hooks = append(hooks, p)
		hookMu.Unlock()
	}))
	t.Cleanup(hookSrv.Close)

	natsAddr, httpAddr := freePort(t), freePort(t)
	data := t.TempDir()
	startAnalyzer(t, analyzer, "--data-dir", data, "--nats-listen", natsAddr, "--http", httpAddr,
		"--webhook", hookSrv.URL, "--log-level", "info")
	url := embeddedURL(t, data, natsAddr)
	testutil.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		resp, err := http.Get("http://" + httpAddr + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("healthz: %s", resp.Status)
		}
		return nil
	})
	sub := subscribeFindings(t, url)

	live := t.TempDir()
	var files []*seedLines
	for _, node := range []string{"spark-1", "spark-2"} {
		dir := filepath.Join(live, node)
		node := readSeedNode(t, filepath.Join(seedDir, node), dir)
		for _, f := range node {
			// The files exist (empty) before the shippers start, as on a
			// node where the processes have just started.
			if err := os.MkdirAll(filepath.Dir(f.dst), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f.dst, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		files = append(files, node...)
	}
	for _, node := range []string{"spark-1", "spark-2"} {
		dir := filepath.Join(live, node)
		startShipperProc(t, shipperBin, "--nats", url, "--cluster", rule.DefaultCluster, "--node", node,
			"--path", filepath.Join(dir, "*.log"), "--path", filepath.Join(dir, "*", "*"),
			"--state-dir", t.TempDir(), "--log-level", "warn")
	}

	// Append the seed scenario line by line, interleaved over the files of
	// both nodes as if they were writing at the same time.
	appended := time.Now()
	total := 0
	for more := true; more; {
		more = false
		for _, f := range files {
			if len(f.lines) == 0 {
				continue
			}
			appendLine(t, f.dst, f.lines[0])
			f.lines = f.lines[1:]
			total++
			more = true
		}
	}
	t.Logf("appended %d lines to %d files", total, len(files))

	// A finding is announced as soon as its condition holds, with the facts
	// known then (one node's shipper may be a batch ahead of the other's),
	// and announced again as evidence arrives: what must hold is that the
	// latest version on each channel names both sides of the mismatch.
	check := func(f finding.Finding) error {
		var errs []string
		if f.Severity != finding.Critical || f.Confidence != "high" {
			errs = append(errs, fmt.Sprintf("severity %s confidence %s", f.Severity, f.Confidence))
		}
		if !slices.Contains(f.Facts["requested_node"], "192.168.200.12") {
			errs = append(errs, fmt.Sprintf("requested_node %v lacks 192.168.200.12", f.Facts["requested_node"]))
		}
		if !slices.Contains(f.Facts["registered_ip"], "10.1.230.180") {
			errs = append(errs, fmt.Sprintf("registered_ip %v lacks 10.1.230.180", f.Facts["registered_ip"]))
		}
		for _, ip := range []string{"192.168.200.12", "10.1.230.180"} {
			if !strings.Contains(f.Summary, ip) {
				errs = append(errs, fmt.Sprintf("summary does not name %s: %s", ip, f.Summary))
			}
		}
		if len(errs) > 0 {
			return errors.New(strings.Join(errs, "; "))
		}
		return nil
	}
	converge := func(where string, get func() []finding.Finding) finding.Finding {
		t.Helper()
		var last finding.Finding
		testutil.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
			found := false
			for _, f := range get() {
				if f.Rule == "ray-node-ip-mismatch" && f.Confidence == "high" {
					last, found = f, true // the latest version
				}
			}
			if !found {
				return fmt.Errorf("%s: no ray-node-ip-mismatch finding yet", where)
			}
			if err := check(last); err != nil {
				return fmt.Errorf("%s: %w", where, err)
			}
			return nil
		})
		return last
	}

	first := waitFinding(t, sub.all, "ray-node-ip-mismatch", "high")
	t.Logf("finding on NATS %v after the first append (facts then: %v)", time.Since(appended).Round(time.Millisecond), first.Facts["registered_ip"])
	converge("NATS", sub.all)

	var text string
	converge("webhook", func() []finding.Finding {
		hookMu.Lock()
		defer hookMu.Unlock()
		var fs []finding.Finding
		for _, p := range hooks {
			if p.Finding.Rule == "ray-node-ip-mismatch" && p.Finding.Confidence == "high" {
				text = p.Text
			}
			fs = append(fs, p.Finding)
		}
		return fs
	})
	for _, ip := range []string{"192.168.200.12", "10.1.230.180"} {
		if !strings.Contains(text, ip) {
			t.Errorf("webhook text does not name %s:\n%s", ip, text)
		}
	}

	f := converge("GET /api/findings", func() []finding.Finding { return getFindings(t, httpAddr) })
	if !slices.Contains(f.Nodes, "spark-1") {
		t.Errorf("GET /api/findings: nodes %v lack spark-1", f.Nodes)
	}
}
