package main

import (
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestDeployExamples: the systemd unit and the Kubernetes DaemonSet in
// deploy/ run the shipper with flags it accepts, read the token from a file
// or the environment (never a command line), and keep their state in a
// place that outlives the process.
func TestDeployExamples(t *testing.T) {
	t.Run("kubernetes", func(t *testing.T) {
		b, err := os.ReadFile("../../deploy/kubernetes/shipper-daemonset.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var ds struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Command, Args []string
							Env           []struct{ Name, Value string }
						}
					}
				}
			}
		}
		if err := yaml.Unmarshal(b, &ds); err != nil {
			t.Fatal(err)
		}
		cs := ds.Spec.Template.Spec.Containers
		if ds.Kind != "DaemonSet" || len(cs) != 1 {
			t.Fatalf("kind %q with %d containers", ds.Kind, len(cs))
		}
		env := map[string]string{"NODE_NAME": "gpu-node-1"}
		hasToken := false
		for _, e := range cs[0].Env {
			if e.Value != "" { // valueFrom entries are filled by Kubernetes
				env[e.Name] = e.Value
			}
			hasToken = hasToken || e.Name == "FAULTLINE_TOKEN"
		}
		if !hasToken {
			t.Error("the DaemonSet does not give the shipper FAULTLINE_TOKEN")
		}
		// Kubernetes expands $(VAR) in args from the container's env.
		var args []string
		for _, a := range cs[0].Args {
			args = append(args, regexp.MustCompile(`\$\((\w+)\)`).ReplaceAllStringFunc(a, func(m string) string {
				return env[m[2:len(m)-1]]
			}))
		}
		fc := checkArgs(t, args)
		if fc.Node != "gpu-node-1" || !strings.HasPrefix(fc.NATS, "nats://") || fc.StateDir != "/state" || len(fc.Path) == 0 {
			t.Errorf("DaemonSet args give %+v", fc)
		}
	})
	t.Run("systemd", func(t *testing.T) {
		b, err := os.ReadFile("../../deploy/systemd/faultline-shipper.service")
		if err != nil {
			t.Fatal(err)
		}
		unit := strings.ReplaceAll(string(b), "\\\n", " ")
		m := regexp.MustCompile(`(?m)^ExecStart=(\S+)(.*)$`).FindStringSubmatch(unit)
		if m == nil || !strings.HasSuffix(m[1], "/shipper") {
			t.Fatalf("no ExecStart running the shipper: %q", m)
		}
		// systemd substitutes ${VAR} from the EnvironmentFile; an unset
		// $FAULTLINE_ARGS is no argument at all.
		env := map[string]string{"FAULTLINE_NATS": "nats://10.1.230.180:4222", "FAULTLINE_CLUSTER": "dgx", "FAULTLINE_CONTAINER": "vllm-*"}
		var args []string
		for _, f := range strings.Fields(m[2]) {
			if f == "$FAULTLINE_ARGS" {
				continue
			}
			args = append(args, regexp.MustCompile(`\$\{(\w+)\}`).ReplaceAllStringFunc(f, func(v string) string {
				return env[v[2:len(v)-1]]
			}))
		}
		fc := checkArgs(t, args)
		if fc.TokenFile == "" || fc.NATS != env["FAULTLINE_NATS"] || fc.StateDir != "/var/lib/faultline-shipper" {
			t.Errorf("ExecStart gives %+v", fc)
		}
		if !strings.Contains(unit, "StateDirectory=faultline-shipper") {
			t.Error("the state dir is not the unit's StateDirectory (ProtectSystem=strict would make it read-only)")
		}
	})
}

func checkArgs(t *testing.T, args []string) settings {
	t.Helper()
	fc, rest, err := parseArgs(args, io.Discard, io.Discard)
	if err != nil || len(rest) > 0 {
		t.Fatalf("shipper %q: %v (left over %q)", args, err, rest)
	}
	if fc.Token != "" || fc.Password != "" {
		t.Errorf("a secret on the command line: %q", args)
	}
	return fc
}
