package rule

import "time"

// Severities, most severe first.
const (
	SeverityCritical = "critical"
	SeverityWarning  = "warning"
	SeverityInfo     = "info"
)

// SeverityRank orders severities: critical 3, warning 2, info 1, unknown 0.
func SeverityRank(s string) int {
	switch s {
	case SeverityCritical:
		return 3
	case SeverityWarning:
		return 2
	case SeverityInfo:
		return 1
	}
	return 0
}

// Evidence is one log record that proved a fact of a finding.
type Evidence struct {
	Fact     string    `json:"fact,omitempty"`
	Node     string    `json:"node"`
	File     string    `json:"file"`
	Line     int       `json:"line"`
	Time     time.Time `json:"time,omitzero"`
	Text     string    `json:"text"`
	RecordID string    `json:"record_id"`
}

// RuledOut names a neighbouring cause that the evidence excludes, and why.
type RuledOut struct {
	Cause  string `json:"cause"`
	Reason string `json:"reason"`
}

// Finding is a diagnosis: a cause, what proved it, and the fix. It is the
// one schema of `diagnose --json`, the findings NATS subject, the HTTP API
// and the webhook payload.
type Finding struct {
	ID          string              `json:"id"` // stable: rule, cluster, the record that opened the launch, key facts
	Rule        string              `json:"rule"`
	Cause       string              `json:"cause"`
	Severity    string              `json:"severity"`
	Confidence  string              `json:"confidence"`
	Title       string              `json:"title"`
	Summary     string              `json:"summary"`
	Remediation string              `json:"remediation"`
	Cluster     string              `json:"cluster"`
	Launch      int                 `json:"launch"`              // 1-based launch number within the cluster, for people
	LaunchID    string              `json:"launch_id,omitempty"` // the launch's identity: from the record that opened it, never a counter
	Nodes       []string            `json:"nodes"`
	Facts       map[string][]string `json:"facts"`
	RuledOut    []RuledOut          `json:"ruled_out"`
	Evidence    []Evidence          `json:"evidence"`
	ExplainedBy string              `json:"explained_by,omitempty"` // id of the root-cause finding this one is a consequence of
	Status      string              `json:"status"`                 // "active", or "resolved" once a later launch came up healthy
	FirstSeen   time.Time           `json:"first_seen,omitzero"`
	LastSeen    time.Time           `json:"last_seen,omitzero"`
	Updates     int                 `json:"updates"` // how many times new evidence changed it
	// Revision counts the versions announced: 1 when first announced, +1
	// per announced change (set by sink.Changes; 0 until announced).
	Revision int `json:"revision,omitempty"`
}
