package server

import (
	"cmp"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/receivertest"
	"github.com/faultline/faultline/internal/testutil"
)

// fluentBit is the fluent-bit binary: on PATH, else where Fluent Bit's
// own packages install it; "" without one.
func fluentBit() string {
	if p, err := exec.LookPath("fluent-bit"); err == nil {
		return p
	}
	if _, err := os.Stat("/opt/fluent-bit/bin/fluent-bit"); err == nil {
		return "/opt/fluent-bit/bin/fluent-bit"
	}
	return ""
}

// documentedFluentBit returns the Fluent Bit configurations of
// docs/receivers.md by the name of their output.
func documentedFluentBit(t *testing.T) map[string]string {
	b, err := os.ReadFile("../docs/receivers.md")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, m := range regexp.MustCompile("(?s)```ini\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		if o := regexp.MustCompile(`(?m)^\[OUTPUT\]\n\s+name\s+(\S+)`).FindStringSubmatch(m[1]); o != nil {
			out[o[1]] = m[1]
		}
	}
	if out["opentelemetry"] == "" || out["loki"] == "" {
		t.Fatalf("docs/receivers.md: Fluent Bit configurations for %v, want opentelemetry and loki", out)
	}
	return out
}

// TestFluentBitSendsTheSeedStory: Fluent Bit, run with each configuration
// docs/receivers.md gives it (read from the page; the host, port, paths
// and token filled in, and the [INPUT] repeated for Ray's session logs as
// the page says), one process per node as a DaemonSet runs it, tails the
// seed story written as kubelet CRI pod logs and Ray session files and
// sends it to serve over OTLP and over Loki push: the findings are
// diagnose's (rule, cause, severity, nodes, each evidence line's node,
// time and text; the files have other paths here).
func TestFluentBitSendsTheSeedStory(t *testing.T) {
	configs := documentedFluentBit(t) // read everywhere: the page keeps both
	bin := fluentBit()
	if bin == "" {
		t.Skip("no fluent-bit binary (not on PATH, no /opt/fluent-bit/bin/fluent-bit): Debian has no Fluent Bit package for this machine, so the Fluent Bit configurations of docs/receivers.md are not run here")
	}
	files, err := receivertest.ReadDir(seedDir, seedDir)
	if err != nil {
		t.Fatal(err)
	}
	noFiles := func(fs []finding.Finding) []string {
		fs = slices.Clone(fs)
		for i := range fs {
			fs[i].Evidence = slices.Clone(fs[i].Evidence)
			for k := range fs[i].Evidence {
				fs[i].Evidence[k].File = ""
			}
		}
		return comparable(fs, false)
	}
	want := noFiles(diagnose(t))
	const token = "fluent-bit-token"
	for _, output := range []string{"opentelemetry", "loki"} {
		t.Run(output, func(t *testing.T) {
			r := startServer(t, Config{HTTPToken: token})
			_, port, _ := strings.Cut(r.addrs.HTTP, ":")
			root := t.TempDir()
			for _, node := range []string{"spark-1", "spark-2"} {
				pods := filepath.Join(root, node, "pods")
				ray := filepath.Join(root, node, "ray")
				for _, f := range files {
					if f.Node != node {
						continue
					}
					var b strings.Builder
					path := filepath.Join(ray, filepath.Base(f.Path))
					if strings.HasSuffix(f.Path, "-json.log") {
						// The container's log as the kubelet writes it (CRI).
						path = filepath.Join(pods, "default_vllm-"+node+"_0f1e", "vllm", "0.log")
						for _, l := range f.Lines {
							fmt.Fprintf(&b, "%s %s F %s\n", l.Time.UTC().Format(time.RFC3339Nano), cmp.Or(l.Stream, "stdout"), l.Text)
						}
					} else {
						for _, l := range f.Lines {
							b.WriteString(l.Text + "\n")
						}
					}
					os.MkdirAll(filepath.Dir(path), 0o755)
					if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				conf := configs[output]
				input := conf[strings.Index(conf, "[INPUT]"):strings.Index(conf, "[OUTPUT]")]
				rayInput := strings.Replace(input, "/var/log/pods/*/*/*.log", filepath.Join(ray, "*"), 1)
				rayInput = strings.Replace(rayInput, ".db", "-ray.db", 1)
				conf = strings.Replace(conf, "[OUTPUT]", rayInput+"[OUTPUT]", 1)
				conf = strings.NewReplacer("/var/log/pods/*/*/*.log", filepath.Join(pods, "*", "*", "*.log"),
					"/var/lib/fluent-bit/", filepath.Join(root, node)+"/",
					"faultline-analyzer.faultline.svc", "127.0.0.1").Replace(conf)
				conf = regexp.MustCompile(`(?m)^(\s+port\s+)8080$`).ReplaceAllString(conf, "${1}"+port)
				file := filepath.Join(root, node, "fluent-bit.conf")
				if err := os.WriteFile(file, []byte("[SERVICE]\n    flush 1\n    log_level info\n"+conf), 0o644); err != nil {
					t.Fatal(err)
				}
				cmd := exec.Command(bin, "-c", file)
				cmd.Env = append(os.Environ(), "FAULTLINE_HTTP_TOKEN="+token, "NODE_NAME="+node)
				cmd.Stdout, cmd.Stderr = testWriter{t}, testWriter{t}
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			}
			testutil.CheckFor(t, time.Minute, 250*time.Millisecond, func() error {
				var got []finding.Finding
				if err := getAuthJSON(t, "http://"+r.addrs.HTTP+"/api/findings", token, &got); err != nil {
					return err
				}
				if g := noFiles(got); !slices.Equal(g, want) {
					return fmt.Errorf("findings\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(want, "\n"))
				}
				return nil
			})
		})
	}
}
