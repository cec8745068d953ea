package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
)

// TestEndToEnd: two shippers tail files to which the seed scenario is
// appended line by line; the finding arrives on the findings subject, at
// the webhook and on /api/findings, and the findings equal diagnose's.
func TestEndToEnd(t *testing.T) {
	var hookMu sync.Mutex
	var hooks []payload
	hookSrv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p payload
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &p); err != nil || p.Text == "" {
			t.Errorf("webhook body %s: %v (text %q)", b, err, p.Text)
		}
		hookMu.Lock()
		hooks = append(hooks, p)
		first := len(hooks) == 1
		hookMu.Unlock()
		if first { // the first delivery fails: retries must recover it
			http.Error(w, "try again", http.StatusServiceUnavailable)
		}
	}))
	defer hookSrv.Close()

	srv := startServer(t, Config{Webhooks: []string{hookSrv.URL}, WebhookBackoff: 20 * time.Millisecond})
	sub := subscribeFindings(t, srv.addrs.NATS)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := t.TempDir()
	for _, node := range []string{"spark-1", "spark-2"} {
		dir := filepath.Join(live, node)
		os.MkdirAll(dir, 0o755)
		startShipper(t, ctx, srv.addrs.NATS, "", node, dir, false)
		go replayNode(ctx, filepath.Join(seedDir, node), dir, 500*time.Millisecond)
	}

	f := waitFinding(t, sub.all, "ray-node-ip-mismatch", "high")
	if f.Severity != finding.Critical || !slices.Contains(f.Facts["requested_node"], "192.168.200.12") {
		t.Errorf("finding on NATS: severity %s facts %v", f.Severity, f.Facts)
	}
	waitFinding(t, func() []finding.Finding {
		hookMu.Lock()
		defer hookMu.Unlock()
		var fs []finding.Finding
		for _, p := range hooks[min(1, len(hooks)):] {
			fs = append(fs, p.Finding)
		}
		return fs
	}, "ray-node-ip-mismatch", "")

	// Same logs, same verdicts: wait until serve has seen everything.
	want := verdicts(diagnose(t))
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		got := verdicts(getFindings(t, srv.addrs.HTTP))
		if !slices.Equal(got, want) {
			return fmt.Errorf("serve findings\n%s\nwant (diagnose)\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		return nil
	})
	if !strings.Contains(srv.stdout.String(), "ray-node-ip-mismatch") {
		t.Errorf("terminal shows no finding:\n%s", srv.stdout.String())
	}
	// The launch's own account, as diagnose gives it.
	var ls []finding.LaunchSummary
	if code := getJSON(t, "http://"+srv.addrs.HTTP+"/api/launches", "", &ls); code != http.StatusOK || len(ls) != 1 ||
		ls[0].Outcome != finding.OutcomeFailed || ls[0].Cause != "ray-node-ip-mismatch" ||
		!slices.Equal(ls[0].Nodes, []string{"spark-1", "spark-2"}) || ls[0].FirstFailure == nil {
		t.Errorf("GET /api/launches: %d %+v, want the failed launch of spark-1 and spark-2 with its cause", code, ls)
	}
	resp, err := http.Get("http://" + srv.addrs.HTTP + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("healthz: %v %v", resp, err)
	}
}

// TestRuleReload: a broken rule written during a run is rejected with its
// file:line:col, the old rules stay and /metrics says the reload failed; a
// good one takes effect at once and looks at the launch already running
// (issue 23 item 7: the line written while the rule was broken counts too),
// and deleting it retracts its finding.
func TestRuleReload(t *testing.T) {
	dir := t.TempDir()
	srv := startServer(t, Config{RuleDirs: []string{dir}, ReloadInterval: 20 * time.Millisecond})
	sub := subscribeFindings(t, srv.addrs.NATS)
	live := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	startShipper(t, ctx, srv.addrs.NATS, "", "node-a", live, true)
	reloadOK := func(want string) {
		t.Helper()
		testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
			_, m := get(t, "http://"+srv.addrs.HTTP+"/metrics", "")
			if !strings.Contains(m, "\nfaultline_rules_last_reload_success "+want+"\n") {
				return fmt.Errorf("faultline_rules_last_reload_success is not %s", want)
			}
			return nil
		})
	}

	broken := filepath.Join(dir, "probe.yaml")
	writeFile(t, broken, strings.Replace(probeRule, "len(probe) > 0", "len(probe >", 1))
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(srv.log.String(), broken+":9:") {
			return fmt.Errorf("no rejection naming %s:9 in the log", broken)
		}
		return nil
	})
	reloadOK("0")
	appendLine(t, filepath.Join(live, "app.log"), "FAULTLINE-PROBE one")
	// The seed scenario still works (old rules stay) while the probe does not fire.
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if _, body := get(t, "http://"+srv.addrs.HTTP+"/healthz", ""); !strings.Contains(srv.log.String(), "msg=serving") || body == "" {
			return fmt.Errorf("not serving")
		}
		if metricValue(t, srv.addrs.HTTP, "faultline_records_consumed_total") < 1 {
			return fmt.Errorf("the line before the good rule is not consumed yet")
		}
		return nil
	})
	writeFile(t, broken, probeRule)
	reloadOK("1")
	appendLine(t, filepath.Join(live, "app.log"), "FAULTLINE-PROBE two")
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		for _, f := range sub.all() {
			if f.Rule == "probe" && slices.Equal(f.Facts["probe"], []string{"one", "two"}) {
				return nil
			}
		}
		return fmt.Errorf("no probe finding with facts [one two] (the running launch's line before the good rule, and the next)")
	})
	// Deleted: its finding is retracted.
	if err := os.Remove(broken); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		for _, f := range getFindings(t, srv.addrs.HTTP) {
			if f.Rule == "probe" && f.Status == finding.Retracted {
				return nil
			}
		}
		return fmt.Errorf("the probe finding is not retracted after its rule was deleted")
	})
}

const probeRule = `id: probe
cause: port-in-use
title: 'probe {{ first .probe }}'
cases:
  - severity: warning
    confidence: high
evidence: [probe]
summary: 'probe {{ first .probe }}'
condition: len(probe) > 0
remediation: 'none'
---
project: probe
facts:
  probe: {description: the word after FAULTLINE-PROBE}
messages:
  - id: probe.test.word
    subsystem: test
    printed_by: this test
    versions: '1.0'
    meaning: cause
    causes: [port-in-use]
    match: {regex: 'FAULTLINE-PROBE (?P<value>\w+)'}
    facts: {probe: $value}
    example: 'FAULTLINE-PROBE one'
    yields: {probe: [one]}
`

func writeFile(t testing.TB, path, s string) {
	t.Helper()
	// Write and rename: the watcher never sees half a file.
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func appendLine(t testing.TB, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
}
