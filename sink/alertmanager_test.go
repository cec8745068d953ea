package sink

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/alertmanager/api/v2/client/alert"
	"github.com/prometheus/alertmanager/api/v2/models"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/alertmanagertest"
	"github.com/faultline/faultline/internal/testutil"
)

func TestInhibitRules(t *testing.T) {
	for _, c := range []struct {
		name     string
		explains map[string][]string
		want     []string // source -> target matchers
	}{
		{"one", map[string][]string{"ip": {"timeout"}}, []string{`alertname="ip" -> alertname="timeout"`}},
		{"several, sorted, once each", map[string][]string{"ip": {"timeout", "gpus", "timeout"}},
			[]string{`alertname="ip" -> alertname=~"gpus|timeout"`}},
		{"mutual: neither", map[string][]string{"a": {"b", "c"}, "b": {"a"}}, []string{`alertname="a" -> alertname="c"`}},
		{"never itself", map[string][]string{"a": {"a"}}, nil},
		{"regexp characters quoted", map[string][]string{"a": {"x.y", "z+"}}, []string{`alertname="a" -> alertname=~"x\\.y|z\\+"`}},
		{"none", map[string][]string{"a": nil}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, r := range InhibitRules(c.explains) {
				if !slices.Equal(r.Equal, []string{"cluster", "launch_id"}) {
					t.Errorf("equal %v", r.Equal)
				}
				got = append(got, strings.Join(r.SourceMatchers, ",")+" -> "+strings.Join(r.TargetMatchers, ","))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("got %q\nwant %q", got, c.want)
			}
		})
	}
}

// TestWriteAlertmanagerConfig: the YAML reads back as the rules, under
// Alertmanager's key inhibit_rules.
func TestWriteAlertmanagerConfig(t *testing.T) {
	rules := InhibitRules(map[string][]string{"ip": {"timeout", "gpus"}, "shm": {"timeout"}})
	var b strings.Builder
	if err := WriteAlertmanagerConfig(&b, rules); err != nil {
		t.Fatal(err)
	}
	var back struct {
		InhibitRules []InhibitRule `yaml:"inhibit_rules"`
	}
	if err := yaml.Unmarshal([]byte(b.String()), &back); err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if fmt.Sprint(back.InhibitRules) != fmt.Sprint(rules) {
		t.Errorf("read back %v, want %v", back.InhibitRules, rules)
	}
}

func TestAlertOfAFinding(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	first := time.Date(2026, 4, 8, 22, 41, 47, 0, time.UTC)
	f := finding.Finding{ID: "f1", Rule: "ray-node-ip-mismatch", Cause: "ray-node-ip-mismatch", Severity: finding.Critical,
		Cluster: "prod", LaunchID: "l1", Title: "T", Summary: "S", Remediation: "R", Nodes: []string{"spark-1", "spark-2"},
		FirstSeen: first, LastSeen: first.Add(time.Hour), Status: finding.Active}
	am, err := NewAlertmanager("http://am:9093", AlertmanagerOptions{Resend: time.Minute, ExternalURL: "https://fl.example.com/"})
	if err != nil {
		t.Fatal(err)
	}
	a := am.Alert(f, now)
	wantLabels := models.LabelSet{"alertname": "ray-node-ip-mismatch", "severity": "critical", "cluster": "prod",
		"launch_id": "l1", "rule": "ray-node-ip-mismatch", "finding": "f1"}
	if !sameLabels(a.Labels, wantLabels) {
		t.Errorf("labels %v", a.Labels)
	}
	link := "https://fl.example.com/?node=spark-1&node=spark-2&since=2026-04-08T22%3A40%3A47Z&until=2026-04-08T23%3A42%3A47Z"
	if a.Annotations["summary"] != "S" || a.Annotations["remediation"] != "R" || a.Annotations["title"] != "T" ||
		a.Annotations["evidence"] != link || string(a.GeneratorURL) != link {
		t.Errorf("annotations %v, generatorURL %s", a.Annotations, a.GeneratorURL)
	}
	if _, ok := a.Annotations["explained_by"]; ok {
		t.Errorf("explained_by on a root cause")
	}
	if !time.Time(a.StartsAt).Equal(first) || !time.Time(a.EndsAt).Equal(now.Add(4*time.Minute)) {
		t.Errorf("active: %v to %v", a.StartsAt, a.EndsAt)
	}
	f.Status, f.ExplainedBy = finding.Resolved, "root"
	a = am.Alert(f, now)
	if !time.Time(a.EndsAt).Equal(now) || a.Annotations["explained_by"] != "root" {
		t.Errorf("resolved: ends %v, annotations %v", a.EndsAt, a.Annotations)
	}
	// Log times ahead of this clock: it starts now, not after it ends.
	f.FirstSeen, f.Status = now.Add(time.Hour), finding.Active
	if a = am.Alert(f, now); !time.Time(a.StartsAt).Equal(now) {
		t.Errorf("a future first_seen starts at %v", a.StartsAt)
	}
	for _, bad := range []string{"am:9093", "ftp://am", "http://"} {
		if _, err := NewAlertmanager(bad, AlertmanagerOptions{}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// active lists the alertnames and severities Alertmanager holds active.
func active(t *testing.T, am *alertmanagertest.Server) []string {
	t.Helper()
	ok, err := am.API.Alert.GetAlerts(alert.NewGetAlertsParams().WithTimeout(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, a := range ok.Payload {
		if *a.Status.State == models.AlertStatusStateActive {
			out = append(out, a.Labels["alertname"]+"/"+a.Labels["severity"])
		}
	}
	slices.Sort(out)
	return out
}

const amConfig = `route:
  receiver: none
receivers:
  - name: none
`

// TestAlertmanagerLifecycle against a real Alertmanager: a finding whose
// severity rises replaces its alert (the old labels resolved in the same
// post), a re-send from the stored findings keeps it, a resolution posted
// here is not undone by a store that lags behind it, and a resolved
// finding leaves Alertmanager's active alerts.
func TestAlertmanagerLifecycle(t *testing.T) {
	srv := alertmanagertest.Start(t, amConfig)
	am, err := NewAlertmanager(srv.URL, AlertmanagerOptions{Resend: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	f := finding.Finding{ID: "f1", Rule: "r", Cause: "ray-node-ip-mismatch", Severity: finding.Warning, Cluster: "c",
		LaunchID: "l", Status: finding.Active, FirstSeen: time.Now().Add(-time.Minute), Revision: 1}
	expect := func(want ...string) {
		t.Helper()
		testutil.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
			if got := active(t, srv); !slices.Equal(got, want) {
				return fmt.Errorf("active %v, want %v", got, want)
			}
			return nil
		})
	}
	if err := am.Post(ctx, []finding.Finding{f}); err != nil {
		t.Fatal(err)
	}
	expect("ray-node-ip-mismatch/warning")
	crit := f
	crit.Severity, crit.Revision = finding.Critical, 2
	if err := am.Post(ctx, []finding.Finding{crit}); err != nil {
		t.Fatal(err)
	}
	expect("ray-node-ip-mismatch/critical")

	// The store has the critical version: Refresh posts it.
	if err := am.Refresh(ctx, func() []finding.Finding { return []finding.Finding{crit} }); err != nil {
		t.Fatal(err)
	}
	expect("ray-node-ip-mismatch/critical")

	resolved := crit
	resolved.Status, resolved.Revision = finding.Resolved, 3
	if err := am.Post(ctx, []finding.Finding{resolved}); err != nil {
		t.Fatal(err)
	}
	expect()
	// The store still says active (revision 2): no re-send of it.
	am.resentAt = time.Time{}
	if err := am.Refresh(ctx, func() []finding.Finding { return []finding.Finding{crit} }); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	expect()
}
