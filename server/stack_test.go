package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
)

// seedFeeder is the program of the feed container: it prints the seed
// spark-1 container log (a Docker json-file log, embedded) to stdout and
// stderr as the vLLM container wrote it, so that Docker's json-file driver
// writes it again under the data root the compose shipper tails; then idles.
const seedFeeder = `package main

import (
	"bufio"
	"bytes"
	_ "embed"
	"encoding/json"
	"os"
	"time"
)

//go:embed seed.log
var seed []byte

func main() {
	if m := os.Getenv("FEED_MARK"); m != "" {
		// A container that is not to be shipped: one line of its own.
		os.Stdout.WriteString(m + "\n")
		time.Sleep(time.Hour)
	}
	sc := bufio.NewScanner(bytes.NewReader(seed))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l struct{ Log, Stream string }
		if json.Unmarshal(sc.Bytes(), &l) != nil {
			continue
		}
		out := os.Stdout
		if l.Stream == "stderr" {
			out = os.Stderr
		}
		out.WriteString(l.Log)
	}
	time.Sleep(time.Hour)
}
`

// composeCmd returns the compose command line of this machine: `docker
// compose` (v2) or `docker-compose` (v1), or nil.
func composeCmd() []string {
	if exec.Command("docker", "compose", "version").Run() == nil {
		return []string{"docker", "compose"}
	}
	if _, err := exec.LookPath("docker-compose"); err == nil {
		return []string{"docker-compose"}
	}
	return nil
}

// runCmd runs a command (in dir if set, with extra environment), failing the
// test with its output on error.
func runCmd(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	t.Logf("%s %s (%v)", name, strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
	return out.String()
}

func freeTCPPort(t *testing.T) string {
	t.Helper()
	_, port, _ := net.SplitHostPort(freePort(t))
	return port
}

// TestComposeStackUp builds the image and runs docker-compose.yml with the
// compose tool of this machine (`docker compose`, else `docker-compose`):
// the analyzer, whose embedded NATS serves the shipper, and the shipper
// tailing Docker's data root; no image is pulled. A feed container labelled
// faultline.ship (with this run's value) prints the seed spark-1 vLLM container log; the shipper
// discovers its json-file log and the analyzer raises ray-node-ip-mismatch,
// seen on GET /api/findings and on the NATS findings subject, on the node
// named after the host (FAULTLINE_NODE unset). A container without the
// label is not shipped. NATS and HTTP listen on 127.0.0.1 only, with no
// warning that they do not, and NATS wants FAULTLINE_TOKEN. Skips only
// where no Docker engine runs.
func TestComposeStackUp(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs the compose stack")
	}
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("skipped: no docker command on this machine (the compose stack needs a Docker engine)")
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("skipped: no Docker engine answers here (docker info: %v: %.300s)", err, out)
	}
	compose := composeCmd()
	if compose == nil {
		// With an engine at hand the stack must be tested: .ci/run installs
		// docker-compose where neither tool is there.
		t.Fatal("a Docker engine runs, but neither `docker compose` (v2) nor docker-compose (v1) is installed")
	}
	t.Logf("compose tool: %s", strings.Join(compose, " "))
	dockerRoot := strings.TrimSpace(runCmd(t, "", nil, "docker", "info", "-f", "{{.DockerRootDir}}"))
	begin := time.Now()
	id := strconv.Itoa(os.Getpid())
	project := "faultlinestack" + id
	image := "faultline:stacktest-" + id

	// The faultline image, as the Dockerfile header says: static binaries
	// built on the host, then COPY into FROM scratch. The build context is a
	// temporary folder, so the repository's bin/ is not touched.
	ctx := t.TempDir()
	runCmd(t, "..", []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-o", filepath.Join(ctx, "bin")+"/", "./cmd/analyzer", "./cmd/shipper")
	df, err := os.ReadFile("../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(ctx, "Dockerfile"), string(df))
	runCmd(t, "", nil, "docker", "build", "-q", "-t", image, ctx)
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", image).Run() })

	// The feed container's image.
	feedCtx := t.TempDir()
	writeFile(t, filepath.Join(feedCtx, "main.go"), seedFeeder)
	writeFile(t, filepath.Join(feedCtx, "go.mod"), "module seedfeeder\n\ngo 1.22\n")
	seed, err := os.ReadFile(filepath.Join(seedDir, "spark-1", "vllm-qwen35-json.log"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(feedCtx, "seed.log"), string(seed))
	runCmd(t, feedCtx, []string{"CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off"}, "go", "build", "-o", "feeder", ".")
	writeFile(t, filepath.Join(feedCtx, "Dockerfile"), "FROM scratch\nCOPY feeder /feeder\nENTRYPOINT [\"/feeder\"]\n")
	feedImage := "faultline-seedfeed:" + id
	runCmd(t, "", nil, "docker", "build", "-q", "-t", feedImage, feedCtx)
	t.Cleanup(func() { exec.Command("docker", "rmi", "-f", feedImage).Run() })
	t.Logf("images built in %v", time.Since(begin).Round(time.Millisecond))

	// The stack, under a project name of its own and on free host ports.
	natsPort, httpPort := freeTCPPort(t), freeTCPPort(t)
	token := "stack-test-" + id
	env := []string{
		"FAULTLINE_TOKEN=" + token,
		"FAULTLINE_IMAGE=" + image,
		"FAULTLINE_NATS_PORT=" + natsPort,
		"FAULTLINE_HTTP_PORT=" + httpPort,
		"FAULTLINE_DOCKER_ROOT=" + dockerRoot,
		// The label with this run's value: the engine is shared, and
		// another run's labelled feed must not be shipped here.
		"FAULTLINE_CONTAINER_LABEL=faultline.ship=" + project,
	}
	composeArgs := func(args ...string) []string {
		return append(append(slices.Clone(compose[1:]), "-f", "../docker-compose.yml", "-p", project), args...)
	}
	t.Cleanup(func() {
		if t.Failed() {
			cmd := exec.Command(compose[0], composeArgs("logs", "--no-color", "--tail", "60")...)
			cmd.Env = append(os.Environ(), env...) // compose refuses the file without FAULTLINE_TOKEN
			out, _ := cmd.CombinedOutput()
			t.Logf("stack logs:\n%s", out)
		}
		cmd := exec.Command(compose[0], composeArgs("down", "-v", "--remove-orphans", "-t", "5")...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Logf("compose down: %v\n%s", err, out)
		}
	})
	runCmd(t, "", env, compose[0], composeArgs("up", "-d", "--no-build")...)

	httpAddr := "127.0.0.1:" + httpPort
	testutil.CheckFor(t, 60*time.Second, 250*time.Millisecond, func() error {
		resp, err := httpGet("http://" + httpAddr + "/healthz")
		if err != nil {
			return err
		}
		if resp != http.StatusOK {
			return fmt.Errorf("healthz: %d", resp)
		}
		return nil
	})
	// NATS listens on loopback only, and takes only the token.
	if ip := hostAddress(); ip != "" {
		if c, err := net.DialTimeout("tcp", net.JoinHostPort(ip, natsPort), 2*time.Second); err == nil {
			c.Close()
			t.Errorf("the stack's NATS answers on %s, beyond loopback", ip)
		}
	}
	if nc, err := nats.Connect("nats://127.0.0.1:"+natsPort, nats.Timeout(5*time.Second)); err == nil {
		nc.Close()
		t.Errorf("the stack's NATS accepted a client without the token")
	}
	sub := subscribeFindings(t, "nats://"+token+"@127.0.0.1:"+natsPort)

	// First a container the shipper must leave alone, then the labelled one.
	mark := "not-for-faultline-" + id
	other := project + "-unlabelled"
	runCmd(t, "", nil, "docker", "run", "-d", "--name", other, "--log-driver", "json-file", "-e", "FEED_MARK="+mark, feedImage)
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", other).Run() })
	feed := project + "-seedfeed"
	runCmd(t, "", nil, "docker", "run", "-d", "--name", feed, "--label", "faultline.ship="+project, "--log-driver", "json-file", feedImage)
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", feed).Run() })

	var f finding.Finding
	testutil.CheckFor(t, 3*time.Minute, 500*time.Millisecond, func() error {
		for _, g := range getFindings(t, httpAddr) {
			if g.Rule == "ray-node-ip-mismatch" && g.Confidence == "high" {
				f = g
				return nil
			}
		}
		return fmt.Errorf("no high ray-node-ip-mismatch finding on GET /api/findings yet")
	})
	t.Logf("finding on the stack's /api/findings %v after the test began", time.Since(begin).Round(time.Millisecond))
	host, _ := os.Hostname()
	if f.Severity != finding.Critical || !slices.Contains(f.Facts["requested_node"], "192.168.200.12") ||
		!slices.Contains(f.Facts["registered_ip"], "10.1.230.180") || !slices.Equal(f.Nodes, []string{host}) {
		t.Errorf("finding: severity %s nodes %v (want the host's name %q) facts %v", f.Severity, f.Nodes, host, f.Facts)
	}
	waitFinding(t, sub.all, "ray-node-ip-mismatch", "high")
	if n := stackHits(t, httpAddr, `"`+mark+`"`); n != 0 {
		t.Errorf("the unlabelled container's line was shipped: %d hits", n)
	}
	logs := runCmd(t, "", env, compose[0], composeArgs("logs", "--no-color", "analyzer")...)
	if !strings.Contains(logs, "embedded nats") {
		t.Errorf("no analyzer log to read:\n%s", logs)
	} else if strings.Contains(logs, "beyond this host") {
		t.Errorf("the analyzer warns that it listens beyond the host:\n%s", logs)
	}
}

// hostAddress is a non-loopback IPv4 address of this host, "" if none.
func hostAddress() string {
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

// stackHits is the number of hits of query q on serve's search API.
func stackHits(t *testing.T, httpAddr, q string) int {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + httpAddr + "/api/search?size=0&q=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct{ Total int }
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("search %q: %d %v", q, resp.StatusCode, err)
	}
	return r.Total
}

// httpGet returns the status code of a GET.
func httpGet(url string) (int, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}
