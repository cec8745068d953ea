package rule

import (
	"slices"
	"strings"

	"github.com/faultline/faultline/parsers"
)

// MaxCoverageLines is how many hit lines an EntryCoverage keeps as examples.
const MaxCoverageLines = 5

// EntryCoverage is what one catalog entry matched in a corpus.
type EntryCoverage struct {
	Entry     string   `json:"entry"`
	Project   string   `json:"project"`
	Subsystem string   `json:"subsystem"`
	Meaning   string   `json:"meaning"`
	File      string   `json:"file,omitempty"` // the catalog file
	Line      int      `json:"line,omitempty"`
	Facts     []string `json:"facts,omitempty"`   // the facts it fills
	ReadBy    []string `json:"read_by,omitempty"` // the rules that read one of them
	Regex     string   `json:"regex,omitempty"`
	Field     string   `json:"field,omitempty"`
	// Hits counts the events from which the entry took a value (an entry
	// without facts: the events it matched); a match whose expressions
	// dropped every value (or whose sources/levels exclude the event) is no
	// hit, exactly as the engine records no fact.
	Hits int `json:"hits"`
	// Dropped counts the events whose text the regex matches but from
	// which the entry took no value: sources or levels exclude the event,
	// or the expressions dropped every match. An entry with no hit but
	// drops is worth a look: the filter may be wrong.
	Dropped int           `json:"dropped,omitempty"`
	Lines   []CoverageHit `json:"lines,omitempty"` // the first MaxCoverageLines hits
}

// CoverageHit is one real line an entry took a value from.
type CoverageHit struct {
	File  string `json:"file"`
	Line  int    `json:"line"`
	Node  string `json:"node,omitempty"`
	Value string `json:"value,omitempty"`
	Text  string `json:"text"` // the physical line of the record that holds the match
}

// Coverage records, for every entry of a pack's catalog (whether a rule
// reads it or not), the events it takes a value from. It runs the engine's
// own matching (the literal pre-filter and (*Entry).extract), so a hit here
// is a value the engine would record. Not safe for concurrent use.
type Coverage struct {
	idx *matchIndex
	gen uint64
	of  map[*Entry]*EntryCoverage
	all []*EntryCoverage // catalog order
}

// NewCoverage prepares coverage of a pack's catalog.
func NewCoverage(p *Pack) *Coverage {
	c := &Coverage{idx: &matchIndex{}, of: map[*Entry]*EntryCoverage{}}
	readBy := map[string][]string{}
	for _, r := range p.Rules {
		for _, f := range r.factNames {
			readBy[f] = append(readBy[f], r.ID)
		}
	}
	var refs []*entryRef
	for _, e := range p.Entries {
		ec := &EntryCoverage{Entry: e.ID, Project: e.Project, Subsystem: e.Subsystem, Meaning: e.Meaning,
			File: e.File, Line: e.Line, Facts: e.FactNames(), Regex: e.Match.Regex, Field: e.Match.Field}
		for _, f := range ec.Facts {
			for _, r := range readBy[f] {
				if !slices.Contains(ec.ReadBy, r) {
					ec.ReadBy = append(ec.ReadBy, r)
				}
			}
		}
		slices.Sort(ec.ReadBy)
		c.of[e] = ec
		c.all = append(c.all, ec)
		refs = append(refs, &entryRef{e: e})
	}
	c.idx.index(refs)
	return c
}

// Observe runs every entry the engine would run on ev and records hits.
func (c *Coverage) Observe(ev *parsers.Event) {
	text := ev.Message
	if text == "" {
		text = ev.Text
	}
	c.gen++
	try := func(ref *entryRef) {
		if ref.seen == c.gen {
			return
		}
		ref.seen = c.gen
		field, all := ref.e.m.find(ev, text)
		matched := field != "" || len(all) > 0
		value, hit := "", ""
		if len(ref.e.outs) == 0 {
			if !matched {
				if ref.e.m.re != nil && ref.e.m.re.MatchString(text) {
					c.of[ref.e].Dropped++
				}
				return
			}
			if len(all) > 0 {
				value, hit = all[0][0], all[0][0]
			} else {
				value = field
			}
		} else {
			vals, h := ref.e.extract(ev, text, nil)
			hit = h
			for _, vs := range vals {
				for _, v := range vs {
					// The engine records no empty value.
					if v = strings.TrimSpace(v); v != "" && value == "" {
						value = v
					}
				}
			}
		}
		ec := c.of[ref.e]
		if value == "" {
			if ref.e.m.re != nil && ref.e.m.re.MatchString(text) {
				ec.Dropped++
			}
			return
		}
		ec.Hits++
		if len(ec.Lines) < MaxCoverageLines {
			e := evidenceOf(ev, "", hit)
			ec.Lines = append(ec.Lines, CoverageHit{File: e.File, Line: e.Line, Node: e.Node, Value: value, Text: e.Text})
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

// Entries returns every entry's coverage, in catalog order.
func (c *Coverage) Entries() []EntryCoverage {
	out := make([]EntryCoverage, len(c.all))
	for i, ec := range c.all {
		out[i] = *ec
		out[i].Lines = append([]CoverageHit(nil), ec.Lines...)
	}
	return out
}

// Unhit returns the entries that took no value from any event.
func (c *Coverage) Unhit() []EntryCoverage {
	var out []EntryCoverage
	for _, ec := range c.Entries() {
		if ec.Hits == 0 {
			out = append(out, ec)
		}
	}
	return out
}
