package server

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestComposeConfig validates docker-compose.yml with whichever compose
// tool is installed: every image is built from this repository (none is
// pulled), NATS is the analyzer's embedded server, listening on 127.0.0.1
// unless told otherwise (the host's network: it binds what it is given),
// FAULTLINE_TOKEN is required, the node is the host's name unless
// FAULTLINE_NODE says, and the shipper tails only containers labelled
// faultline.ship unless FAULTLINE_CONTAINER_LABEL is emptied.
func TestComposeConfig(t *testing.T) {
	compose := composeCmd()
	if compose == nil {
		t.Skip("skipped: neither `docker compose` nor docker-compose is installed")
	}
	config := func(env ...string) (string, error) {
		cmd := exec.Command(compose[0], append(slices.Clone(compose[1:]), "-f", "../docker-compose.yml", "config")...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := config("FAULTLINE_TOKEN=")
	if err == nil || !strings.Contains(out, "set FAULTLINE_TOKEN") {
		t.Errorf("compose config without FAULTLINE_TOKEN: %v, want a refusal naming it:\n%s", err, out)
	}
	out, err = config("FAULTLINE_TOKEN=s3cret")
	if err != nil {
		t.Fatalf("compose config: %v\n%s", err, out)
	}
	for _, want := range []string{"--nats=nats://127.0.0.1:4222", "--nats-listen", "- 127.0.0.1:4222", "- 127.0.0.1:8080",
		"network_mode: host", "--node=\n", "--container-label=faultline.ship", "/var/lib/docker", "FAULTLINE_TOKEN: s3cret"} {
		if !strings.Contains(out, want) {
			t.Errorf("compose config lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "0.0.0.0") || strings.Contains(out, "node-1") {
		t.Errorf("compose config listens on every interface or names the node for every host alike:\n%s", out)
	}
	// The head's management address: the analyzer listens there and the
	// shipper dials it; the label check can be dropped.
	out, err = config("FAULTLINE_TOKEN=s3cret", "FAULTLINE_NATS_HOST=10.1.230.180", "FAULTLINE_CONTAINER_LABEL=", "FAULTLINE_NODE=spark-1")
	if err != nil {
		t.Fatalf("compose config: %v\n%s", err, out)
	}
	for _, want := range []string{"--nats=nats://10.1.230.180:4222", "- 10.1.230.180:4222", "--container-label=\n", "--node=spark-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("compose config with FAULTLINE_NATS_HOST, FAULTLINE_NODE and an empty FAULTLINE_CONTAINER_LABEL lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "read_only: true") && !strings.Contains(out, "/var/lib/docker:ro") {
		t.Errorf("Docker's data root is not mounted read-only:\n%s", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if l := strings.TrimSpace(line); strings.HasPrefix(l, "image:") && !strings.Contains(l, "faultline") {
			t.Errorf("compose runs an image it does not build: %s", l)
		}
	}
	if strings.Contains(out, "s3cret@") || strings.Contains(out, "--token") {
		t.Errorf("the token is on a command line:\n%s", out)
	}
}
