package main

import (
	"context"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// TestHelp: --help names what each flag takes (--nats URLS, not --nats
// string), gives each default once, and says what the exit status means.
func TestHelp(t *testing.T) {
	var out strings.Builder
	if _, _, err := parseArgs([]string{"--help"}, io.Discard, &out); !errors.Is(err, pflag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	help := out.String()
	if m := regexp.MustCompile(`(?m)^\s+--\S+ (string|stringArray|int|int64)\s.*$`).FindAllString(help, -1); len(m) > 0 {
		t.Errorf("flags without a named value:\n%s", strings.Join(m, "\n"))
	}
	for _, l := range strings.Split(help, "\n") {
		if strings.Count(l, "(default") > 1 {
			t.Errorf("a default said twice: %q", l)
		}
	}
	if !strings.Contains(help, "Exit status:") {
		t.Errorf("--help does not explain the exit status:\n%s", help)
	}
}

// TestHelpOnStdout: --help is what was asked for, on standard output
// (shipper --help | less showed nothing), with nothing on stderr.
func TestHelpOnStdout(t *testing.T) {
	var out, errb strings.Builder
	if err := run(context.Background(), []string{"--help"}, nil, &out, &errb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "usage: shipper") || errb.Len() != 0 {
		t.Errorf("--help: stdout %d bytes, stderr %q", out.Len(), errb.String())
	}
}
