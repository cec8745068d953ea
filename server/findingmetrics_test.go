package server

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/faultline/faultline/internal/testutil"
)

// activeSeries scrapes /metrics (the text format Prometheus reads) and
// returns the value of faultline_finding_active for the labels sel, as a
// Prometheus selector faultline_finding_active{sel} would; found is false
// when no series matches.
func activeSeries(t *testing.T, httpAddr string, sel map[string]string) (value float64, found bool, err error) {
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return 0, false, fmt.Errorf("the text format does not parse: %w", err)
	}
	mf := mfs["faultline_finding_active"]
	if mf == nil {
		return 0, false, nil
	}
	for _, m := range mf.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range sel {
			match = match && labels[k] == v
		}
		if match && labels["cluster"] != "" && labels["rule"] != "" {
			return m.GetGauge().GetValue(), true, nil
		}
	}
	return 0, false, nil
}

// TestFindingActiveMetric: the seed story's failed launch makes
// faultline_finding_active{cause="ray-node-ip-mismatch",severity="critical"}
// 1, as deploy/prometheus/faultline-rules.yaml selects it; the fixed launch
// coming up makes it 0; faultline_findings_raised_total counts it once.
func TestFindingActiveMetric(t *testing.T) {
	b, err := os.ReadFile("../deploy/prometheus/faultline-rules.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Expr string }
		}
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatal(err)
	}
	// The documented rule's selector, as its labels.
	sel := map[string]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "FaultlineRayNodeIPMismatch" {
				m := regexp.MustCompile(`^faultline_finding_active\{(.*)\} == 1$`).FindStringSubmatch(r.Expr)
				if m == nil {
					t.Fatalf("rule expr %q", r.Expr)
				}
				for _, kv := range strings.Split(m[1], ",") {
					k, v, _ := strings.Cut(strings.TrimSpace(kv), "=")
					sel[k] = strings.Trim(v, `"`)
				}
			}
		}
	}
	if sel["cause"] != "ray-node-ip-mismatch" || sel["severity"] != "critical" {
		t.Fatalf("the documented rule selects %v", sel)
	}
	r := startServer(t, Config{})
	nc := connectRetrying(t, r.addrs.NATS)
	js, _ := jetstream.New(nc)
	publishRecords(t, js, seedRecords(t), 50)
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		v, ok, err := activeSeries(t, r.addrs.HTTP, sel)
		if err != nil || !ok || v != 1 {
			return fmt.Errorf("faultline_finding_active%v = %v (found %v, %v)", sel, v, ok, err)
		}
		return nil
	})
	publishRecords(t, js, seedRecordsOf(t, "../testdata/logs/seed/fixed"), 50)
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		v, ok, err := activeSeries(t, r.addrs.HTTP, sel)
		if err != nil || !ok || v != 0 {
			return fmt.Errorf("after the fixed launch faultline_finding_active%v = %v (found %v, %v)", sel, v, ok, err)
		}
		return nil
	})
	resp, err := http.Get("http://" + r.addrs.HTTP + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, m := range mfs["faultline_findings_raised_total"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "cause" && l.GetValue() == "ray-node-ip-mismatch" {
				n += m.GetCounter().GetValue()
			}
		}
	}
	if n != 1 {
		t.Errorf("faultline_findings_raised_total{cause=ray-node-ip-mismatch} = %v, want 1", n)
	}
}
