package ruletest_test

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
)

// pasteVariants are the ways a user's paste differs from the log a node
// wrote: the same failure must be diagnosed the same way through each.
var pasteVariants = map[string]func([]byte) []byte{
	// `docker compose logs` puts the service name before every line.
	"compose prefix": func(b []byte) []byte { return eachLine(b, func(l string) string { return "worker-1  | " + l }) },
	// A terminal (or `fold -w 100`) hard-wraps long lines, mid-word.
	"wrapped at 100 columns": func(b []byte) []byte {
		return eachLine(b, func(l string) string {
			var parts []string
			for len(l) > 100 {
				parts = append(parts, l[:100])
				l = l[100:]
			}
			return strings.Join(append(parts, l), "\n")
		})
	},
	// Copied from a Windows tool.
	"CRLF line ends": func(b []byte) []byte { return eachLine(b, func(l string) string { return l + "\r" }) },
}

func eachLine(b []byte, f func(string) string) []byte {
	var out bytes.Buffer
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if l == "" {
			continue
		}
		nl := strings.HasSuffix(l, "\n")
		out.WriteString(f(strings.TrimSuffix(l, "\n")))
		if nl {
			out.WriteByte('\n')
		}
	}
	return out.Bytes()
}

// Every real case keeps its verdict when its logs are pasted the ways users
// paste them.
func TestCorpusAsPasted(t *testing.T) {
	for _, c := range corpusCases(t) {
		if c.knownFailure != "" {
			continue
		}
		inputs, err := pipeline.ParseArgs([]string{c.path})
		if err != nil {
			t.Fatal(err)
		}
		files, err := pipeline.Expand(inputs)
		if err != nil {
			t.Fatal(err)
		}
		want := firstCause(t, files)
		for name, variant := range pasteVariants {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				pasted := make([]pipeline.File, len(files))
				for i, f := range files {
					data, err := os.ReadFile(f.Path)
					if err != nil {
						t.Fatal(err)
					}
					if parsers.DetectFormat(data) == parsers.FormatPlain {
						data = variant(data)
					}
					f.Data = data
					pasted[i] = f
				}
				if got := firstCause(t, pasted); got != want {
					t.Errorf("first finding %q, as written %q", got, want)
				}
			})
		}
	}
}

// firstCause is the cause and severity of the first active finding, or "".
func firstCause(t *testing.T, files []pipeline.File) string {
	t.Helper()
	rs, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	e := rule.NewEngine(rs)
	if _, err := pipeline.ReplayFiles(context.Background(), files, pipeline.Options{Cluster: rule.DefaultCluster}, func(ev *parsers.Event) error {
		e.Observe(ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, f := range e.Findings() {
		if f.Status == "active" {
			return f.Cause + "/" + string(f.Severity)
		}
	}
	return ""
}
