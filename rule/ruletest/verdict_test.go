package ruletest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
)

// replayNodes runs the built-in pack over one log text per node, as
// `analyzer diagnose node-a=… node-b=…` does, and returns the engine and
// every change it announced, in order.
func replayNodes(t *testing.T, logs map[string]string) (*rule.Engine, []finding.Finding) {
	t.Helper()
	rs, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	var files []pipeline.File
	for node, text := range logs {
		files = append(files, pipeline.File{Path: node + ".log", Node: node, Data: []byte(text)})
	}
	e := rule.NewEngine(rs)
	var changes []finding.Finding
	if _, err := pipeline.ReplayFiles(context.Background(), files, pipeline.Options{Cluster: rule.DefaultCluster}, func(ev *parsers.Event) error {
		changes = append(changes, e.Observe(ev)...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return e, changes
}

func activeOf(fs []finding.Finding) []finding.Finding {
	var out []finding.Finding
	for _, f := range fs {
		if f.Status == finding.Active {
			out = append(out, f)
		}
	}
	return out
}

// sgl-project/sglang#8974: NCCL init died with a bare "unhandled system
// error" and nothing in the paste says why.
const bareNCCLError = `File "/sgl-workspace/sglang/python/sglang/srt/distributed/parallel_state.py", line 280, in __init__
self.pynccl_comm = PyNcclCommunicator(
File "/sgl-workspace/sglang/python/sglang/srt/distributed/device_communicators/pynccl.py", line 110, in __init__
self.comm: ncclComm_t = self.nccl.ncclCommInitRank(
File "/sgl-workspace/sglang/python/sglang/srt/distributed/device_communicators/pynccl_wrapper.py", line 375, in ncclCommInitRank
self.NCCL_CHECK(
File "/sgl-workspace/sglang/python/sglang/srt/distributed/device_communicators/pynccl_wrapper.py", line 350, in NCCL_CHECK
raise RuntimeError(f"NCCL error: {error_str}")
RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details)
`

// A failed launch that no rule explains gets the engine's own finding: a
// warning naming the node, the first fatal error with the records before
// it, the causes that came closest and the search to run.
func TestUnexplainedFailure(t *testing.T) {
	e, _ := replayNodes(t, map[string]string{
		// A single node's IB probe (benign alone) brings one rule closer.
		"node-a": "node-a:311:311 [0] NCCL INFO NET/IB : No device found.\n" + bareNCCLError,
	})
	act := activeOf(e.Findings())
	if len(act) != 1 {
		t.Fatalf("want one active finding, got %v", describeAll(act))
	}
	f := act[0]
	if f.Rule != rule.UnexplainedFailure || f.Cause != rule.UnexplainedFailure || f.Severity != finding.Warning || f.Confidence != "low" {
		t.Fatalf("got %s/%s %s %s, want the unexplained-failure warning at low confidence", f.Rule, f.Cause, f.Severity, f.Confidence)
	}
	if got := f.Facts["failed_node"]; len(got) != 1 || got[0] != "node-a" {
		t.Errorf("failed_node %v, want node-a", got)
	}
	if got := f.Facts["fatal_error"]; len(got) != 1 || !strings.HasPrefix(got[0], "RuntimeError: NCCL error: unhandled system error") {
		t.Errorf("fatal_error %v, want the RuntimeError line, not a traceback frame", got)
	}
	facts := map[string]int{}
	for _, ev := range f.Evidence {
		facts[ev.Fact]++
	}
	if facts["first_failure"] != 1 || facts["context"] == 0 {
		t.Errorf("evidence facts %v, want the first failure and the records before it", facts)
	}
	if len(f.Alternatives) == 0 || f.Alternatives[0].Cause != "nccl-ib-unavailable" || !strings.Contains(f.Alternatives[0].Fits, "No device found") {
		t.Errorf("closest causes %+v, want nccl-ib-unavailable with what it found", f.Alternatives)
	}
	for _, want := range []string{"analyzer search --node node-a", `"RuntimeError: NCCL error: unhandled system error"`} {
		if !strings.Contains(f.TellApart, want) || !strings.Contains(f.Remediation, want) {
			t.Errorf("search %q / fix %q lacks %q", f.TellApart, f.Remediation, want)
		}
	}
	if !strings.Contains(f.Summary, "node-a") || !strings.Contains(f.Summary, "nccl-ib-unavailable") {
		t.Errorf("summary %q does not name the node and the closest cause", f.Summary)
	}
	ls, _ := e.Launches()
	if len(ls) != 1 || ls[0].Outcome != finding.OutcomeFailed || ls[0].Cause != rule.UnexplainedFailure ||
		ls[0].FirstFailure == nil || ls[0].FirstFailure.Node != "node-a" || !strings.Contains(ls[0].Summary, "no known cause") {
		t.Errorf("launch summaries %+v", ls)
	}
}

// A cause that arrives after the failure (another node's log, read later)
// retracts the unexplained finding; the launch then has its cause only.
func TestUnexplainedRetractedWhenACauseArrives(t *testing.T) {
	e, changes := replayNodes(t, map[string]string{
		"node-a": "INFO 04-08 10:00:00 [parallel_state.py:1] world_size=2 rank=0\n" + bareNCCLError,
		// NVIDIA/nccl#342: the shared-memory failure on the other rank.
		"node-b": "INFO 04-08 10:00:05 [parallel_state.py:1] world_size=2 rank=1\n" +
			"node-b:2143:2561 [1] include/shm.h:48 NCCL WARN Error while creating shared memory segment nccl-shm-recv-250a7cc850ba9298-0-1-3 (size 9637888)\n",
	})
	var raised, retracted bool
	for _, f := range changes {
		if f.Rule == rule.UnexplainedFailure {
			raised = raised || f.Status == finding.Active
			retracted = retracted || (raised && f.Status == finding.Retracted)
		}
	}
	if !raised || !retracted {
		t.Errorf("unexplained-failure raised %v, retracted %v: want raised on the failure, retracted on its cause", raised, retracted)
	}
	act := activeOf(e.Findings())
	if len(act) != 1 || act[0].Cause != "nccl-shm-exhausted" {
		t.Errorf("want the shm finding alone, got %s", describeAll(act))
	}
}

// A healthy launch gets no unexplained finding, even after a traceback that
// did not stop it, and its summary says it came up, when, on which nodes.
func TestHealthyLaunchSaysSo(t *testing.T) {
	e, _ := replayNodes(t, map[string]string{
		"node-a": "INFO 04-08 10:00:00 [parallel_state.py:1] world_size=2 rank=0\n" + bareNCCLError +
			"INFO 04-08 10:01:00 [launcher.py:28] Application startup complete.\n",
		"node-b": "INFO 04-08 10:00:30 [parallel_state.py:1] world_size=2 rank=1\n" +
			"node-b:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>\n",
	})
	if act := activeOf(e.Findings()); len(act) != 0 {
		t.Errorf("healthy launch got %s", describeAll(act))
	}
	ls, _ := e.Launches()
	if len(ls) != 1 {
		t.Fatalf("want one launch, got %+v", ls)
	}
	if s := ls[0].Summary; ls[0].Outcome != finding.OutcomeReady || ls[0].Records == 0 || !strings.HasPrefix(s, "launch 1 came up at ") ||
		!strings.HasSuffix(s, "-04-08 10:01:00 on 2 nodes (node-a, node-b)") {
		t.Errorf("summary %q (outcome %s, %d records), want: launch 1 came up at …-04-08 10:01:00 on 2 nodes (node-a, node-b)", s, ls[0].Outcome, ls[0].Records)
	}
}

// The seed story: the failed launch and the fixed one of one cluster each
// get their summary, the first with its cause.
func TestLaunchSummariesOfTheSeed(t *testing.T) {
	rs, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	inputs, err := pipeline.ParseArgs([]string{"../../testdata/logs/seed/both"})
	if err != nil {
		t.Fatal(err)
	}
	e := rule.NewEngine(rs)
	if _, err := pipeline.Replay(context.Background(), inputs, pipeline.Options{Cluster: rule.DefaultCluster}, func(ev *parsers.Event) error {
		e.Observe(ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	ls, _ := e.Launches()
	if len(ls) != 2 {
		t.Fatalf("want 2 launches, got %d: %+v", len(ls), ls)
	}
	if ls[0].Outcome != finding.OutcomeFailed || ls[0].Cause != "ray-node-ip-mismatch" || !strings.HasSuffix(ls[0].Summary, ": ray-node-ip-mismatch") {
		t.Errorf("launch 1: %s %s %q", ls[0].Outcome, ls[0].Cause, ls[0].Summary)
	}
	if ls[1].Outcome != finding.OutcomeReady || !strings.HasPrefix(ls[1].Summary, "launch 2 came up at ") || !strings.Contains(ls[1].Summary, "on 2 nodes (spark-1, spark-2)") {
		t.Errorf("launch 2: %s %q", ls[1].Outcome, ls[1].Summary)
	}
}
