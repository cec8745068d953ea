package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/rule/ruletest"
)

// coverageReport is `rules coverage --json`.
type coverageReport struct {
	Corpus   []string               `json:"corpus"`
	Matchers []rule.MatcherCoverage `json:"matchers"`
	Unhit    int                    `json:"unhit"`         // matchers without a hit
	NoNote   int                    `json:"unhit_no_note"` // of those, without a note
}

// coverRules prints, for every matcher of the rules, the real lines it takes
// a value from: the repository's real corpus (when run inside a checkout)
// plus the folders given. With strict, a matcher that hits nothing and has
// no note is an error (exit 1), as in TestBuiltinMatchersHitRealLines.
func coverRules(ctx context.Context, rf ruleFlags, paths []string, asJSON, strict bool, lines int, stdout, stderr io.Writer) error {
	rules, err := rf.load()
	if err != nil {
		return err
	}
	corpus := ruletest.DefaultCorpus()
	for _, p := range paths {
		if _, err := os.Stat(p); err != nil {
			return usageError("%v", err)
		}
		corpus = append(corpus, p)
	}
	if len(corpus) == 0 {
		return usageError("no logs: not inside a Faultline checkout (testdata/logs/real), and no LOGDIR given")
	}
	cov, err := ruletest.Coverage(ctx, rules, corpus)
	if err != nil {
		return usageError("%v", err)
	}
	all := cov.Matchers()
	unhit, noNote := len(cov.Unhit(false)), len(cov.Unhit(true))
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(coverageReport{Corpus: corpus, Matchers: all, Unhit: unhit, NoNote: noNote}); err != nil {
			return fmt.Errorf("coverage: %w", err)
		}
	} else {
		printCoverage(stdout, corpus, all, lines)
		fmt.Fprintf(stdout, "\n%d matchers, %d hit real lines, %d hit nothing (%d of them without a note)\n",
			len(all), len(all)-unhit, unhit, noNote)
	}
	if strict && noNote > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d matcher(s) hit no line and carry no note", noNote)}
	}
	return nil
}

func printCoverage(w io.Writer, corpus []string, all []rule.MatcherCoverage, lines int) {
	fmt.Fprintf(w, "corpus: %s\n\n", strings.Join(corpus, ", "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tFACT[i]\tHITS\tMATCHER")
	for _, m := range all {
		hits := fmt.Sprint(m.Hits)
		if m.Dropped > 0 {
			hits += fmt.Sprintf(" (%d dropped)", m.Dropped)
		}
		fmt.Fprintf(tw, "%s\t%s[%d]\t%s\t%s\n", m.Rule, m.Fact, m.Index, hits, clip(matcherText(m), 100))
		for i, h := range m.Lines {
			if i >= lines {
				break
			}
			// Tabs inside a log line would break the table's columns.
			fmt.Fprintf(tw, "\t\t\t  %s:%d: %s\n", h.File, h.Line, clip(strings.ReplaceAll(h.Text, "\t", " "), 120))
		}
	}
	tw.Flush()
	var unhit []rule.MatcherCoverage
	for _, m := range all {
		if m.Hits == 0 {
			unhit = append(unhit, m)
		}
	}
	if len(unhit) == 0 {
		return
	}
	fmt.Fprintf(w, "\nmatchers without a hit (%d):\n", len(unhit))
	for _, m := range unhit {
		note := "NO NOTE: add a real log or a note naming the upstream version that prints it"
		if m.Note != "" {
			note = "note: " + m.Note
		}
		if m.Dropped > 0 {
			note = fmt.Sprintf("the regex matched %d event(s) that sources/levels/value_expr dropped; ", m.Dropped) + note
		}
		fmt.Fprintf(w, "  %s %s[%d] %s\n      %s\n", m.Rule, m.Fact, m.Index, matcherText(m), note)
	}
}

func matcherText(m rule.MatcherCoverage) string {
	if m.Field != "" {
		return "field " + m.Field
	}
	return "regex " + m.Regex
}

// clip shortens s to n runes for the table.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
