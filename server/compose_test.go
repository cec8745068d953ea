package server

import (
	"os/exec"
	"strings"
	"testing"
)

// TestComposeConfig validates docker-compose.yml with whichever compose
// tool is installed.
func TestComposeConfig(t *testing.T) {
	var cmd *exec.Cmd
	switch {
	case exec.Command("docker", "compose", "version").Run() == nil:
		cmd = exec.Command("docker", "compose", "-f", "../docker-compose.yml", "config")
	default:
		if _, err := exec.LookPath("docker-compose"); err != nil {
			t.Skip("neither `docker compose` nor docker-compose is installed")
		}
		cmd = exec.Command("docker-compose", "-f", "../docker-compose.yml", "config")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, out)
	}
	for _, want := range []string{"nats:2.12", "--jetstream", "nats://nats:4222", "/var/lib/docker", "read_only: true"} {
		if !strings.Contains(string(out), want) && !(want == "read_only: true" && strings.Contains(string(out), ":ro")) {
			t.Errorf("compose config lacks %q:\n%s", want, out)
		}
	}
}
