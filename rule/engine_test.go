package rule

import (
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

// testCatalog fills the facts of the test rules below; its fact names are
// not the built-in catalog's, so only these entries run.
const testCatalog = `project: test
facts:
  seg: {description: a shared memory segment}
  op: {description: a collective's op type}
  want: {description: a requested node address}
  have: {description: a registered node address, self: true}
  t_no_ib: {description: NCCL found no IB device}
  t_ib_expected: {description: an IB HCA was configured}
  n: {type: number, description: a free count}
  m: {type: number, description: a total count}
  seen: {description: a zorblax word}
  addr: {description: an address a connect failed to}
  digit: {description: a digit after x}
messages:
  - id: test.shm.segment
    subsystem: shm
    printed_by: test
    versions: '1.0'
    meaning: cause
    causes: [nccl-shm-exhausted]
    match: {regex: 'Error while creating shared memory segment (?P<value>\S+)'}
    facts: {seg: $value}
    example: 'Error while creating shared memory segment /dev/shm/x'
    yields: {seg: [/dev/shm/x]}
  - id: test.nccl.op
    subsystem: nccl
    printed_by: test
    versions: '1.0'
    meaning: symptom
    match: {regex: 'OpType=(?P<value>\w+)'}
    facts: {op: $value}
    example: 'WorkNCCL(SeqNum=1, OpType=ALLREDUCE)'
    yields: {op: [ALLREDUCE]}
  - id: test.ray.want
    subsystem: ray
    printed_by: test
    versions: '1.0'
    meaning: cause
    causes: [ray-node-ip-mismatch]
    match: {regex: "'node:(?P<value>[\\d.]+)': 0\\.001"}
    facts: {want: $value}
    example: "specs=[{'node:10.0.0.2': 0.001}]"
    yields: {want: [10.0.0.2]}
  - id: test.ray.have
    subsystem: ray
    printed_by: test
    versions: '1.0'
    meaning: benign
    match: {regex: 'Local node IP: (?P<value>[\d.]+)'}
    facts: {have: $value}
    example: 'Local node IP: 10.0.0.2'
    yields: {have: [10.0.0.2]}
  - id: test.ib.none
    subsystem: ib
    printed_by: test
    versions: '1.0'
    meaning: benign-unless-fatal
    causes: [nccl-ib-unavailable]
    match: {regex: 'NET/IB : No device found'}
    facts: {t_no_ib: $0}
    example: 'NET/IB : No device found.'
    yields: {t_no_ib: ['NET/IB : No device found']}
  - id: test.ib.hca
    subsystem: ib
    printed_by: test
    versions: '1.0'
    meaning: benign
    match: {regex: 'NCCL_IB_HCA set to (?P<value>\S+)'}
    facts: {t_ib_expected: $value}
    example: 'NCCL_IB_HCA set to mlx5_0'
    yields: {t_ib_expected: [mlx5_0]}
  - id: test.count.free
    subsystem: count
    printed_by: test
    versions: '1.0'
    meaning: benign
    match: {regex: 'free (?P<value>\d+)'}
    facts: {n: $value}
    example: 'free 3'
    yields: {n: [3]}
  - id: test.count.total
    subsystem: count
    printed_by: test
    versions: '1.0'
    meaning: benign
    match: {regex: 'total (?P<value>\d+)'}
    facts: {m: $value}
    example: 'total 4'
    yields: {m: [4]}
  - id: test.zorblax.word
    subsystem: zorblax
    printed_by: test
    versions: '1.0'
    meaning: benign
    match: {regex: 'zorblax (?P<value>\w+)'}
    facts: {seen: $value}
    example: 'zorblax w1'
    yields: {seen: [w1]}
  - id: test.socket.connect
    subsystem: socket
    printed_by: test
    versions: '1.0'
    meaning: benign
    match: {regex: 'Connect to (?P<value>\S+) failed'}
    facts: {addr: $value}
    example: 'Connect to 10.0.0.2<4444> failed'
    yields: {addr: ['10.0.0.2<4444>']}
  - id: test.x.digit
    subsystem: x
    printed_by: test
    versions: '1.0'
    meaning: benign
    match: {regex: 'x(?P<value>\d)'}
    facts: {digit: $value}
    example: 'x1'
    yields: {digit: ['1']}
`

// mustParse loads rules (YAML documents) with the test catalog, on top of
// the built-in causes and launch signals.
func mustParse(t testing.TB, src string) []*Rule {
	t.Helper()
	p, err := LoadFSPack(fstest.MapFS{
		"catalog/test.yaml": {Data: []byte(testCatalog)},
		"test.yaml":         {Data: []byte(src)},
	}, ".", "t")
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return p.Rules
}

const testRules = `
id: shm
cause: nccl-shm-exhausted
title: shm
explains: [collective-timeout]
summary: 'segments {{ join .seg ", " }} on {{ join .nodes ", " }}'
remediation: --shm-size
cases:
  - when: len(seg) > 0
    severity: critical
    confidence: medium
---
id: timeout
cause: collective-timeout
title: timeout
summary: '{{ first .op }} timed out'
remediation: see root cause
cases:
  - when: len(op) > 0
    severity: critical
    confidence: medium
---
id: mismatch
cause: ray-node-ip-mismatch
title: mismatch
summary: 'want {{ join .want "," }} have {{ .owned.have }}'
remediation: fix
cases:
  - when: 'len(want) > 0 && any(want, # not in have)'
    severity: critical
    confidence: medium
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
title: ib
summary: 'outcome {{ .outcome }}'
remediation: fix
condition: len(t_no_ib) > 0 && outcome == "failed"
cases:
  - when: len(t_ib_expected) > 0
    severity: critical
    confidence: high
  - severity: warning
    confidence: low
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
title: t
summary: s
remediation: r
cases:
  - when: max(m) > max(n)
    severity: critical
    confidence: high
`))
	e.Observe(ev("a", 1, "free 3"))
	e.Observe(ev("a", 2, "free 4"))
	st := e.Errors()["bad"]
	if st.Count != 2 || st.Last == "" {
		t.Fatalf("errors: %+v", st)
	}
}
