package rule

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

func mustParse(t *testing.T, src string) []*Rule {
	t.Helper()
	rs, ps := Parse("test.yaml", []byte(src))
	if len(ps) > 0 {
		t.Fatalf("parse: %v", ps)
	}
	return rs
}

const testRules = `
id: shm
cause: nccl-shm-exhausted
severity: critical
title: shm
explains: [collective-timeout]
facts:
  seg:
    from:
      - regex: 'Error while creating shared memory segment (?P<value>\S+)'
condition: len(seg) > 0
summary: 'segments {{ join .seg ", " }} on {{ join .nodes ", " }}'
remediation: --shm-size
---
id: timeout
cause: collective-timeout
severity: critical
title: timeout
facts:
  op:
    from:
      - regex: 'OpType=(?P<value>\w+)'
condition: len(op) > 0
summary: '{{ first .op }} timed out'
remediation: see root cause
---
id: mismatch
cause: ray-node-ip-mismatch
severity: critical
title: mismatch
facts:
  want:
    from:
      - regex: '''node:(?P<value>[\d.]+)'': 0\.001'
  have:
    from:
      - regex: 'Local node IP: (?P<value>[\d.]+)'
        self: true
condition: 'len(want) > 0 && any(want, # not in have)'
summary: 'want {{ join .want "," }} have {{ .owned.have }}'
remediation: fix
`

var t0 = time.Date(2026, 4, 8, 22, 0, 0, 0, time.UTC)

func ev(node string, sec int, msg string) *parsers.Event {
	e := &parsers.Event{Time: t0.Add(time.Duration(sec) * time.Second), Message: msg, Source: parsers.SourceOther}
	e.Record = parsers.Record{ID: node + msg, Node: node, File: node + ".log", Line: sec + 1, Text: msg, Cluster: "c1"}
	return e
}

func TestEngineCorrelatesAcrossNodesAndDedups(t *testing.T) {
	e := NewEngine(mustParse(t, testRules))
	e.Observe(ev("a", 1, "Local node IP: 10.0.0.1"))
	e.Observe(ev("b", 2, "Local node IP: 10.0.0.2"))
	got := e.Observe(ev("a", 3, "specs=[{'node:192.168.0.1': 0.001, 'GPU': 1.0}]"))
	if len(got) != 1 || got[0].Rule != "mismatch" {
		t.Fatalf("Observe = %+v, want the mismatch finding", got)
	}
	if got[0].Summary != "want 192.168.0.1 have 10.0.0.1 (a), 10.0.0.2 (b)" {
		t.Errorf("summary = %q", got[0].Summary)
	}
	// The same line again (a redelivery) changes nothing; more evidence updates.
	if again := e.Observe(ev("a", 3, "specs=[{'node:192.168.0.1': 0.001, 'GPU': 1.0}]")); len(again) != 0 {
		t.Errorf("a repeated record must not update the finding: %+v", again)
	}
	upd := e.Observe(ev("a", 4, "again specs=[{'node:192.168.0.1': 0.001}]"))
	if len(upd) != 1 || upd[0].Updates != 2 || len(upd[0].Evidence) != 4 {
		t.Errorf("update = %+v", upd)
	}
	if n := len(e.Findings()); n != 1 {
		t.Errorf("%d findings, want 1 (deduplicated)", n)
	}
}

func TestEngineRetractsWhenContradicted(t *testing.T) {
	e := NewEngine(mustParse(t, testRules))
	e.Observe(ev("a", 1, "Local node IP: 10.0.0.1"))
	e.Observe(ev("a", 2, "specs=[{'node:10.0.0.2': 0.001}]"))
	if len(e.Findings()) != 1 {
		t.Fatal("expected a finding before the worker registers")
	}
	got := e.Observe(ev("b", 3, "Local node IP: 10.0.0.2"))
	if len(got) != 1 || got[0].Status != "retracted" || len(e.Findings()) != 0 {
		t.Fatalf("the finding must be retracted once the address is registered: %+v", got)
	}
}

func TestEngineLaunchesDoNotMix(t *testing.T) {
	e := NewEngine(mustParse(t, testRules))
	e.Observe(ev("a", 0, "INFO 04-08 22:00:00 [api_server.py:1] vLLM API server version 0.17.1"))
	e.Observe(ev("a", 1, "specs=[{'node:192.168.0.1': 0.001}]"))
	// A new launch: the request of the first must not meet the IP of the second.
	e.Observe(ev("a", 10, "vLLM API server version 0.17.1"))
	e.Observe(ev("a", 11, "Local node IP: 10.0.0.1"))
	fs := e.Findings()
	if len(fs) != 1 || fs[0].Launch != 1 || strings.Contains(fs[0].Summary, "10.0.0.1") {
		t.Fatalf("facts leaked across launches: %+v", fs)
	}
	// The second launch comes up healthy: the first launch's finding is resolved.
	got := e.Observe(ev("a", 20, "INFO:     Application startup complete."))
	if len(got) != 1 || got[0].Status != "resolved" {
		t.Fatalf("want the launch-1 finding resolved, got %+v", got)
	}
}

// Events without a record ID (built by hand, not by the parsers): the
// launches they open are told apart by node, file, line, time and text, so
// two launches' findings do not share an ID, and the same events give the
// same IDs again.
func TestEngineLaunchesOpenedWithoutRecordIDs(t *testing.T) {
	run := func() []finding.Finding {
		e := NewEngine(mustParse(t, testRules))
		for _, x := range []*parsers.Event{
			ev("a", 0, lnVLLM), ev("a", 1, lnWant1), // launch 1 (a cluster's first: firstLaunch)
			ev("a", 10, lnVLLM), ev("a", 11, lnWant1), // launch 2: the same lines later
			ev("a", 20, lnVLLM), ev("a", 21, lnWant1), // launch 3: again
		} {
			x.ID = ""
			e.Observe(x)
		}
		return e.Findings()
	}
	first := run()
	distinct := map[string]bool{}
	for _, f := range first {
		distinct[f.ID] = true
	}
	if len(first) != 3 || len(distinct) != 3 {
		t.Fatalf("want one finding per launch, with distinct IDs: %q", ids(first))
	}
	if again := run(); !reflect.DeepEqual(ids(again), ids(first)) {
		t.Errorf("the same events gave other IDs:\n got %q\nwant %q", ids(again), ids(first))
	}
}

func TestEnginePrecedence(t *testing.T) {
	e := NewEngine(mustParse(t, testRules))
	// The consequence is seen first; the root cause must still come first.
	e.Observe(ev("a", 1, "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE)"))
	e.Observe(ev("b", 2, "include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-1 (size 9637888)"))
	fs := e.Findings()
	if len(fs) != 2 || fs[0].Rule != "shm" || fs[1].Rule != "timeout" || fs[1].ExplainedBy != fs[0].ID {
		t.Fatalf("order = %v", fs)
	}
}

func TestEngineHotReload(t *testing.T) {
	e := NewEngine(nil)
	if got := e.Observe(ev("a", 1, "OpType=ALLREDUCE")); len(got) != 0 {
		t.Fatal("no rules, no findings")
	}
	e.SetRules(mustParse(t, testRules))
	if got := e.Observe(ev("a", 2, "OpType=ALLGATHER")); len(got) != 1 {
		t.Fatalf("after SetRules: %+v", got)
	}
}

// Engines share compiled rules (rules test runs one engine per case): no
// per-event state may live on the Rule, or the second engine goes blind.
func TestEnginesShareRules(t *testing.T) {
	rules := mustParse(t, testRules)
	for i := 0; i < 3; i++ {
		e := NewEngine(rules)
		if got := e.Observe(ev("a", 1, "OpType=ALLREDUCE")); len(got) != 1 {
			t.Fatalf("engine %d: %d findings, want 1", i, len(got))
		}
	}
}

// A benign-unless-fatal signal: the rule reads the launch outcome, one side
// alone is a warning (tier), and the counterpart raises it to critical.
const tierRules = `
id: ib
cause: nccl-ib-unavailable
severity: '{{ if .ib_expected }}critical{{ else }}warning{{ end }}'
confidence: '{{ if .ib_expected }}high{{ else }}low{{ end }}'
title: ib
facts:
  no_ib:
    from:
      - regex: '(?P<value>NET/IB : No device found)'
  ib_expected:
    from:
      - regex: 'NCCL_IB_HCA set to (?P<value>\S+)'
condition: len(no_ib) > 0 && outcome == "failed"
summary: 'outcome {{ .outcome }}'
remediation: fix
`

func TestEngineOutcomeAndTiers(t *testing.T) {
	e := NewEngine(mustParse(t, tierRules))
	if got := e.Observe(ev("a", 1, "NET/IB : No device found.")); len(got) != 0 {
		t.Fatalf("benign signal on a running launch raised %v", got)
	}
	got := e.Observe(ev("a", 2, "RuntimeError: NCCL error in: init.cc:1, unhandled system error"))
	if len(got) != 1 || got[0].Severity != finding.Warning || got[0].Confidence != "low" || got[0].Summary != "outcome failed" {
		t.Fatalf("after the failure: %+v", got)
	}
	got = e.Observe(ev("b", 3, "NCCL_IB_HCA set to mlx5_0"))
	if len(got) != 1 || got[0].Severity != finding.Critical || got[0].Confidence != "high" {
		t.Fatalf("the counterpart did not raise the tier: %+v", got)
	}

	// A launch that comes up is not failed: the signal stays benign.
	e = NewEngine(mustParse(t, tierRules))
	e.Observe(ev("a", 1, "NET/IB : No device found."))
	e.Observe(ev("a", 2, "INFO:     Application startup complete."))
	if fs := e.Findings(); len(fs) != 0 {
		t.Fatalf("healthy launch got %v", fs)
	}
}

func TestEngineCountsExpressionErrors(t *testing.T) {
	e := NewEngine(mustParse(t, `
id: bad
cause: cuda-oom
severity: critical
title: t
facts:
  n:
    type: number
    from:
      - regex: 'free (?P<value>\d+)'
  m:
    type: number
    from:
      - regex: 'total (?P<value>\d+)'
condition: max(m) > max(n)
summary: s
remediation: r
`))
	e.Observe(ev("a", 1, "free 3"))
	e.Observe(ev("a", 2, "free 4"))
	st := e.Errors()["bad"]
	if st.Count != 2 || st.Last == "" {
		t.Fatalf("errors: %+v", st)
	}
}
