package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/internal/config"
)

func writeConfig(t *testing.T, content string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "shipper.yaml")
	if err := os.WriteFile(file, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// --config sets every key it names; a flag given on the command line wins
// over the file, even when it repeats the flag's default; keys in neither
// keep their defaults.
func TestConfigFileMerge(t *testing.T) {
	file := writeConfig(t, `# shipper of spark-1
path:
  - /var/log/ray/*.log
  - /var/log/vllm.log
container: ["node-*"]
node: spark-1
cluster: dgx
nats: nats://head:4222,nats://head2:4222
state-dir: /var/lib/faultline-shipper
save-interval: 2s
batch-wait: 40ms
flush-timeout: 2s
batch-bytes: 1048576
max-in-flight: 4
max-open-files: 300
compression: zstd
stream-max-age: 72h
stream-max-bytes: 1073741824
user: ship
password: s3cret
tls-ca: /etc/faultline/ca.pem
log-level: debug
`)
	fromFile := settings{
		Path: []string{"/var/log/ray/*.log", "/var/log/vllm.log"}, Container: []string{"node-*"},
		DockerRoot: "/var/lib/docker", Cluster: "dgx", Node: "spark-1", NATS: "nats://head:4222,nats://head2:4222",
		User: "ship", Password: "s3cret", TLSCA: "/etc/faultline/ca.pem", StateDir: "/var/lib/faultline-shipper",
		SaveInterval: 2 * time.Second, FlushTimeout: 2 * time.Second, BatchBytes: 1 << 20, BatchWait: 40 * time.Millisecond,
		MaxInFlight: 4, MaxOpenFiles: 300, Compression: "zstd", LogLevel: "debug", MaxAge: 72 * time.Hour, MaxBytes: 1 << 30,
	}
	tests := []struct {
		name string
		args []string
		want func(*settings)
	}{
		{"file-only", []string{"--config", file}, func(*settings) {}},
		{"flags-win", []string{"--config", file, "--node", "spark-9", "--batch-wait", "5ms", "--nats", "nats://other:4222", "--max-in-flight", "32", "--compression", "none"},
			func(c *settings) {
				c.Node, c.BatchWait, c.NATS, c.MaxInFlight, c.Compression = "spark-9", 5*time.Millisecond, "nats://other:4222", 32, "none"
			}},
		// --cluster default is given, so it is not the file's dgx.
		{"flag-equal-to-default-wins", []string{"--config", file, "--cluster", "default", "--log-level=info"},
			func(c *settings) { c.Cluster, c.LogLevel = "default", "info" }},
		// A list flag replaces the file's list, it does not add to it.
		{"list-flag-replaces", []string{"--config", file, "--path", "/tmp/a.log", "--container", "x", "--container", "y"},
			func(c *settings) { c.Path, c.Container = []string{"/tmp/a.log"}, []string{"x", "y"} }},
		{"flag-before-config", []string{"--state-dir", "/tmp/state", "--config", file, "--stream-max-age", "1h"},
			func(c *settings) { c.StateDir, c.MaxAge = "/tmp/state", time.Hour }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, rest, err := parseArgs(append(tt.args, "-"), io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			want := fromFile
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("parseArgs(%q):\n got %+v\nwant %+v", tt.args, got, want)
			}
			if !reflect.DeepEqual(rest, []string{"-"}) {
				t.Errorf("positional arguments %q, want [-]", rest)
			}
		})
	}
}

// Without --config, and with an empty file, every key has its default.
func TestConfigDefaults(t *testing.T) {
	none, _, err := parseArgs(nil, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if none.Cluster != "default" || none.NATS != "nats://127.0.0.1:4222" || none.StateDir != "./shipper-state" ||
		none.BatchWait != 25*time.Millisecond || none.FlushTimeout != 50*time.Millisecond ||
		none.MaxAge != 7*24*time.Hour || none.BatchBytes != 768<<10 || none.MaxInFlight != 16 || none.LogLevel != "info" {
		t.Errorf("defaults: %+v", none)
	}
	for _, content := range []string{"", "# nothing yet\n", "batch-wait:\n"} {
		empty, _, err := parseArgs([]string{"--config", writeConfig(t, content)}, io.Discard, io.Discard)
		if err != nil {
			t.Fatalf("config %q: %v", content, err)
		}
		if !reflect.DeepEqual(empty, none) {
			t.Errorf("config %q:\n got %+v\nwant %+v", content, empty, none)
		}
	}
}

// A file the shipper cannot use stops it before it starts, with an error
// naming the file and, where there is one, the line and column.
func TestConfigFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    string // regexp; FILE stands for the file
	}{
		{"unknown-key", "node: spark-1\nnodes: spark-2\n", `^--config FILE:2:1: unknown key "nodes": not a setting of shipper$`},
		{"flag-name-typo", "node: spark-1\nbatch_wait: 20ms\n", `^--config FILE:2:1: unknown key "batch_wait": not a setting of shipper \(did you mean batch-wait\?\)$`},
		{"malformed", "node: spark-1\npath: [a.log\n", `^--config FILE:2:7: sequence end token ']' not found$`},
		{"tab-indent", "node: spark-1\n\tcluster: dgx\n", `^--config FILE:2:1: found character .* that cannot start any token$`},
		{"not-a-mapping", "- node\n- spark-1\n", `^--config FILE:1:1: want a mapping of settings \(flag names\) to values, not a list$`},
		{"duplicate-key", "node: a\nnode: b\n", `^--config FILE:2:1: mapping key "node" already defined`},
		{"bad-duration", "node: a\nbatch-wait: forever\n", `^--config FILE:2:13: batch-wait: must be a duration`},
		{"duration-without-unit", "batch-wait: 25\n", `^--config FILE:1:13: 25 is not a duration`},
		{"string-for-number", "batch-bytes: lots\n", `^--config FILE:1:14: batch-bytes must be a whole number, not lots$`},
		{"fraction-for-integer", "node: a\nbatch-bytes: 1.5\n", `^--config FILE:2:14: batch-bytes must be a whole number, not 1.5$`},
		{"fraction-alone", "max-in-flight: 0.5\n", `^--config FILE:1:16: max-in-flight must be a whole number, not 0.5$`},
		{"list-for-string", "node: [a, b]\n", `^--config FILE:1:7: node takes one value, not a list$`},
		{"version-in-file", "version: true\n", `^--config FILE:1:1: unknown key "version"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := writeConfig(t, tt.content)
			_, _, err := parseArgs([]string{"--config", file, "-"}, io.Discard, io.Discard)
			if err == nil {
				t.Fatalf("config %q accepted", tt.content)
			}
			re := regexp.MustCompile(strings.ReplaceAll(tt.want, "FILE", regexp.QuoteMeta(file)))
			if !re.MatchString(err.Error()) {
				t.Errorf("config %q:\n got %q\nwant %q", tt.content, err, re)
			}
		})
	}
	t.Run("missing-file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "missing.yaml")
		_, _, err := parseArgs([]string{"--config", file}, io.Discard, io.Discard)
		if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "--config") || !strings.Contains(err.Error(), file) {
			t.Errorf("missing config file: %v", err)
		}
	})
	// run, as main calls it, returns the error before connecting anywhere.
	t.Run("run", func(t *testing.T) {
		file := writeConfig(t, "nats: nats://127.0.0.1:1\nbogus: 1\n")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := run(ctx, []string{"--config", file, "-"}, strings.NewReader(""), io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), file+":2:1") {
			t.Errorf("run: %v", err)
		}
	})
}

// Bad flag values are refused by the flag parser, durations included.
func TestFlagErrors(t *testing.T) {
	for _, args := range [][]string{{"--batch-wait", "soon"}, {"--batch-wait", "25"}, {"--max-in-flight", "many"}, {"--nope"}} {
		if _, _, err := parseArgs(args, io.Discard, io.Discard); err == nil {
			t.Errorf("%q accepted", args)
		}
	}
	if _, _, err := parseArgs([]string{"--help"}, io.Discard, io.Discard); !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("--help: %v", err)
	}
}

// --version prints the binary's version on stdout and exits without
// connecting anywhere.
func TestVersion(t *testing.T) {
	var out strings.Builder
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := run(ctx, []string{"--version", "--nats", "nats://127.0.0.1:1"}, strings.NewReader(""), &out, io.Discard); err != nil {
		t.Fatalf("--version: %v", err)
	}
	if !regexp.MustCompile(`^shipper \S+.* go1\.\d+`).MatchString(out.String()) {
		t.Errorf("--version printed %q", out.String())
	}
}

// --print-config writes every setting, and the file it writes gives the
// same settings back through --config: every flag is a key of the file.
func TestPrintConfig(t *testing.T) {
	args := []string{"--node", "spark-1", "--path", "/var/log/a.log", "--path", "/var/log/b log.log", "--batch-wait", "40ms",
		"--max-in-flight", "4", "--stream-max-bytes", "1073741824", "--password", "s3cret", "--tls-ca", "/etc/ca.pem"}
	var out strings.Builder
	if _, _, err := parseArgs(append(args, "--print-config"), &out, io.Discard); !errors.Is(err, errPrintConfig) {
		t.Fatalf("--print-config: %v", err)
	}
	printed := out.String()
	if strings.Contains(printed, "s3cret") {
		t.Errorf("--print-config printed the password:\n%s", printed)
	}
	fs := pflag.NewFlagSet("shipper", pflag.ContinueOnError)
	var s settings
	s.RegisterFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if !regexp.MustCompile(`(?m)^(# )?` + regexp.QuoteMeta(f.Name) + `: `).MatchString(printed) {
			t.Errorf("--print-config has no key %s", f.Name)
		}
	})
	want, _, err := parseArgs(args, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := parseArgs([]string{"--config", writeConfig(t, printed)}, io.Discard, io.Discard)
	if err != nil {
		t.Fatalf("the printed config: %v\n%s", err, printed)
	}
	want.Password = "" // secrets are not printed
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back:\n got %+v\nwant %+v", got, want)
	}
}

// TestConfigEveryFlag: every flag of the shipper is a key of its --config
// file, and the file's value reaches the flag.
func TestConfigEveryFlag(t *testing.T) {
	fs := pflag.NewFlagSet("shipper", pflag.ContinueOnError)
	(&settings{}).RegisterFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		value, want := "x7", ""
		switch f.Value.Type() {
		case "bool":
			value = "true"
		case "int", "int64":
			value = "7"
		case "duration":
			value = "7s"
		case "stringArray":
			value, want = "[/x/7, /y/7]", "[/x/7,/y/7]"
		}
		if want == "" {
			want = value
		}
		fs2 := pflag.NewFlagSet("shipper", pflag.ContinueOnError)
		(&settings{}).RegisterFlags(fs2)
		if err := config.ApplyBytes(fs2, "shipper.yaml", []byte(f.Name+": "+value+"\n")); err != nil {
			t.Errorf("%s: %v", f.Name, err)
			return
		}
		if got := fs2.Lookup(f.Name); !got.Changed || got.Value.String() != want {
			t.Errorf("%s: %s in the file gave %q", f.Name, value, got.Value.String())
		}
	})
}
