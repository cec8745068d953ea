// Package report renders findings for people (terminal text) and machines
// (one JSON object per line). diagnose, serve and search share it; the
// human and JSON-lines sinks of package sink write with it.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/faultline/faultline/finding"
)

// JSON writes one finding per line, in the schema of finding.Finding.
func JSON(w io.Writer, findings []finding.Finding) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, f := range findings {
		if f.Nodes == nil {
			f.Nodes = []string{}
		}
		if f.RuledOut == nil {
			f.RuledOut = []finding.RuledOut{}
		}
		if f.Evidence == nil {
			f.Evidence = []finding.Evidence{}
		}
		if err := enc.Encode(f); err != nil {
			return err
		}
	}
	return nil
}

// TextOptions shape the terminal report.
type TextOptions struct {
	// Evidence is how many evidence lines a finding shows (0: DefaultEvidence,
	// negative: all of them); the others are counted, with how to see them.
	Evidence int
	// More says how to see the evidence left out (default: the web UI
	// and --json show all of it).
	More string
}

// DefaultEvidence is how many evidence lines a finding shows by default:
// enough for one line per fact and node of the usual finding.
const DefaultEvidence = 8

// Text writes findings for a reader: active root causes grouped by
// severity, each followed by the findings it explains, then the findings
// that a later healthy launch resolved.
func Text(w io.Writer, findings []finding.Finding) {
	TextWithRoots(w, findings, nil, TextOptions{})
}

// TextWithRoots is Text for a part of the findings (a live update): the
// root causes of consequences that are not among them come from roots.
func TextWithRoots(w io.Writer, findings []finding.Finding, roots map[string]finding.Finding, o TextOptions) {
	byID := map[string]finding.Finding{}
	for id, f := range roots {
		byID[id] = f
	}
	for _, f := range findings {
		byID[f.ID] = f
	}
	section := ""
	for _, f := range findings {
		head := strings.ToUpper(string(f.Severity))
		if f.Status != finding.Active {
			head = "RESOLVED (a later launch came up healthy)"
		}
		if f.ExplainedBy == "" && head != section {
			section = head
			fmt.Fprintf(w, "\n== %s ==\n", head)
		}
		BlockWith(w, f, byID[f.ExplainedBy], o)
	}
}

// Block writes one finding. root is the finding it is a consequence of, if any.
func Block(w io.Writer, f finding.Finding, root finding.Finding) {
	BlockWith(w, f, root, TextOptions{})
}

// BlockWith writes one finding as an engineer reads it: what failed, the
// fix, the facts per node it rests on, then the evidence in time order
// (shortened, the failure point marked) and what was ruled out.
func BlockWith(w io.Writer, f finding.Finding, root finding.Finding, o TextOptions) {
	indent := ""
	if f.ExplainedBy != "" {
		indent = "    "
		fmt.Fprintf(w, "\n%s↳ consequence of %s (%s)\n", indent, root.Rule, root.ID)
	} else {
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%s[%s] %s — %s\n", indent, strings.ToUpper(string(f.Severity)), f.Rule, f.Title)
	fmt.Fprintf(w, "%s  cause %s · confidence %s · cluster %s · launch %d · nodes %s · id %s\n",
		indent, f.Cause, f.Confidence, f.Cluster, f.Launch, strings.Join(f.Nodes, ", "), f.ID)
	para(w, indent+"  ", "What happened", f.Summary)
	for _, n := range f.Notes {
		para(w, indent+"  ", "Note", n)
	}
	para(w, indent+"  ", "Fix", f.Remediation)
	nodeTable(w, indent+"  ", f.NodeTable())
	nodeTimeline(w, indent+"  ", f)
	evidence(w, indent+"  ", f, o)
	if len(f.RuledOut) > 0 {
		fmt.Fprintf(w, "%s  Ruled out:\n", indent)
		for _, r := range f.RuledOut {
			fmt.Fprintf(w, "%s    %s: %s\n", indent, r.Cause, r.Reason)
		}
	}
}

// FactLabel is how a fact's name reads in a table head: registered_ip is
// "registered ip".
func FactLabel(name string) string { return strings.ReplaceAll(name, "_", " ") }

// OtherRow is the head of a table's row of values no node owns: the
// launch's own (a placement request, the cluster's GPU total), stated in
// some node's logs ("(no one node)" read as a row about no machine).
const OtherRow = "(cluster)"

// nodeTable writes the per-node table of the facts (finding.Table), one
// column per fact, aligned; a value no node owns says whose logs state it.
func nodeTable(w io.Writer, indent string, t finding.Table) {
	if len(t.Rows) == 0 {
		return
	}
	head := append([]string{"node"}, t.Columns...)
	rows := [][]string{head}
	for i := range head[1:] {
		head[i+1] = FactLabel(head[i+1])
	}
	for _, r := range t.Rows {
		name := r.Node
		if name == "" {
			name = OtherRow
		}
		line := []string{name}
		for _, c := range r.Cells {
			v := strings.Join(c.Values, ", ")
			if v == "" {
				v = "-"
			} else if len(c.SeenOn) > 0 {
				v += " (logs of " + strings.Join(c.SeenOn, ", ") + ")"
			}
			line = append(line, v)
		}
		rows = append(rows, line)
	}
	width := make([]int, len(head))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	fmt.Fprintf(w, "%sPer node:\n", indent)
	for _, r := range rows {
		var b strings.Builder
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(c)+2))
			}
		}
		fmt.Fprintf(w, "%s  %s\n", indent, strings.TrimRight(b.String(), " "))
	}
}

// nodeTimeline writes the launch per node as the evidence tells it: when
// each node first stated each fact, and the value, with the failure point
// marked on the node that showed it.
//
//	spark-1  22:41:05 tried node ip 192.168.200.12 → 22:41:07 registered ip 10.1.230.180 → ✗ 22:41:47 requested node 192.168.200.12
func nodeTimeline(w io.Writer, indent string, f finding.Finding) {
	fail := FailurePoint(f.Evidence, f.FirstSeen)
	type step struct {
		text string
		at   int
	}
	var nodes []string
	steps := map[string][]step{}
	seen := map[string]bool{}
	for i, e := range f.Evidence {
		key := e.Node + "\x00" + e.Fact
		if e.Time.IsZero() || (seen[key] && i != fail) {
			continue
		}
		seen[key] = true
		if _, ok := steps[e.Node]; !ok {
			nodes = append(nodes, e.Node)
		}
		label := e.Time.UTC().Format("15:04:05")
		if e.Fact != "" {
			label += " " + FactLabel(e.Fact)
		}
		if v := factValue(f.NodeFacts, e); v != "" {
			label += " " + v
		}
		if i == fail {
			label = "✗ " + label
		}
		steps[e.Node] = append(steps[e.Node], step{label, i})
	}
	// One node's timeline is its evidence list again: this is for what
	// several nodes did side by side.
	if len(nodes) < 2 {
		return
	}
	width := 0
	for _, n := range nodes {
		width = max(width, utf8.RuneCountInString(n))
	}
	fmt.Fprintf(w, "%sTimeline (UTC), per node:\n", indent)
	for _, n := range nodes {
		parts := make([]string, len(steps[n]))
		for i, s := range steps[n] {
			parts[i] = s.text
		}
		line := n + strings.Repeat(" ", width-utf8.RuneCountInString(n)+2) + strings.Join(parts, " → ")
		for i, p := range wrap(line, evidenceWidth) {
			if i > 0 {
				p = strings.Repeat(" ", width+2) + p
			}
			fmt.Fprintf(w, "%s  %s\n", indent, p)
		}
	}
}

// factValue is the value of e's fact that e's record states: the node
// fact first stated by it, else one whose value its text holds.
func factValue(nfs []finding.NodeFact, e finding.Evidence) string {
	for _, nf := range nfs {
		if nf.Fact == e.Fact && nf.RecordID == e.RecordID {
			return nf.Value
		}
	}
	for _, nf := range nfs {
		if nf.Fact == e.Fact && strings.Contains(e.Text, nf.Value) {
			return nf.Value
		}
	}
	return ""
}

// ShownEvidence picks the evidence a short view shows, in time order: all
// of it when it fits in n, else the first record of each fact on each node
// (the lines that say who stated what), then the earliest others, up to n.
// n < 0 is all of it.
func ShownEvidence(evs []finding.Evidence, n int) []finding.Evidence {
	if n < 0 || len(evs) <= n {
		return evs
	}
	keep := make([]bool, len(evs))
	seen := map[string]bool{}
	k := 0
	for i, e := range evs {
		if key := e.Fact + "\x00" + e.Node; !seen[key] && k < n {
			seen[key], keep[i] = true, true
			k++
		}
	}
	for i := range evs {
		if k < n && !keep[i] {
			keep[i] = true
			k++
		}
	}
	var out []finding.Evidence
	for i, e := range evs {
		if keep[i] {
			out = append(out, e)
		}
	}
	return out
}

// FailurePoint is the index of the evidence that marks where the launch
// failed: the last record at or before the time the finding was first
// proven (the line that made the case), -1 when none is timed.
func FailurePoint(evs []finding.Evidence, firstSeen time.Time) int {
	at := -1
	for i, e := range evs {
		if !e.Time.IsZero() && !firstSeen.IsZero() && !e.Time.After(firstSeen) {
			at = i
		}
	}
	return at
}

func evidence(w io.Writer, indent string, f finding.Finding, o TextOptions) {
	if len(f.Evidence) == 0 {
		return
	}
	n := o.Evidence
	if n == 0 {
		n = DefaultEvidence
	}
	shown := ShownEvidence(f.Evidence, n)
	fail := FailurePoint(shown, f.FirstSeen)
	if len(shown) < len(f.Evidence) {
		more := o.More
		if more == "" {
			more = "the web UI and --json show every one"
		}
		fmt.Fprintf(w, "%sEvidence, in time order (%d of %d lines; %s):\n", indent, len(shown), len(f.Evidence), more)
	} else {
		fmt.Fprintf(w, "%sEvidence, in time order:\n", indent)
	}
	for i, e := range shown {
		first, more := firstLine(e.Text)
		if more > 0 {
			first += fmt.Sprintf("  (+%d lines)", more)
		}
		mark := "  "
		if i == fail {
			mark = "✗ "
			first += "   ← failed here"
		}
		when := "            "
		if !e.Time.IsZero() {
			when = e.Time.UTC().Format("15:04:05.000")
		}
		fmt.Fprintf(w, "%s%s%s  %s:%s:%d\n", indent, mark, when, e.Node, e.File, e.Line)
		// A long line is wrapped, not cut: the value that proves the
		// finding (an address, a node id) may be at its end.
		for _, p := range wrap(first, evidenceWidth) {
			fmt.Fprintf(w, "%s      %s\n", indent, p)
		}
	}
}

func para(w io.Writer, indent, title, text string) {
	if text == "" {
		return
	}
	fmt.Fprintf(w, "%s%s:\n", indent, title)
	for _, l := range strings.Split(text, "\n") {
		fmt.Fprintf(w, "%s  %s\n", indent, l)
	}
}

// evidenceWidth is how many characters of an evidence line go on one
// terminal line before it wraps.
const evidenceWidth = 160

// wrap cuts s into pieces of at most width characters (runes), at the last
// space before the limit when there is one, so words and values stay whole;
// a run without spaces longer than width is cut where it must be.
func wrap(s string, width int) []string {
	var out []string
	r := []rune(s)
	for len(r) > width {
		cut := width
		for i := width; i > width/2; i-- {
			if r[i] == ' ' {
				cut = i
				break
			}
		}
		out = append(out, strings.TrimRight(string(r[:cut]), " "))
		r = r[cut:]
		for len(r) > 0 && r[0] == ' ' {
			r = r[1:]
		}
	}
	return append(out, string(r))
}

func firstLine(s string) (string, int) {
	i := strings.IndexByte(s, '\n')
	if i < 0 {
		return s, 0
	}
	return s[:i], strings.Count(s, "\n")
}
