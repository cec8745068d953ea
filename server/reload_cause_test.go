package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/rule"
)

// A cause added by a --rules DIR reaches serve through hot reload: the
// directory starts empty, then gets a causes.yaml with a new cause, the
// catalog entry for its message and a rule naming it; once reloaded, a live
// line raises a finding of that cause, with the cause's fix as remediation.
func TestRuleReloadAddsACause(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, Config{RuleDirs: []string{dir}, ReloadInterval: 20 * time.Millisecond})
	sub := subscribeFindings(t, srv.addrs.NATS)
	live := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	startShipper(t, ctx, srv.addrs.NATS, "", "node-a", live, true)

	if err := os.MkdirAll(filepath.Join(dir, "catalog"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "causes.yaml"), `causes:
  - id: probe-cause
    description: A cause this test adds.
    fix: Do what the probe cause says.
`)
	writeFile(t, filepath.Join(dir, "catalog", "probe.yaml"), `project: probe
facts:
  probe_word: {description: the word after FAULTLINE-CAUSE}
messages:
  - id: probe.test.cause-word
    subsystem: test
    printed_by: this test
    versions: '1.0'
    meaning: cause
    causes: [probe-cause]
    match: {regex: 'FAULTLINE-CAUSE (?P<w>\w+)'}
    facts: {probe_word: $w}
    example: 'FAULTLINE-CAUSE one'
    yields: {probe_word: [one]}
`)
	writeFile(t, filepath.Join(dir, "probe-cause.yaml"), `id: probe-cause-rule
cause: probe-cause
title: 'probe {{ first .probe_word }}'
summary: 'probe {{ first .probe_word }}'
cases:
  - when: len(probe_word) > 0
    severity: warning
    confidence: high
`)
	// The built-in pack's rules and this one (a reload may also happen
	// between the writes above, with fewer).
	builtin, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("rules=%d ", len(builtin)+1)
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(srv.log.String(), "rules reloaded") || !strings.Contains(srv.log.String(), want) {
			return fmt.Errorf("rules not reloaded with %s:\n%s", want, srv.log.String())
		}
		return nil
	})
	appendLine(t, filepath.Join(live, "app.log"), "FAULTLINE-CAUSE two")
	f := waitFinding(t, sub.all, "probe-cause-rule", "")
	if f.Cause != "probe-cause" || f.Remediation != "Do what the probe cause says." || f.Title != "probe two" {
		t.Errorf("finding %+v, want cause probe-cause with its fix", f)
	}
}
