package ruletest

import (
	"context"
	"fmt"
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
