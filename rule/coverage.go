package rule

import (
	"strings"

	"github.com/faultline/faultline/parsers"
)

// MaxCoverageLines is how many hit lines a MatcherCoverage keeps as examples.
const MaxCoverageLines = 5

// MatcherCoverage is what one matcher of a rule pack matched in a corpus.
type MatcherCoverage struct {
	Rule  string `json:"rule"`
	File  string `json:"file,omitempty"` // the rule's file
	Fact  string `json:"fact"`
	Index int    `json:"index"` // position in the fact's `from:` list
	Regex string `json:"regex,omitempty"`
	Field string `json:"field,omitempty"`
	Note  string `json:"note,omitempty"`
	// Hits counts the events from which the matcher took a value; a match
	// whose value_expr dropped it (or whose sources/levels exclude the
	// event) is no hit, exactly as the engine records no fact.
	Hits int `json:"hits"`
	// Dropped counts the events whose text the regex matches but from
	// which the matcher took no value: sources or levels exclude the
	// event, or value_expr dropped every match. A matcher with no hit but
	// drops is worth a look: the filter may be wrong.
	Dropped int           `json:"dropped,omitempty"`
	Lines   []CoverageHit `json:"lines,omitempty"` // the first MaxCoverageLines hits
}

// CoverageHit is one real line a matcher took a value from.
type CoverageHit struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Node  string `json:"node,omitempty"`
	Value string `json:"value"`
	Text  string `json:"text"` // the physical line of the record that holds the match
}

// Coverage records, for every matcher of a rule set, the events it takes a
// value from. It runs the engine's own matching (the literal pre-filter and
// (*matcher).extract), so a hit here is a value the engine would record.
// Not safe for concurrent use.
type Coverage struct {
	idx  *matchIndex
	gen  uint64
	memo regexMemo
	of   map[*matcher]*MatcherCoverage
	all  []*MatcherCoverage // rule order, then fact name, then index
}

// NewCoverage prepares coverage of rules.
func NewCoverage(rules []*Rule) *Coverage {
	c := &Coverage{idx: buildIndex(rules), of: map[*matcher]*MatcherCoverage{}}
	for _, r := range rules {
		for _, name := range r.factNames {
			for i, m := range r.facts[name].matches {
				mc := &MatcherCoverage{Rule: r.ID, File: r.File, Fact: name, Index: i,
					Regex: m.match.Regex, Field: m.match.Field, Note: m.spec.Note}
				c.of[m] = mc
				c.all = append(c.all, mc)
			}
		}
	}
	return c
}

// Observe runs every matcher the engine would run on ev and records hits.
func (c *Coverage) Observe(ev *parsers.Event) {
	text := ev.Message
	if text == "" {
		text = ev.Text
	}
	c.gen++
	c.memo.reset()
	try := func(ref *matcherRef) {
		if ref.seen == c.gen {
			return
		}
		ref.seen = c.gen
		vals, hit := ref.m.extract(ev, text, &c.memo)
		value := ""
		for _, v := range vals {
			// The engine records no empty value (a value_expr saying "").
			if v = strings.TrimSpace(v); v != "" {
				value = v
				break
			}
		}
		mc := c.of[ref.m]
		if value == "" {
			if ref.m.re != nil && ref.m.re.MatchString(text) {
				mc.Dropped++
			}
			return
		}
		mc.Hits++
		if len(mc.Lines) < MaxCoverageLines {
			e := evidenceOf(ev, ref.f.name, hit)
			mc.Lines = append(mc.Lines, CoverageHit{File: e.File, Line: e.Line, Node: e.Node, Value: value, Text: e.Text})
		}
	}
	for _, ref := range c.idx.always {
		try(ref)
	}
	for _, p := range c.idx.ac.scan(text) {
		for _, ref := range c.idx.byLit[p] {
			try(ref)
		}
	}
}

// Matchers returns every matcher's coverage, in rule order, then by fact
// name and position.
func (c *Coverage) Matchers() []MatcherCoverage {
	out := make([]MatcherCoverage, len(c.all))
	for i, mc := range c.all {
		out[i] = *mc
		out[i].Lines = append([]CoverageHit(nil), mc.Lines...)
	}
	return out
}

// Unhit returns the matchers that took no value from any event; with
// withoutNote, only those that carry no note either.
func (c *Coverage) Unhit(withoutNote bool) []MatcherCoverage {
	var out []MatcherCoverage
	for _, mc := range c.Matchers() {
		if mc.Hits == 0 && (!withoutNote || mc.Note == "") {
			out = append(out, mc)
		}
	}
	return out
}
