package ruletest

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
)

// CheckCatalog runs every catalog entry's test: its example, read as
// `analyzer diagnose` reads a log (framing, joining, parsing), must give
// exactly the values its yields lists, fact by fact (a number fact's values
// compared as numbers); an entry without facts must match its example.
// Each problem names the entry's example at file:line.
func CheckCatalog(ctx context.Context, p *rule.Pack) []rule.Problem {
	var out []rule.Problem
	for _, e := range p.Entries {
		if msg := CheckEntry(ctx, p, e); msg != "" {
			out = append(out, rule.Problem{File: e.File, Line: e.ExampleLine, Column: e.ExampleColumn, Message: "entry " + e.ID + ": " + msg})
		}
	}
	return out
}

// CheckEntry runs one entry's test and says what is wrong ("" when it
// passes).
func CheckEntry(ctx context.Context, p *rule.Pack, e *rule.Entry) string {
	got, matched, err := ExampleYields(ctx, e)
	if err != nil {
		return fmt.Sprintf("reading the example: %v", err)
	}
	if !matched {
		return "the example does not match (read as a log line: the matcher runs on the message, after the parser strips prefixes)"
	}
	want := map[string][]string{}
	for f, vals := range e.Yields {
		number := false
		if d := p.Facts[f]; d != nil {
			number = d.Type == "number"
		}
		for _, v := range vals {
			want[f] = append(want[f], rule.NormalValue(number, yamlValue(v)))
		}
	}
	var diffs []string
	for _, f := range unionKeys(got, want) {
		g, w := sorted(got[f]), sorted(want[f])
		if !slices.Equal(g, w) {
			diffs = append(diffs, fmt.Sprintf("%s: yields %s, the example gives %s", f, quoteList(w), quoteList(g)))
		}
	}
	return strings.Join(diffs, "; ")
}

// ExampleYields reads an entry's example as diagnose reads a log and
// returns the values the entry takes from it, per fact, and whether its
// matcher matched at all.
func ExampleYields(ctx context.Context, e *rule.Entry) (map[string][]string, bool, error) {
	text := e.Example
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	got := map[string][]string{}
	matched := false
	file := pipeline.File{Path: "example.log", Node: "example", Data: []byte(text)}
	_, err := pipeline.ReplayFiles(ctx, []pipeline.File{file}, pipeline.Options{Cluster: rule.DefaultCluster}, func(ev *parsers.Event) error {
		matched = matched || e.Matches(ev)
		for f, vals := range e.Yield(ev) {
			for _, v := range vals {
				if !slices.Contains(got[f], v) {
					got[f] = append(got[f], v)
				}
			}
		}
		return nil
	})
	return got, matched, err
}

// yamlValue spells a YAML scalar of yields as the engine spells values.
func yamlValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func unionKeys(a, b map[string][]string) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func sorted(v []string) []string {
	out := slices.Clone(v)
	sort.Strings(out)
	return slices.Compact(out)
}

func quoteList(v []string) string {
	if len(v) == 0 {
		return "nothing"
	}
	q := make([]string, len(v))
	for i, s := range v {
		q[i] = strconv.Quote(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// RunCatalog runs the tests of the catalog entries loaded from files under
// dir (every entry when dir is ""), one Result each, named by entry id.
func RunCatalog(ctx context.Context, p *rule.Pack, dir string) []Result {
	var out []Result
	for _, e := range p.Entries {
		if dir != "" && !strings.HasPrefix(e.File, strings.TrimSuffix(dir, "/")+"/") {
			continue
		}
		r := Result{File: fmt.Sprintf("%s:%d", e.File, e.ExampleLine), Name: "entry " + e.ID}
		if msg := CheckEntry(ctx, p, e); msg != "" {
			r.Failures = []string{msg}
		}
		out = append(out, r)
	}
	return out
}

// CatalogOverlaps returns a warning for every two regex entries of the pack
// that match each other's example: most likely one message written twice
// (one message, one entry: fold the facts of one into the other). Entries
// that match only the other's example (a generic one such as any NCCL WARN
// line, and a specific message) are not reported.
func CatalogOverlaps(ctx context.Context, p *rule.Pack) []rule.Problem {
	events := make([][]parsers.Event, len(p.Entries))
	for i, e := range p.Entries {
		text := e.Example
		if !strings.HasSuffix(text, "\n") {
			text += "\n"
		}
		file := pipeline.File{Path: "example.log", Node: "example", Data: []byte(text)}
		pipeline.ReplayFiles(ctx, []pipeline.File{file}, pipeline.Options{Cluster: rule.DefaultCluster}, func(ev *parsers.Event) error {
			c := *ev
			c.Fields = maps.Clone(ev.Fields) // the replay reuses the event's map
			events[i] = append(events[i], c)
			return nil
		})
	}
	matches := func(e *rule.Entry, evs []parsers.Event) bool {
		for i := range evs {
			if e.Matches(&evs[i]) {
				return true
			}
		}
		return false
	}
	var out []rule.Problem
	for i, a := range p.Entries {
		if a.Match.Regex == "" {
			continue
		}
		for j := i + 1; j < len(p.Entries); j++ {
			b := p.Entries[j]
			if b.Match.Regex == "" || !matches(a, events[j]) || !matches(b, events[i]) {
				continue
			}
			out = append(out, rule.Problem{File: b.File, Line: b.Line, Column: 1,
				Message: fmt.Sprintf("warning: entries %s (%s:%d) and %s match each other's example: one message written twice? (fold the facts of one into the other)", a.ID, a.File, a.Line, b.ID)})
		}
	}
	return out
}
