package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/internal/config"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestServeConfigEveryFlag: every flag of serve is a key of its --config
// file, and the file's value reaches the flag.
func TestServeConfigEveryFlag(t *testing.T) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	(&serveSettings{}).RegisterFlags(fs)
	n := 0
	fs.VisitAll(func(f *pflag.Flag) {
		n++
		var value, want string
		switch f.Value.Type() {
		case "bool":
			value = fmt.Sprint(f.DefValue != "true")
		case "int", "int64":
			value = "7"
		case "duration":
			value, want = "7s", "7s"
		case "SIZE":
			value, want = "7MiB", "7MiB"
		case "stringArray", "stringSlice":
			value, want = "[/x/7, /y/7]", "[/x/7,/y/7]"
		default:
			value = "x7"
		}
		if want == "" {
			want = value
		}
		fs2 := pflag.NewFlagSet("serve", pflag.ContinueOnError)
		(&serveSettings{}).RegisterFlags(fs2)
		if err := config.ApplyBytes(fs2, "serve.yaml", []byte(f.Name+": "+value+"\n")); err != nil {
			t.Errorf("%s: %v", f.Name, err)
			return
		}
		if got := fs2.Lookup(f.Name); !got.Changed || got.Value.String() != want {
			t.Errorf("%s: %s in the file gave %q (changed %v)", f.Name, value, got.Value.String(), got.Changed)
		}
	})
	if n < 35 {
		t.Errorf("serve has %d flags, fewer than it had (35)", n)
	}
}

// TestServeConfigFile: --config gives serve its settings, flags on the
// command line win, and what --print-config writes reads back to the same
// settings (secrets left out).
func TestServeConfigFile(t *testing.T) {
	file := writeFile(t, "serve.yaml", `# analyzer on the head node
data-dir: /var/lib/faultline
nats-listen: 10.1.230.180:4222
http: 127.0.0.1:9090
webhook: https://hooks.example.com/x
alertmanager: [http://am-1:9093, http://am-2:9093]
alert-resend: 30s
rules: [/etc/faultline/rules]
search-timeout: 2s
memory-limit: 512MiB
partitions: 6
nats: nats://n1:4222,nats://n2:4222
retention-bytes: 10GiB
log-level: debug
`)
	c, _, err := parseServe([]string{"--config", file, "--http", "127.0.0.1:8181"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := c.Config
	if cfg.DataDir != "/var/lib/faultline" || cfg.HTTP != "127.0.0.1:8181" || !reflect.DeepEqual(cfg.Webhooks, []string{"https://hooks.example.com/x"}) ||
		!reflect.DeepEqual(cfg.Alertmanagers, []string{"http://am-1:9093", "http://am-2:9093"}) || cfg.AlertResend.String() != "30s" ||
		!reflect.DeepEqual(cfg.RuleDirs, []string{"/etc/faultline/rules"}) || cfg.SearchTimeout.String() != "2s" ||
		*c.memLimit != 512<<20 || cfg.Cluster.Partitions != 6 || cfg.Stream.MaxBytes != 10<<30 || c.logLevel != "debug" {
		t.Errorf("settings from the file: %+v (memory %d, log %s)", cfg, *c.memLimit, c.logLevel)
	}
	var printed strings.Builder
	if _, _, err := parseServe([]string{"--config", file, "--http-token", "s3cret", "--print-config"}, &printed, io.Discard); !errors.Is(err, errPrintConfig) {
		t.Fatalf("--print-config: %v", err)
	}
	if strings.Contains(printed.String(), "s3cret") {
		t.Errorf("--print-config printed the HTTP token")
	}
	back, _, err := parseServe([]string{"--config", writeFile(t, "printed.yaml", printed.String()), "--http", "127.0.0.1:8181"}, io.Discard, io.Discard)
	if err != nil {
		t.Fatalf("the printed file: %v\n%s", err, printed.String())
	}
	if !reflect.DeepEqual(back.Config, c.Config) || *back.memLimit != *c.memLimit || back.logLevel != c.logLevel {
		t.Errorf("read back:\n got %+v\nwant %+v", back.Config, c.Config)
	}
}

// TestConfigCheck: analyzer config check says ok for a good file and names
// the line of a bad one, and checks the settings together as serve does.
func TestConfigCheck(t *testing.T) {
	for _, c := range []struct {
		content string
		code    int
		want    string
	}{
		{"http: 127.0.0.1:9090\nwebhook: https://x\n", 0, `: ok\n$`},
		{"http: 127.0.0.1:9090\nhtpp: x\n", 1, `:2:1: unknown key "htpp": not a setting of serve`},
		{"partitions: many\n", 1, `:1:13: partitions must be a whole number, not many`},
		{"nats-routes: nats://a:6222\n", 1, `--nats-routes needs --nats-cluster`},
		{"log-level: loud\n", 1, `--log-level: `},
		{"alertmanager: [am:9093]\n", 1, `--alertmanager "am:9093": want an http:// or https:// URL`},
	} {
		file := writeFile(t, "serve.yaml", c.content)
		var out, errs strings.Builder
		code := run(t.Context(), []string{"config", "check", file}, strings.NewReader(""), &out, &errs)
		if code != c.code || !regexp.MustCompile(c.want).MatchString(out.String()+errs.String()) {
			t.Errorf("config check %q: exit %d, stdout %q, stderr %q; want exit %d and %s", c.content, code, out.String(), errs.String(), c.code, c.want)
		}
	}
}
