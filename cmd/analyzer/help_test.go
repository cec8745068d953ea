package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestHelp: every command's --help that this file covers names what each
// flag takes (--webhook URL, not --webhook string or, as it was, --webhook
// text), gives each default once and says what the exit status means.
func TestHelp(t *testing.T) {
	for _, cmd := range []string{"serve", "ui", "ingest", "search"} {
		help, _, code := runCmd(t, cmd, "--help")
		if code != 0 {
			t.Errorf("%s --help: exit %d", cmd, code)
		}
		if m := regexp.MustCompile(`(?m)^\s+(-\w, )?--\S+ (string|stringArray|stringSlice|strings|int|int64|text)\s.*$`).FindAllString(help, -1); len(m) > 0 {
			t.Errorf("%s: flags without a named value:\n%s", cmd, strings.Join(m, "\n"))
		}
		for _, l := range strings.Split(help, "\n") {
			if strings.Count(l, "(default") > 1 {
				t.Errorf("%s: a default said twice: %q", cmd, l)
			}
		}
		if !strings.Contains(help, "Exit status:") {
			t.Errorf("%s --help does not explain the exit status", cmd)
		}
	}
}

// TestHelpOnStdout: every command's --help (and analyzer's own) is on
// standard output, nothing on stderr: `analyzer diagnose --help | less`
// showed nothing. Without a command, the usage is an error: stderr, exit 1.
func TestHelpOnStdout(t *testing.T) {
	cases := [][]string{{"--help"}, {"help"}, {"rules", "lint", "--help"}, {"config", "check", "--help"}}
	for _, c := range commands(nil) {
		cases = append(cases, []string{c.name, "--help"}, []string{c.name, "-h"})
	}
	for _, args := range cases {
		out, errs, code := runCmd(t, args...)
		if code != 0 || !strings.Contains(out, "usage: analyzer") || errs != "" {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q", args, code, len(out), errs)
		}
	}
	if out, errs, code := runCmd(t); code != 1 || out != "" || !strings.Contains(errs, "usage: analyzer") {
		t.Errorf("no command: exit %d, stdout %q, stderr %d bytes", code, out, len(errs))
	}
}
