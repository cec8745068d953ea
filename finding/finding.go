// Package finding holds the diagnosis that every part of Faultline passes
// around: a Finding with its evidence, its severity and its status. It is a
// leaf (standard library only) so that the index, the sinks, the web API and
// the cluster code can carry findings without importing the rule engine.
package finding

import (
	"fmt"
	"time"
)

// Severity says how sure and how urgent a finding is. Its JSON form is the
// plain word.
type Severity string

// Severities, most severe first.
const (
	Critical Severity = "critical"
	Warning  Severity = "warning"
	Info     Severity = "info"
)

// Severities lists the valid severities, most severe first.
var Severities = []Severity{Critical, Warning, Info}

// Rank orders severities: critical 3, warning 2, info 1, unknown 0.
func (s Severity) Rank() int {
	switch s {
	case Critical:
		return 3
	case Warning:
		return 2
	case Info:
		return 1
	}
	return 0
}

// Valid reports whether s is one of the Severities.
func (s Severity) Valid() bool { return s.Rank() > 0 }

// ParseSeverity returns the severity named s, or an error that lists the
// valid words (a typo such as "crtical" must never pass as a warning).
func ParseSeverity(s string) (Severity, error) {
	if v := Severity(s); v.Valid() {
		return v, nil
	}
	return "", fmt.Errorf("severity %q is not one of critical, warning, info", s)
}

// Status is where a finding stands in its lifecycle.
type Status string

const (
	// Active: the evidence holds in the launch it was raised in.
	Active Status = "active"
	// Resolved: a later launch of the same cluster came up healthy.
	Resolved Status = "resolved"
	// Retracted: the evidence no longer makes the case (new facts ruled it
	// out, or the rule that raised it was removed).
	Retracted Status = "retracted"
)

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

// NodeFact is one value of a fact the finding rests on, with the node it
// belongs to: the table an engineer draws by hand (each node's requested
// address, the address Ray registered, its GPUs). Node is set when a node
// stated the value about itself (Ray's "Local node IP" on that node); a
// value no node owns (a cluster total, a placement request) has only
// SeenOn, the nodes whose logs mention it.
type NodeFact struct {
	Fact     string   `json:"fact"`
	Value    string   `json:"value"`
	Node     string   `json:"node,omitempty"`
	SeenOn   []string `json:"seen_on,omitempty"`
	RecordID string   `json:"record_id,omitempty"` // the first record that stated it
}

// RuledOut names a neighbouring cause that the evidence excludes, and why.
type RuledOut struct {
	Cause  string `json:"cause"`
	Reason string `json:"reason"`
}

// Alternative is one of the causes a differential finding weighs: the
// evidence fits more than one cause, so the finding ranks them (1: the one
// it names) and says what would tell them apart (Finding.TellApart). An
// unexplained failure lists the causes that came closest the same way.
type Alternative struct {
	Cause string `json:"cause"`
	Rank  int    `json:"rank"`
	Fits  string `json:"fits,omitempty"`  // what in these logs fits this cause
	Lacks string `json:"lacks,omitempty"` // what would prove it, absent from these logs
}

// Finding is a diagnosis: a cause, what proved it, and the fix. It is the
// one schema of `diagnose --json`, the findings NATS subject, the HTTP API
// and the webhook payload.
type Finding struct {
	ID          string              `json:"id"` // stable: rule, cluster, the record that opened the launch, key facts
	Rule        string              `json:"rule"`
	Cause       string              `json:"cause"`
	Severity    Severity            `json:"severity"`
	Confidence  string              `json:"confidence"`
	Title       string              `json:"title"`
	Summary     string              `json:"summary"`
	Remediation string              `json:"remediation"`
	Cluster     string              `json:"cluster"`
	Launch      int                 `json:"launch"`              // 1-based launch number within the cluster, for people
	LaunchID    string              `json:"launch_id,omitempty"` // the launch's identity: from the record that opened it, never a counter
	Nodes       []string            `json:"nodes"`
	Facts       map[string][]string `json:"facts"`
	// NodeFacts are the values of the facts the rule names as its
	// evidence, in that order, each with its node (see NodeFact).
	NodeFacts   []NodeFact `json:"node_facts,omitempty"`
	RuledOut    []RuledOut `json:"ruled_out"`
	Evidence    []Evidence `json:"evidence"`
	ExplainedBy string     `json:"explained_by,omitempty"` // id of the root-cause finding this one is a consequence of
	Status      Status     `json:"status"`
	FirstSeen   time.Time  `json:"first_seen,omitzero"`
	LastSeen    time.Time  `json:"last_seen,omitzero"`
	Updates     int        `json:"updates"` // how many times new evidence changed it
	// Revision counts the versions announced: 1 when first announced, +1
	// per announced change (set by sink.Changes; 0 until announced).
	Revision int `json:"revision,omitempty"`

	// Alternatives, when set, rank the causes the evidence fits (the
	// finding's own cause first) and TellApart is the command that tells
	// them apart (see Alternative).
	Alternatives []Alternative `json:"alternatives,omitempty"`
	TellApart    string        `json:"tell_apart,omitempty"`

	// Notes are what serve knows about the finding's input that its rule
	// cannot: two shipper processes publishing under the name of one of
	// its nodes (their records read as one node's). Shown beside the
	// summary; a version with more notes is newer (sink.Newer).
	Notes []string `json:"notes,omitempty"`
}
