package server

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	natsserver "github.com/nats-io/nats-server/v2/server"
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
	if !opts.JetStream || opts.StoreDir != "/data" {
		t.Errorf("JetStream %v in %q, want on in /data", opts.JetStream, opts.StoreDir)
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
