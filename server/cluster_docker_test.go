package server

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/transport"
)

// composeService is the part of a service of `compose config` the cluster
// tests read. Ports come as "ip:host:container/proto" strings from Compose
// v1 and as maps from v2; command and entrypoint as lists from both.
type composeService struct {
	Image       string            `yaml:"image"`
	Command     []string          `yaml:"command"`
	Entrypoint  []string          `yaml:"entrypoint"`
	Environment map[string]string `yaml:"environment"`
	Ports       []any             `yaml:"ports"`
	Volumes     []any             `yaml:"volumes"`
}

// publishedPorts returns a service's published ports as host IP and
// container port.
func (s composeService) publishedPorts(t *testing.T) (out [][2]string) {
	t.Helper()
	for _, p := range s.Ports {
		switch p := p.(type) {
		case string: // 127.0.0.1:8080:8080/tcp
			p, _, _ = strings.Cut(p, "/")
			parts := strings.Split(p, ":")
			if len(parts) != 3 {
				t.Errorf("port %q does not name its host address", p)
				continue
			}
			out = append(out, [2]string{parts[0], parts[2]})
		case map[string]any:
			ip, _ := p["host_ip"].(string) // absent: all interfaces
			out = append(out, [2]string{ip, fmt.Sprint(p["target"])})
		default:
			t.Errorf("port %v: unexpected form %T", p, p)
		}
	}
	return out
}

// TestComposeClusterConfig validates docker-compose.cluster.yml with the
// compose tool of this machine: three NATS servers, two analyzers and two
// shippers, all from images this repository builds; FAULTLINE_TOKEN is
// required and on no command line; analyzers run partitioned on the three
// servers, each advertising its own name; HTTP is published on 127.0.0.1
// only, and NATS on 127.0.0.1 unless told otherwise.
func TestComposeClusterConfig(t *testing.T) {
	compose := composeCmd()
	if compose == nil {
		t.Skip("skipped: neither `docker compose` nor docker-compose is installed")
	}
	config := func(env ...string) (string, error) {
		cmd := exec.Command(compose[0], append(slices.Clone(compose[1:]), "-f", "../docker-compose.cluster.yml", "config")...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.Output()
		if ee, ok := err.(*exec.ExitError); ok {
			out = append(out, ee.Stderr...)
		}
		return string(out), err
	}
	out, err := config("FAULTLINE_TOKEN=")
	if err == nil || !strings.Contains(out, "set FAULTLINE_TOKEN") {
		t.Errorf("compose config without FAULTLINE_TOKEN: %v, want a refusal naming it:\n%s", err, out)
	}
	const token = "s3cret"
	out, err = config("FAULTLINE_TOKEN=" + token)
	if err != nil {
		t.Fatalf("compose config: %v\n%s", err, out)
	}
	var cfg struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(out), &cfg); err != nil {
		t.Fatalf("compose config output: %v\n%s", err, out)
	}
	var names []string
	for name := range cfg.Services {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{"analyzer1", "analyzer2", "nats1", "nats2", "nats3", "shipper1", "shipper2"}; !slices.Equal(names, want) {
		t.Fatalf("services %v, want %v", names, want)
	}
	const natsURLs = "nats://nats1:4222,nats://nats2:4222,nats://nats3:4222"
	for name, s := range cfg.Services {
		if !strings.HasPrefix(s.Image, "faultline") {
			t.Errorf("%s runs an image it does not build: %s", name, s.Image)
		}
		if s.Environment["FAULTLINE_TOKEN"] != token {
			t.Errorf("%s: FAULTLINE_TOKEN is %q in its environment", name, s.Environment["FAULTLINE_TOKEN"])
		}
		if args := strings.Join(append(s.Entrypoint, s.Command...), " "); strings.Contains(args, token) || strings.Contains(args, "--token") {
			t.Errorf("%s: the token is on a command line: %s", name, args)
		}
		for _, p := range s.publishedPorts(t) {
			if p[0] != "127.0.0.1" {
				t.Errorf("%s publishes port %s on %q, want 127.0.0.1", name, p[1], p[0])
			}
		}
		cmd := strings.Join(s.Command, " ")
		switch {
		case strings.HasPrefix(name, "nats"):
			if !strings.Contains(cmd, "-c /etc/nats/nats-server.conf") || !strings.Contains(cmd, "--name "+name) {
				t.Errorf("%s: command %q, want the shared config and its own name", name, cmd)
			}
			if !strings.Contains(fmt.Sprint(s.Volumes), "nats-cluster.conf:/etc/nats/nats-server.conf") {
				t.Errorf("%s does not mount docs/nats-cluster.conf: %v", name, s.Volumes)
			}
			for i := 1; i <= 3; i++ {
				if got, want := s.Environment[fmt.Sprintf("FAULTLINE_NATS_ROUTE_%d", i)], fmt.Sprintf("nats://faultline:%s@nats%d:6222", token, i); got != want {
					t.Errorf("%s: route %d is %q, want %q", name, i, got, want)
				}
			}
		case strings.HasPrefix(name, "analyzer"):
			for _, want := range []string{"serve ", "--nats " + natsURLs, "--partitions 12", "--http 0.0.0.0:8080",
				"--advertise http://" + name + ":8080", "--member " + name} {
				if !strings.Contains(cmd, want) {
					t.Errorf("%s: command %q lacks %q", name, cmd, want)
				}
			}
		case strings.HasPrefix(name, "shipper"):
			if !strings.Contains(cmd, "--nats="+natsURLs) || !strings.Contains(cmd, "--exclude-container=*nats*") {
				t.Errorf("%s: command %q, want all three servers and the stack's containers excluded", name, cmd)
			}
			if !strings.Contains(fmt.Sprint(s.Volumes), "/var/lib/docker:ro") && !strings.Contains(fmt.Sprint(s.Volumes), "read_only:true") {
				t.Errorf("%s: Docker's data root is not mounted read-only: %v", name, s.Volumes)
			}
		}
	}
}

// TestNATSClusterConf reads docs/nats-cluster.conf as the nats-server of
// go.mod does: JetStream, a cluster of the three routes from the
// environment, the token required of clients and of routes; without a
// route variable the server refuses to start rather than run alone.
func TestNATSClusterConf(t *testing.T) {
	const token = "c0ffee"
	t.Setenv("FAULTLINE_TOKEN", token)
	for i := 1; i <= 3; i++ {
		t.Setenv(fmt.Sprintf("FAULTLINE_NATS_ROUTE_%d", i), fmt.Sprintf("nats://faultline:%s@nats%d:6222", token, i))
	}
	opts, err := natsserver.ProcessConfigFile("../docs/nats-cluster.conf")
	if err != nil {
		t.Fatal(err)
	}
	if !opts.JetStream || opts.StoreDir != "." {
		t.Errorf("JetStream %v in %q, want on in the working directory (the image's /data)", opts.JetStream, opts.StoreDir)
	}
	if opts.Authorization != token {
		t.Errorf("client token %q, want FAULTLINE_TOKEN's", opts.Authorization)
	}
	if opts.Cluster.Name != "faultline" || opts.Cluster.Port != 6222 || opts.Cluster.Username != "faultline" || opts.Cluster.Password != token {
		t.Errorf("cluster %q on %d, route credentials %q/%q", opts.Cluster.Name, opts.Cluster.Port, opts.Cluster.Username, opts.Cluster.Password)
	}
	var routes []string
	for _, r := range opts.Routes {
		routes = append(routes, r.Redacted())
	}
	if want := []string{"nats://faultline:xxxxx@nats1:6222", "nats://faultline:xxxxx@nats2:6222", "nats://faultline:xxxxx@nats3:6222"}; !slices.Equal(routes, want) {
		t.Errorf("routes %v, want %v", routes, want)
	}
	if opts.Port != 4222 || opts.Host != "0.0.0.0" {
		t.Errorf("clients on %s:%d, want 0.0.0.0:4222", opts.Host, opts.Port)
	}

	os.Unsetenv("FAULTLINE_NATS_ROUTE_3")
	if _, err := natsserver.ProcessConfigFile("../docs/nats-cluster.conf"); err == nil || !strings.Contains(err.Error(), "FAULTLINE_NATS_ROUTE_3") {
		t.Errorf("config without FAULTLINE_NATS_ROUTE_3: %v, want an error naming it", err)
	}
}

// dockerEngine skips the test where no Docker engine answers.
func dockerEngine(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("docker"); err != nil {
		t.Skip("skipped: no docker command on this machine (the test runs NATS servers and analyzers in containers)")
	}
	if out, err := exec.Command("docker", "info").CombinedOutput(); err != nil {
		t.Skipf("skipped: no Docker engine answers here (docker info: %v: %.300s)", err, out)
	}
}

// clusterImages builds the images of docker-compose.cluster.yml as its
// header says (static binaries into FROM scratch, nothing pulled), from a
// temporary context so that the repository's bin/ is not touched; they are
// removed when the test ends.
func clusterImages(t *testing.T, tag string) (analyzer, nats string) {
	t.Helper()
	ctx := t.TempDir()
	runCmd(t, "..", []string{"CGO_ENABLED=0"}, "go", "build", "-trimpath", "-o", filepath.Join(ctx, "bin")+"/",
		"./cmd/analyzer", "./cmd/shipper", "github.com/nats-io/nats-server/v2")
	analyzer, nats = "faultline:clustertest-"+tag, "faultline-nats:clustertest-"+tag
	for image, dockerfile := range map[string]string{analyzer: "Dockerfile", nats: "Dockerfile.nats"} {
		df, err := os.ReadFile(filepath.Join("..", dockerfile))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(ctx, dockerfile), string(df))
		runCmd(t, "", nil, "docker", "build", "-q", "-f", filepath.Join(ctx, dockerfile), "-t", image, ctx)
		t.Cleanup(func() { exec.Command("docker", "rmi", "-f", image).Run() })
	}
	return analyzer, nats
}

// dockerRun starts a container (args follow `docker create --name name`;
// env passes secrets by name, off the command line) on the networks given
// as name and alias, the first one's ports published; it is removed when the
// test ends, its log shown if the test failed.
func dockerRun(t *testing.T, env []string, name string, networks [][2]string, args ...string) {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			// The end of the container's stderr: the operational log (an
			// analyzer's stdout is finding blocks, which --tail counts too).
			var log bytes.Buffer
			cmd := exec.Command("docker", "logs", name)
			cmd.Stderr = &log
			cmd.Run()
			lines := strings.Split(strings.TrimSpace(log.String()), "\n")
			lines = lines[max(len(lines)-60, 0):]
			state, _ := exec.Command("docker", "inspect", "-f", "{{.State.Status}} exit {{.State.ExitCode}}", name).Output()
			t.Logf("%s (%s), its log:\n%s", name, bytes.TrimSpace(state), strings.Join(lines, "\n"))
		}
		exec.Command("docker", "rm", "-f", "-v", name).Run()
	})
	create := []string{"create", "--name", name, "--network", networks[0][0], "--network-alias", networks[0][1]}
	runCmd(t, "", env, "docker", append(create, args...)...)
	for _, n := range networks[1:] {
		runCmd(t, "", nil, "docker", "network", "connect", "--alias", n[1], n[0], name)
	}
	runCmd(t, "", nil, "docker", "start", name)
}

// dockerPort is the host address (127.0.0.1:port) a container's port is
// published on.
func dockerPort(t *testing.T, name, port string) string {
	t.Helper()
	out := strings.TrimSpace(runCmd(t, "", nil, "docker", "port", name, port+"/tcp"))
	addr, _, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("%s: port %s published on %q, want 127.0.0.1", name, port, out)
	}
	return addr
}

// ownedParts is the partitions an analyzer holds leases on, from the
// faultline_partition_lease_epoch gauges of its /metrics.
func ownedParts(httpAddr string) (map[int]bool, error) {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	out := map[int]bool{}
	for _, l := range strings.Split(string(b), "\n") {
		rest, ok := strings.CutPrefix(l, `faultline_partition_lease_epoch{partition="`)
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, `"`)
		p, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("metrics line %q: %w", l, err)
		}
		out[p] = true
	}
	return out, nil
}

// TestClusterDocker is scale-out across a network partition, in
// containers: three NATS servers (the real nats-server, Dockerfile.nats,
// docs/nats-cluster.conf) and two analyzers on a private Docker network,
// configured as docker-compose.cluster.yml configures them. Records of
// clusters in either analyzer's partitions are published through a NATS
// port published on 127.0.0.1; then one analyzer is cut off the network
// (`docker network disconnect`): the other takes all partitions, more
// records come, and the first is connected back. Every record is then
// found exactly once by a search on either analyzer, paged by cursor, and
// every version of every finding was announced once. Skips only where no
// Docker engine answers.
func TestClusterDocker(t *testing.T) {
	if testing.Short() {
		t.Skip("builds images and runs a NATS cluster and two analyzers in containers")
	}
	dockerEngine(t)
	begin := time.Now()
	id := strconv.Itoa(os.Getpid())
	analyzerImage, natsImage := clusterImages(t, id)
	t.Logf("images built in %v", time.Since(begin).Round(time.Millisecond))

	// The cluster's network, and one the test reaches the analyzers' HTTP
	// through: cut off the first, an analyzer still answers the test. (A
	// port published on a network a container leaves comes back on another
	// host port when it rejoins.) Docker publishes ports on the network
	// whose name sorts first, hence "access" before "net". Registered
	// before the containers: cleanups run last-in first-out, and a network
	// goes only once its containers are gone.
	network, access := "faultline-clustertest-"+id+"-net", "faultline-clustertest-"+id+"-access"
	for _, n := range []string{network, access} {
		runCmd(t, "", nil, "docker", "network", "create", n)
		t.Cleanup(func() { exec.Command("docker", "network", "rm", n).Run() })
	}

	token := "cluster-test-" + id
	env := []string{"FAULTLINE_TOKEN=" + token}
	for i := 1; i <= 3; i++ {
		env = append(env, fmt.Sprintf("FAULTLINE_NATS_ROUTE_%d=nats://faultline:%s@nats%d:6222", i, token, i))
	}
	conf, err := filepath.Abs("../docs/nats-cluster.conf")
	if err != nil {
		t.Fatal(err)
	}
	name := func(service string) string { return "flcluster" + id + "-" + service }
	var natsURLs []string
	for i := 1; i <= 3; i++ {
		n := "nats" + strconv.Itoa(i)
		dockerRun(t, env, name(n), [][2]string{{network, n}},
			"-e", "FAULTLINE_TOKEN", "-e", "FAULTLINE_NATS_ROUTE_1", "-e", "FAULTLINE_NATS_ROUTE_2", "-e", "FAULTLINE_NATS_ROUTE_3",
			"-v", conf+":/etc/nats/nats-server.conf:ro", "-p", "127.0.0.1::4222",
			natsImage, "-c", "/etc/nats/nats-server.conf", "--name", n)
		natsURLs = append(natsURLs, "nats://"+token+"@"+dockerPort(t, name(n), "4222"))
	}
	const parts = 12
	var https []string
	for i := 1; i <= 2; i++ {
		a := "analyzer" + strconv.Itoa(i)
		dockerRun(t, env, name(a), [][2]string{{access, a}, {network, a}}, "-e", "FAULTLINE_TOKEN", "-p", "127.0.0.1::8080",
			analyzerImage, "serve", "--data-dir", "/data", "--nats", "nats://nats1:4222,nats://nats2:4222,nats://nats3:4222",
			"--partitions", strconv.Itoa(parts), "--http", "0.0.0.0:8080", "--advertise", "http://"+a+":8080", "--member", a)
		https = append(https, dockerPort(t, name(a), "8080"))
	}
	owned := make([]map[int]bool, 2)
	// ownedBy: members own every partition between them, evenly (the
	// leases settle on that: a first member takes all, then gives some up).
	ownedBy := func(members ...int) error {
		n, most := 0, (parts+len(members)-1)/len(members)
		for _, i := range members {
			var err error
			if owned[i], err = ownedParts(https[i]); err != nil {
				return fmt.Errorf("analyzer%d: %w", i+1, err)
			}
			if len(owned[i]) == 0 || len(owned[i]) > most {
				return fmt.Errorf("analyzer%d owns %d partitions", i+1, len(owned[i]))
			}
			n += len(owned[i])
		}
		if n != parts {
			return fmt.Errorf("%d of %d partitions owned by analyzers %v", n, parts, members)
		}
		return nil
	}
	testutil.CheckFor(t, 90*time.Second, 250*time.Millisecond, func() error { return ownedBy(0, 1) })
	t.Logf("cluster up, partitions shared %d/%d, %v after the test began", len(owned[0]), len(owned[1]), time.Since(begin).Round(time.Millisecond))

	// Two clusters in each analyzer's partitions: the cut-off one's must
	// move, the other's must stay where they are.
	var on [2][]string
	for i := 1; (len(on[0]) < 2 || len(on[1]) < 2) && i < 1000; i++ {
		c := "c" + strconv.Itoa(i)
		for a := range 2 {
			if owned[a][transport.PartitionOf(c, parts)] && len(on[a]) < 2 {
				on[a] = append(on[a], c)
			}
		}
	}
	clusters := append(on[0], on[1]...)
	fl := logFindings(t, strings.Join(natsURLs, ","))
	nc := connectRetrying(t, strings.Join(natsURLs, ","))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	recs := clusterInput(t, clusters, 3000)
	half := len(recs) / 2
	publishRecords(t, js, recs[:half], 100)
	wantSearchable(t, https[0], recs[:half], 60*time.Second)
	if err := ownedBy(0, 1); err != nil {
		t.Fatal(err)
	}
	for _, c := range on[1] {
		if p := transport.PartitionOf(c, parts); !owned[1][p] {
			t.Fatalf("partition %d of cluster %s moved off analyzer2 before the cut", p, c)
		}
	}

	runCmd(t, "", nil, "docker", "network", "disconnect", network, name("analyzer2"))
	cut := time.Now()
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error { return ownedBy(0) })
	t.Logf("analyzer2 cut off: analyzer1 owns all partitions after %v", time.Since(cut).Round(time.Millisecond))
	// The cut-off analyzer knows its leases ran out: two owners of one
	// partition would index and announce twice.
	testutil.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		parts, err := ownedParts(https[1])
		if err == nil && len(parts) > 0 {
			err = fmt.Errorf("analyzer2, cut off, says it owns partitions %v", slices.Sorted(maps.Keys(parts)))
		}
		return err
	})
	publishRecords(t, js, recs[half:], 100)

	runCmd(t, "", nil, "docker", "network", "connect", "--alias", "analyzer2", network, name("analyzer2"))
	back := time.Now()
	testutil.CheckFor(t, 60*time.Second, 250*time.Millisecond, func() error { return ownedBy(0, 1) })
	t.Logf("analyzer2 back: partitions shared %d/%d after %v", len(owned[0]), len(owned[1]), time.Since(back).Round(time.Millisecond))

	for _, h := range https {
		wantSearchable(t, h, recs, 60*time.Second)
	}
	want := verdicts(diagnose(t))
	wantClusterFindings(t, https[1], clusters, want)
	if announced := fl.check(t); len(announced) != len(clusters)*len(want) {
		t.Errorf("%d findings announced, want %d", len(announced), len(clusters)*len(want))
	}
	t.Logf("%d records of %d clusters, test took %v", len(recs), len(clusters), time.Since(begin).Round(time.Millisecond))
}
