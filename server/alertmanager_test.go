package server

import (
	"bytes"
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
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/alertmanager/api/v2/client/alert"
	"github.com/prometheus/alertmanager/api/v2/client/alertgroup"
	"github.com/prometheus/alertmanager/api/v2/models"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/alertmanagertest"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/sink"
)

// notification is what Alertmanager's webhook receiver posts (its webhook
// message, version 4).
type notification struct {
	Status      string            `json:"status"`
	GroupLabels map[string]string `json:"groupLabels"`
	Alerts      []struct {
		Status       string            `json:"status"`
		Labels       map[string]string `json:"labels"`
		Annotations  map[string]string `json:"annotations"`
		StartsAt     time.Time         `json:"startsAt"`
		EndsAt       time.Time         `json:"endsAt"`
		GeneratorURL string            `json:"generatorURL"`
	} `json:"alerts"`
}

// notifications collects what an Alertmanager notifies.
type notifications struct {
	mu  sync.Mutex
	all []notification
}

func (n *notifications) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m notification
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("alertmanager notification %s: %v", b, err)
		}
		n.mu.Lock()
		n.all = append(n.all, m)
		n.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return srv
}

// find returns the notifications with an alert of alertname in status.
func (n *notifications) find(alertname, status string) []notification {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []notification
	for _, m := range n.all {
		for _, a := range m.Alerts {
			if a.Labels["alertname"] == alertname && a.Status == status {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// alertmanagerConfig is an Alertmanager configuration that notifies hook,
// grouping by launch at once, with the inhibit rules that `analyzer rules
// alertmanager-config` prints for the built-in pack.
func alertmanagerConfig(t *testing.T, hook string) string {
	rules, err := rule.Load(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	var inhibit bytes.Buffer
	if err := sink.WriteAlertmanagerConfig(&inhibit, sink.InhibitRules(rule.Explains(rules))); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`route:
  receiver: faultline-test
  group_by: [cluster, launch_id]
  group_wait: 500ms
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: faultline-test
    webhook_configs:
      - url: %s
        send_resolved: true
%s`, hook, inhibit.String())
}

// amAlerts is GET /api/v2/alerts of an Alertmanager (active, suppressed
// and unprocessed alerts; resolved ones are not listed).
func amAlerts(am *alertmanagertest.Server) (models.GettableAlerts, error) {
	ok, err := am.API.Alert.GetAlerts(alert.NewGetAlertsParams().WithTimeout(5 * time.Second))
	if err != nil {
		return nil, err
	}
	return ok.Payload, nil
}

func byName(alerts models.GettableAlerts, name string) *models.GettableAlert {
	for _, a := range alerts {
		if a.Labels["alertname"] == name {
			return a
		}
	}
	return nil
}

// splitAt cuts records (each file's in order) where each file reaches at:
// its records before the first one stamped at or after at (its container
// time, else the time in its text), and the rest.
func splitAt(recs []parsers.Record, at time.Time) (before, after []parsers.Record) {
	late := map[string]bool{}
	for _, r := range recs {
		if !late[r.File] {
			ts := r.Time
			if ts.IsZero() {
				ts = parsers.Parse(r).Time
			}
			late[r.File] = !ts.IsZero() && !ts.Before(at)
		}
		if late[r.File] {
			after = append(after, r)
		} else {
			before = append(before, r)
		}
	}
	return before, after
}

// TestAlertmanagerSeedStory: serve posts the seed story (testdata/logs/seed
// /both: the failed launch, then the fixed one in the same files) to a real
// Alertmanager. It receives the finding's alert with the documented labels
// and annotations, notifies it grouped by launch, keeps it active by the
// re-sends (its end moves on), and notifies it resolved once the fixed
// launch is up.
func TestAlertmanagerSeedStory(t *testing.T) {
	var got notifications
	hook := got.serve(t)
	am := alertmanagertest.Start(t, alertmanagerConfig(t, hook.URL))
	const resend = time.Second
	srv := startServer(t, Config{Alertmanagers: []string{am.URL}, AlertResend: resend, ExternalURL: "https://faultline.example.com/"})
	js, _ := jetstream.New(connectRetrying(t, srv.addrs.NATS))
	failed, fixed := splitAt(seedRecordsOf(t, "../testdata/logs/seed/both"), time.Date(2026, 4, 8, 23, 30, 0, 0, time.UTC))
	if len(failed) == 0 || len(fixed) == 0 {
		t.Fatalf("split of the story: %d records of the failed launch, %d of the fixed one", len(failed), len(fixed))
	}
	publishRecords(t, js, failed, 50)

	const cause = "ray-node-ip-mismatch"
	var f finding.Finding
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		for _, g := range getFindings(t, srv.addrs.HTTP) {
			if g.Cause == cause && g.Status == finding.Active {
				f = g
				return nil
			}
		}
		return fmt.Errorf("no active %s finding yet", cause)
	})
	want := map[string]string{"alertname": cause, "severity": "critical", "cluster": rule.DefaultCluster,
		"launch_id": f.LaunchID, "rule": f.Rule, "finding": f.ID}
	if f.LaunchID == "" {
		t.Fatalf("the finding has no launch_id: %+v", f)
	}
	var firing notification
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		ns := got.find(cause, "firing")
		if len(ns) == 0 {
			return fmt.Errorf("no firing notification of %s (notifications: %d)", cause, len(got.all))
		}
		firing = ns[0]
		return nil
	})
	a := firing.Alerts[0]
	for k, v := range want {
		if a.Labels[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, a.Labels[k], v, a.Labels)
		}
	}
	if gl := firing.GroupLabels; len(gl) != 2 || gl["cluster"] != rule.DefaultCluster || gl["launch_id"] != f.LaunchID {
		t.Errorf("grouped by %v, want the route's cluster and launch_id", gl)
	}
	if a.Annotations["summary"] != f.Summary || a.Annotations["remediation"] != f.Remediation || a.Annotations["title"] != f.Title {
		t.Errorf("annotations %v", a.Annotations)
	}
	link := a.Annotations["evidence"]
	if !strings.HasPrefix(link, "https://faultline.example.com/?") || !strings.Contains(link, "node=spark-1") || a.GeneratorURL != link {
		t.Errorf("evidence link %q, generatorURL %q", link, a.GeneratorURL)
	}
	if d := a.StartsAt.Sub(f.FirstSeen); d < -time.Millisecond || d > time.Millisecond { // the API's times are in ms
		t.Errorf("startsAt %v, want the finding's first_seen %v", a.StartsAt, f.FirstSeen)
	}

	// Active: each re-send moves its end on (4 re-sends ahead).
	var ends []time.Time
	testutil.CheckFor(t, 20*time.Second, 200*time.Millisecond, func() error {
		alerts, err := amAlerts(am)
		if err != nil {
			return err
		}
		x := byName(alerts, cause)
		if x == nil {
			return fmt.Errorf("%s not in Alertmanager's alerts", cause)
		}
		if *x.Status.State != models.AlertStatusStateActive {
			return fmt.Errorf("%s is %s", cause, *x.Status.State)
		}
		end := time.Time(*x.EndsAt)
		if len(ends) == 0 || end.After(ends[len(ends)-1]) {
			ends = append(ends, end)
		}
		if len(ends) < 3 {
			return fmt.Errorf("ends seen %v: not re-sent twice yet", ends)
		}
		return nil
	})
	if until := time.Until(ends[len(ends)-1]); until < 2*resend || until > 4*resend+time.Second {
		t.Errorf("an active alert ends %v from now, want about 4 re-sends (%v)", until, 4*resend)
	}

	// The fixed launch comes up: resolved.
	publishRecords(t, js, fixed, 50)
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		ns := got.find(cause, "resolved")
		if len(ns) == 0 {
			return fmt.Errorf("no resolved notification of %s", cause)
		}
		if ns[0].Status != "resolved" {
			return fmt.Errorf("notification status %s", ns[0].Status)
		}
		return nil
	})
	// Resolved stays resolved: the re-sends stopped.
	time.Sleep(3 * resend)
	alerts, err := amAlerts(am)
	if err != nil {
		t.Fatal(err)
	}
	if x := byName(alerts, cause); x != nil {
		t.Errorf("%s is back in Alertmanager after it resolved: %s until %v", cause, *x.Status.State, x.EndsAt)
	}
	if n := len(got.find(cause, "firing")); n != 1 {
		t.Errorf("%d firing notifications of %s, want 1", n, cause)
	}
}

// TestAlertmanagerInhibitsAConsequence: a real case whose logs prove a root
// cause (ray-node-ip-mismatch) and its consequence (ray-insufficient-gpus,
// explained_by the root) in one launch: with the inhibit rules of `analyzer
// rules alertmanager-config`, Alertmanager holds both in one group and
// mutes the consequence (suppressed, inhibited by the root's alert): only
// the root is notified.
func TestAlertmanagerInhibitsAConsequence(t *testing.T) {
	var got notifications
	hook := got.serve(t)
	am := alertmanagertest.Start(t, alertmanagerConfig(t, hook.URL))
	srv := startServer(t, Config{Alertmanagers: []string{am.URL}})
	js, _ := jetstream.New(connectRetrying(t, srv.addrs.NATS))
	dir := "../testdata/logs/real/02-ray-ip-get-ip-mismatch-l4"
	var recs []parsers.Record
	path := filepath.Join(dir, "vllm.log")
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
	id, _ := parsers.FileIdentity(path)
	o := parsers.Origin{Cluster: "case-02", Node: "l4-head", File: path, FileID: id}
	if err := parsers.ReadFile(path, o, func(r parsers.Record) { recs = append(recs, r) }, nil); err != nil {
		t.Fatal(err)
	}
	publishRecords(t, js, recs, 50)

	const root, consequence = "ray-node-ip-mismatch", "ray-insufficient-gpus"
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		var r, c *finding.Finding
		fs := getFindings(t, srv.addrs.HTTP)
		for i := range fs {
			switch fs[i].Cause {
			case root:
				r = &fs[i]
			case consequence:
				c = &fs[i]
			}
		}
		if r == nil || c == nil || c.ExplainedBy != r.ID {
			return fmt.Errorf("findings %v: want %s explained by %s", verdicts(fs), consequence, root)
		}
		return nil
	})
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		alerts, err := amAlerts(am)
		if err != nil {
			return err
		}
		r, c := byName(alerts, root), byName(alerts, consequence)
		if r == nil || c == nil {
			return fmt.Errorf("alerts %d: %s %v, %s %v", len(alerts), root, r != nil, consequence, c != nil)
		}
		if *r.Status.State != models.AlertStatusStateActive {
			return fmt.Errorf("%s is %s", root, *r.Status.State)
		}
		if *c.Status.State != models.AlertStatusStateSuppressed || !slices.Contains(c.Status.InhibitedBy, *r.Fingerprint) {
			return fmt.Errorf("%s is %s, inhibited by %v (want %s's %s)", consequence, *c.Status.State, c.Status.InhibitedBy, root, *r.Fingerprint)
		}
		return nil
	})
	// One group, the launch's: both alerts in it.
	groups, err := am.API.Alertgroup.GetAlertGroups(alertgroup.NewGetAlertGroupsParams().WithTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups.Payload {
		if g.Labels["cluster"] == "case-02" {
			for _, a := range g.Alerts {
				names = append(names, a.Labels["alertname"])
			}
		}
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{consequence, root}) {
		t.Errorf("the launch's group holds %v", names)
	}
	testutil.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		if len(got.find(root, "firing")) == 0 {
			return fmt.Errorf("%s not notified", root)
		}
		return nil
	})
	time.Sleep(2 * time.Second) // group_interval: a notification of the consequence would be out
	if ns := got.find(consequence, "firing"); len(ns) > 0 {
		t.Errorf("the inhibited %s was notified: %+v", consequence, ns)
	}
}

// TestAlertmanagerSurvivesKill: Alertmanager is down when the seed story's
// finding fires, serve is killed (SIGKILL) after its delivery failed, then
// Alertmanager comes up where serve points and serve is restarted on the
// same data: the alert arrives, the version queued before the kill leaves
// the outbox (posted), and the restarted serve keeps the alert active by
// re-sending it from the stored findings (its end moves on).
func TestAlertmanagerSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the analyzer binary")
	}
	var got notifications
	hook := got.serve(t)
	config := alertmanagerConfig(t, hook.URL)
	alertmanagertest.Binary(t) // built before the clock of the test runs
	bin := buildBin(t, "analyzer")
	amAddr := freePort(t) // nothing listens there yet
	data := t.TempDir()
	natsAddr, httpAddr := freePort(t), freePort(t)
	args := []string{"--data-dir", data, "--nats-listen", natsAddr, "--http", httpAddr, "--log-level", "info",
		"--alertmanager", "http://" + amAddr, "--alert-resend", "1s"}
	p1 := startAnalyzer(t, bin, args...)
	js, _ := jetstream.New(connectRetrying(t, embeddedURL(t, data, natsAddr)))
	publishRecords(t, js, seedRecords(t), 50)
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if n := metricValue(t, httpAddr, "faultline_outbox_failures_total"); n < 1 {
			return fmt.Errorf("no failed delivery yet (%v)", n)
		}
		if n := metricValue(t, httpAddr, "faultline_outbox_waiting"); n < 1 {
			return fmt.Errorf("nothing waiting in the outbox (%v)", n)
		}
		return nil
	})
	p1.cmd.Process.Signal(syscall.SIGKILL)
	p1.cmd.Wait()

	am := alertmanagertest.StartOn(t, config, amAddr)
	startAnalyzer(t, bin, args...)
	const cause = "ray-node-ip-mismatch"
	var ends []time.Time
	testutil.CheckFor(t, time.Minute, 200*time.Millisecond, func() error {
		alerts, err := amAlerts(am)
		if err != nil {
			return err
		}
		x := byName(alerts, cause)
		if x == nil {
			return fmt.Errorf("%s not in Alertmanager after the restart", cause)
		}
		if end := time.Time(*x.EndsAt); len(ends) == 0 || end.After(ends[len(ends)-1]) {
			ends = append(ends, end)
		}
		if len(ends) < 3 {
			return fmt.Errorf("ends seen %v: not re-sent twice since", ends)
		}
		return nil
	})
	testutil.CheckFor(t, 10*time.Second, 100*time.Millisecond, func() error {
		if len(got.find(cause, "firing")) == 0 {
			return fmt.Errorf("%s not notified", cause)
		}
		return nil
	})
	// The version queued before the kill went out from the outbox (the
	// re-sends alone would have brought the alert, not emptied it).
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if n := metricValue(t, httpAddr, "faultline_outbox_waiting"); n != 0 {
			return fmt.Errorf("%v versions still in the outbox", n)
		}
		if n := metricValue(t, httpAddr, "faultline_outbox_posts_total"); n < 1 {
			return fmt.Errorf("no post from the outbox since the restart (%v)", n)
		}
		return nil
	})
}
