package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/rule/ruletest"
)

// coverageReport is `rules coverage --json`.
type coverageReport struct {
	Corpus  []string             `json:"corpus"`
	Entries []rule.EntryCoverage `json:"entries"`
	Unhit   int                  `json:"unhit"`      // entries without a hit
	Unread  int                  `json:"unread"`     // entries whose facts no rule reads
	Catalog []catalogRow         `json:"catalog"`    // per project and subsystem
	Counted string               `json:"counted_as"` // how the catalog columns are counted
}

// catalogRow is one line of `rules coverage --catalog`: what the catalog
// knows of one project's subsystem.
type catalogRow struct {
	Project    string `json:"project"`
	Subsystem  string `json:"subsystem"`
	Messages   int    `json:"messages"`   // entries
	Classified int    `json:"classified"` // meaning cause or symptom: the message says what went wrong
	Benign     int    `json:"benign"`     // meaning benign or benign-unless-fatal
	Read       int    `json:"read"`       // entries that fill a fact some rule reads
	Hit        int    `json:"hit"`        // entries that matched a line of the corpus
}

const catalogCounting = "messages: catalog entries (one upstream message each); classified: meaning cause or symptom; " +
	"benign: meaning benign or benign-unless-fatal (classified + benign = messages: every entry has one meaning); " +
	"read: entries filling a fact that a loaded rule reads (the engine runs only those); " +
	"hit: entries that took a value from (or, without facts, matched) at least one event of the corpus, read as diagnose reads it"

// coverRules prints, for every catalog entry of the pack, the real lines it
// takes a value from: the repository's real corpus (when run inside a
// checkout) plus the folders given; with catalog, the counts per project and
// subsystem. With strict, an entry that a rule reads and that hits nothing
// is an error (exit 1).
func coverRules(ctx context.Context, rf ruleFlags, paths []string, asJSON, strict, catalog bool, lines int, stdout, stderr io.Writer) error {
	p, err := rf.loadPack()
	if err != nil {
		return err
	}
	corpus := ruletest.DefaultCorpus()
	for _, path := range paths {
		if _, err := os.Stat(path); err != nil {
			return usageError("%v", err)
		}
		corpus = append(corpus, path)
	}
	if len(corpus) == 0 {
		return usageError("no logs: not inside a Faultline checkout (testdata/logs/real), and no LOGDIR given")
	}
	cov, err := ruletest.Coverage(ctx, p, corpus)
	if err != nil {
		return usageError("%v", err)
	}
	all := cov.Entries()
	unhit, unread, unhitRead := 0, 0, 0
	for _, e := range all {
		if e.Hits == 0 {
			unhit++
			if len(e.ReadBy) > 0 {
				unhitRead++
			}
		}
		if len(e.ReadBy) == 0 {
			unread++
		}
	}
	rows := catalogRows(all)
	switch {
	case asJSON:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		rep := coverageReport{Corpus: corpus, Entries: all, Unhit: unhit, Unread: unread, Catalog: rows, Counted: catalogCounting}
		if err := enc.Encode(rep); err != nil {
			return fmt.Errorf("coverage: %w", err)
		}
	case catalog:
		printCatalog(stdout, corpus, rows)
	default:
		printCoverage(stdout, corpus, all, lines)
		fmt.Fprintf(stdout, "\n%d entries, %d hit real lines, %d hit nothing (%d of them read by a rule); %d read by no rule\n",
			len(all), len(all)-unhit, unhit, unhitRead, unread)
	}
	if strict && unhitRead > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d entr(y/ies) read by a rule hit no line", unhitRead)}
	}
	return nil
}

// catalogRows counts the entries per project and subsystem, with a total
// per project and one for the whole catalog.
func catalogRows(all []rule.EntryCoverage) []catalogRow {
	type key struct{ p, s string }
	by := map[key]*catalogRow{}
	add := func(k key, e rule.EntryCoverage) {
		r := by[k]
		if r == nil {
			r = &catalogRow{Project: k.p, Subsystem: k.s}
			by[k] = r
		}
		r.Messages++
		switch e.Meaning {
		case rule.MeaningCause, rule.MeaningSymptom:
			r.Classified++
		default:
			r.Benign++
		}
		if len(e.ReadBy) > 0 {
			r.Read++
		}
		if e.Hits > 0 {
			r.Hit++
		}
	}
	for _, e := range all {
		add(key{e.Project, e.Subsystem}, e)
		add(key{e.Project, "(all)"}, e)
		add(key{"(catalog)", ""}, e)
	}
	out := make([]catalogRow, 0, len(by))
	for _, r := range by {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Project == "(catalog)") != (b.Project == "(catalog)") {
			return b.Project == "(catalog)"
		}
		if a.Project != b.Project {
			return a.Project < b.Project
		}
		if (a.Subsystem == "(all)") != (b.Subsystem == "(all)") {
			return b.Subsystem == "(all)"
		}
		return a.Subsystem < b.Subsystem
	})
	return out
}

func printCatalog(w io.Writer, corpus []string, rows []catalogRow) {
	fmt.Fprintf(w, "corpus: %s\n\n", strings.Join(corpus, ", "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROJECT\tSUBSYSTEM\tMESSAGES\tCLASSIFIED\tBENIGN\tREAD\tHIT\t")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t\n", r.Project, r.Subsystem, r.Messages, r.Classified, r.Benign, r.Read, r.Hit)
	}
	tw.Flush()
	fmt.Fprintf(w, "\nhow counted: %s\n", catalogCounting)
}

func printCoverage(w io.Writer, corpus []string, all []rule.EntryCoverage, lines int) {
	fmt.Fprintf(w, "corpus: %s\n\n", strings.Join(corpus, ", "))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ENTRY\tFACTS\tHITS\tMATCHER")
	for _, e := range all {
		hits := fmt.Sprint(e.Hits)
		if e.Dropped > 0 {
			hits += fmt.Sprintf(" (%d dropped)", e.Dropped)
		}
		facts := strings.Join(e.Facts, ",")
		if facts == "" {
			facts = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", e.Entry, clip(facts, 40), hits, clip(matcherText(e), 100))
		for i, h := range e.Lines {
			if i >= lines {
				break
			}
			// Tabs inside a log line would break the table's columns.
			fmt.Fprintf(tw, "\t\t\t  %s:%d: %s\n", h.File, h.Line, clip(strings.ReplaceAll(h.Text, "\t", " "), 120))
		}
	}
	tw.Flush()
	var unhit []rule.EntryCoverage
	for _, e := range all {
		if e.Hits == 0 {
			unhit = append(unhit, e)
		}
	}
	if len(unhit) == 0 {
		return
	}
	fmt.Fprintf(w, "\nentries without a hit (%d): their example is their only test\n", len(unhit))
	for _, e := range unhit {
		why := fmt.Sprintf("%s:%d", e.File, e.Line)
		if len(e.ReadBy) > 0 {
			why += ", read by " + strings.Join(e.ReadBy, ", ")
		}
		if e.Dropped > 0 {
			why = fmt.Sprintf("the regex matched %d event(s) that sources/levels/expressions dropped; ", e.Dropped) + why
		}
		fmt.Fprintf(w, "  %s %s\n      %s\n", e.Entry, matcherText(e), why)
	}
}

func matcherText(e rule.EntryCoverage) string {
	if e.Field != "" {
		return "field " + e.Field
	}
	return "regex " + e.Regex
}

// clip shortens s to n runes for the table.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
