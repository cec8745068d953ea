// Package report renders findings for people (terminal text) and machines
// (one JSON object per line). diagnose, serve and search share it; the
// human and JSON-lines sinks of package sink write with it.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

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

// Text writes findings for a reader: active root causes grouped by
// severity, each followed by the findings it explains, then the findings
// that a later healthy launch resolved.
func Text(w io.Writer, findings []finding.Finding) {
	TextWithRoots(w, findings, nil)
}

// TextWithRoots is Text for a part of the findings (a live update): the
// root causes of consequences that are not among them come from roots.
func TextWithRoots(w io.Writer, findings []finding.Finding, roots map[string]finding.Finding) {
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
		Block(w, f, byID[f.ExplainedBy])
	}
}

// Block writes one finding. root is the finding it is a consequence of, if any.
func Block(w io.Writer, f finding.Finding, root finding.Finding) {
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
	if len(f.Evidence) > 0 {
		fmt.Fprintf(w, "%s  Evidence:\n", indent)
		for _, e := range f.Evidence {
			first, more := firstLine(e.Text)
			if more > 0 {
				first += fmt.Sprintf("  (+%d lines)", more)
			}
			// A long line is wrapped, not cut: the value that proves the
			// finding (an address, a node id) may be at its end.
			parts := wrap(first, evidenceWidth)
			fmt.Fprintf(w, "%s    %s:%s:%d  %s\n", indent, e.Node, e.File, e.Line, parts[0])
			for _, p := range parts[1:] {
				fmt.Fprintf(w, "%s        %s\n", indent, p)
			}
		}
	}
	if len(f.RuledOut) > 0 {
		fmt.Fprintf(w, "%s  Ruled out:\n", indent)
		for _, r := range f.RuledOut {
			fmt.Fprintf(w, "%s    %s: %s\n", indent, r.Cause, r.Reason)
		}
	}
	para(w, indent+"  ", "Fix", f.Remediation)
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
