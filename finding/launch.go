package finding

import "time"

// Launch outcomes: how far a launch got.
const (
	OutcomeRunning = "running" // nothing decisive yet
	OutcomeReady   = "ready"   // the API server came up
	OutcomeFailed  = "failed"  // a failure signal: an exception that ended a process, an NCCL error code, a death
)

// LaunchSummary is the engine's account of one launch of a cluster,
// whatever its findings: how it ended, when, on which nodes, and for a
// failed one its first failure. It is the one record of a launch that
// `diagnose` (text and --json), the report and the HTTP API show.
type LaunchSummary struct {
	Cluster  string    `json:"cluster"`
	Launch   int       `json:"launch"` // 1-based, as Finding.Launch
	LaunchID string    `json:"launch_id,omitempty"`
	Start    time.Time `json:"start,omitzero"` // its first record
	Outcome  string    `json:"outcome"`        // OutcomeRunning, OutcomeReady or OutcomeFailed
	// Ready is when it came up, ReadyOn the nodes that said so; Failed the
	// time of its first failure signal (a launch that failed once and then
	// came up is ready).
	Ready    time.Time `json:"ready,omitzero"`
	ReadyOn  []string  `json:"ready_on,omitempty"`
	Failed   time.Time `json:"failed,omitzero"`
	LastSeen time.Time `json:"last_seen,omitzero"`
	Nodes    []string  `json:"nodes"` // the nodes whose records belong to it, sorted
	Records  int       `json:"records"`
	// FirstFailure is the record of the first failure signal and
	// FailedProcess the process that printed it, as its prefix names it
	// ("RayWorkerWrapper pid=1394 ip=10.0.0.2").
	FirstFailure  *Evidence `json:"first_failure,omitempty"`
	FailedProcess string    `json:"failed_process,omitempty"`
	// Findings counts its active findings; Cause is the cause of its first
	// root cause (active, or resolved by a later launch), if any.
	Findings int    `json:"findings"`
	Cause    string `json:"cause,omitempty"`
	// Summary says it in one sentence ("launch 1 came up at 2026-04-08
	// 10:02:11 on 2 nodes (spark-1, spark-2)").
	Summary string `json:"summary"`
}
