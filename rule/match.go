package rule

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

// regexMemo remembers the regex results of the current event: several rules
// often use the very same regex (the GPU total of `ray status`), and it
// should run once.
type regexMemo struct {
	srcs    []string
	results [][][]string
}

func (r *regexMemo) reset() {
	r.srcs, r.results = r.srcs[:0], r.results[:0]
}

func (r *regexMemo) find(m *matcher, text string) [][]string {
	src := m.match.Regex
	for i, s := range r.srcs {
		if s == src {
			return r.results[i]
		}
	}
	all := m.findAll(text)
	r.srcs = append(r.srcs, src)
	r.results = append(r.results, all)
	return all
}

// findAll runs the matcher's regex. A regex that cannot match across lines
// runs only on the lines that hold its literal (a 40-line traceback is
// mostly other lines), and one that starts with (?m)^ runs anchored there:
// Go's regexp would otherwise try every position of every line.
func (m *matcher) findAll(text string) [][]string {
	if !m.lineLocal || (m.lineRe == nil && strings.IndexByte(text, '\n') < 0) {
		return m.re.FindAllStringSubmatch(text, 32)
	}
	re := m.re
	if m.lineRe != nil {
		re = m.lineRe
	}
	var all [][]string
	for rest := text; ; {
		line := rest
		i := strings.IndexByte(rest, '\n')
		if i >= 0 {
			line = rest[:i]
		}
		if m.lineHasLiteral(line) {
			all = append(all, re.FindAllStringSubmatch(line, 32)...)
		}
		if i < 0 || len(all) >= 32 {
			break
		}
		rest = rest[i+1:]
	}
	return all
}

func (m *matcher) lineHasLiteral(line string) bool {
	if len(m.literals) == 0 {
		return true
	}
	for _, l := range m.literals {
		if strings.Contains(line, l) {
			return true
		}
	}
	return false
}

// matchIndex finds the matchers worth running on a text: those whose
// required literal it contains, plus those without one.
//
// Rules are shared between engines (rules test runs many), so everything an
// engine mutates per event lives here, in the engine's own index.
type matchIndex struct {
	ac     *literalScanner
	markOf []uint8 // per pattern: the launch-marker bits it stands for
	byLit  [][]*matcherRef
	always []*matcherRef
	order  map[*Rule]int // position in the rule list: evaluation order
	launch *launchSet    // the launch signals of the rules' pack
	dirty  []uint64      // per rule: event generation in which it last learnt a fact
}

type matcherRef struct {
	r    *Rule
	ri   int // index of r in the rule list
	f    *fact
	m    *matcher
	seen uint64 // event generation that last ran it (a literal can occur twice)
}

// launchOf returns the launch signals of the pack the rules were loaded
// with (none for no rules).
func launchOf(rules []*Rule) *launchSet {
	for _, r := range rules {
		if r.pack != nil && r.pack.launch != nil {
			return r.pack.launch
		}
	}
	return &launchSet{}
}

func buildIndex(rules []*Rule) *matchIndex {
	idx := &matchIndex{order: make(map[*Rule]int, len(rules)), dirty: make([]uint64, len(rules))}
	litIdx := map[string]int{}
	var lits []string
	// intern gives each distinct literal one pattern index.
	intern := func(lit string) int {
		j, ok := litIdx[lit]
		if !ok {
			j = len(lits)
			litIdx[lit] = j
			lits = append(lits, lit)
			idx.byLit = append(idx.byLit, nil)
			idx.markOf = append(idx.markOf, 0)
		}
		return j
	}
	for i, r := range rules {
		idx.order[r] = i
		for _, name := range r.factNames {
			f := r.facts[name]
			for _, m := range f.matches {
				ref := &matcherRef{r: r, ri: i, f: f, m: m}
				if len(m.literals) == 0 {
					idx.always = append(idx.always, ref)
					continue
				}
				for _, lit := range m.literals {
					j := intern(lit)
					idx.byLit[j] = append(idx.byLit[j], ref)
				}
			}
		}
	}
	// Literals are distinct patterns, so a launch signal that is also some
	// matcher's literal shares that literal's pattern.
	idx.launch = launchOf(rules)
	for i, lit := range idx.launch.literals {
		idx.markOf[intern(lit)] |= idx.launch.marks[i]
	}
	idx.ac = newLiteralScanner(lits)
	return idx
}

// extract runs the matchers whose required literal occurs in the text (one
// Aho-Corasick pass finds them all) and records the facts they yield; it
// returns the rules that learnt something, in rule order.
func (e *Engine) extract(ls *launchState, ev *parsers.Event, text string, hits []int) []*Rule {
	idx := e.idx
	e.gen++
	e.memo.reset()
	var dirty []*Rule
	// Matchers run on every event: reading the clock around each cost 8% of
	// diagnose, so their time is taken on one event in timedEvery.
	timing := e.gen%timedEvery == 0
	var vals []string
	var hit string
	try := func(ref *matcherRef) {
		if ref.seen == e.gen {
			return
		}
		ref.seen = e.gen
		if !timing {
			vals, hit = ref.m.extract(ev, text, &e.memo)
		} else {
			start := time.Now()
			vals, hit = ref.m.extract(ev, text, &e.memo)
			if e.timed(ref.r.ID, start, timedEvery) {
				// Once more, without the memo of this event's regex results.
				var memo regexMemo
				again := time.Now()
				ref.m.extract(ev, text, &memo)
				e.slow(ref.r.ID, time.Since(again), ev)
			}
		}
		if len(vals) == 0 {
			return
		}
		if ref.f.number {
			// One spelling per number: "2.0" and "2" are the same fact.
			for i, v := range vals {
				if n, ok := parseNumber(v); ok {
					vals[i] = fmtNumber(n)
				}
			}
		}
		if e.record(ls, ref.r.ID+"/"+ref.f.name, vals, ref.m.spec.Self, ev, ref.f.name, hit) && idx.dirty[ref.ri] != e.gen {
			idx.dirty[ref.ri] = e.gen
			dirty = append(dirty, ref.r)
		}
	}
	for _, ref := range idx.always {
		try(ref)
	}
	for _, p := range hits {
		for _, ref := range idx.byLit[p] {
			try(ref)
		}
	}
	if len(dirty) > 1 {
		sort.Slice(dirty, func(i, j int) bool { return idx.order[dirty[i]] < idx.order[dirty[j]] })
	}
	return dirty
}

// extract returns the values this matcher finds in an event, and the text
// of the first match (to point the evidence at the right line of a
// multi-line record).
func (m *matcher) extract(ev *parsers.Event, text string, memo *regexMemo) ([]string, string) {
	field, all := m.find(ev, text, memo)
	if field != "" {
		return []string{field}, ""
	}
	if len(all) == 0 {
		return nil, ""
	}
	hit := all[0][0]
	vals := make([]string, 0, len(all))
	for _, sm := range all {
		v := sm[m.valueIdx]
		if m.valueExpr != nil {
			var ok bool
			if v, ok = runValue(m.valueExpr, m.groups, sm); !ok {
				continue
			}
		}
		vals = append(vals, v)
	}
	return combine(m.match.Combine, vals), hit
}

// find runs the matcher on an event: the field's value, or every match of
// the regex (nil when the filters exclude the event).
func (m *matcher) find(ev *parsers.Event, text string, memo *regexMemo) (string, [][]string) {
	if m.sources != nil && !m.sources[ev.Source] {
		return "", nil
	}
	if m.levels != nil && !m.levels[ev.Level] {
		return "", nil
	}
	if m.match.Field != "" {
		return eventField(ev, m.match.Field), nil
	}
	for _, lit := range m.also {
		if !strings.Contains(text, lit) {
			return "", nil
		}
	}
	if memo == nil {
		return "", m.findAll(text)
	}
	return "", memo.find(m, text)
}

// runValue computes a value expression over a match's named groups; false
// when it fails.
func runValue(p *vm.Program, groups []string, sm []string) (string, bool) {
	env := make(map[string]any, len(groups))
	for i, g := range groups {
		if g != "" {
			env[g] = sm[i]
		}
	}
	out, err := expr.Run(p, env)
	if err != nil {
		return "", false
	}
	if f, ok := out.(float64); ok {
		return fmtNumber(f), true
	}
	return fmt.Sprint(out), true
}

// combine applies a matcher's combine to the values of one event.
func combine(how string, vals []string) []string {
	switch how {
	case "sum":
		return []string{fmtNumber(reduce(vals, 0, func(a, b float64) float64 { return a + b }))}
	case "count":
		return []string{strconv.Itoa(len(vals))}
	}
	return vals
}

// extract returns the values an entry finds in an event, one list per fact
// (e.outs), and the text of the first match. A number fact's values are
// spelt one way ("2.0" and "2" are the same value).
func (e *Entry) extract(ev *parsers.Event, text string) ([][]string, string) {
	field, all := e.m.find(ev, text, nil)
	if field == "" && len(all) == 0 {
		return nil, ""
	}
	if field != "" {
		all = [][]string{{field}}
	}
	hit := ""
	if field == "" {
		hit = all[0][0]
	}
	out := make([][]string, len(e.outs))
	for i, o := range e.outs {
		vals := make([]string, 0, len(all))
		for _, sm := range all {
			v := ""
			if o.expr != nil {
				var ok bool
				if v, ok = runValue(o.expr, e.m.groups, sm); !ok {
					continue
				}
			} else {
				v = sm[o.group]
			}
			if v = strings.TrimSpace(v); v != "" {
				vals = append(vals, v)
			}
		}
		vals = combine(e.m.match.Combine, vals)
		if o.number {
			for j, v := range vals {
				if n, ok := parseNumber(v); ok {
					vals[j] = fmtNumber(n)
				}
			}
		}
		out[i] = vals
	}
	return out, hit
}

func eventField(ev *parsers.Event, name string) string {
	switch name {
	case "ip":
		return ev.IP
	case "process":
		return ev.Process
	case "pid":
		if ev.PID == 0 {
			return ""
		}
		return strconv.Itoa(ev.PID)
	case "component":
		return ev.Component
	case "source":
		return ev.Source
	case "level":
		return ev.Level
	case "node":
		return ev.Node
	case "container":
		return ev.Container
	}
	return ev.Fields[name]
}

// record adds values of a fact with their evidence; it reports whether
// anything new was learnt.
func (e *Engine) record(ls *launchState, key string, vals []string, self bool, ev *parsers.Event, factName, hit string) bool {
	fs := ls.facts[key]
	if fs == nil {
		fs = &factState{info: map[string]*valueInfo{}}
		ls.facts[key] = fs
	}
	changed := false
	for _, v := range vals {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		vi := fs.info[v]
		if vi == nil {
			if len(fs.values) >= maxValuesPerFact {
				continue
			}
			vi = &valueInfo{}
			fs.info[v] = vi
			fs.values = append(fs.values, v)
			changed = true
		}
		if !contains(vi.nodes, ev.Node) {
			vi.nodes = append(vi.nodes, ev.Node)
			changed = true
		}
		if self && vi.owner == "" {
			vi.owner = ev.Node
			changed = true
		}
		if len(vi.evidence) < maxEvidencePerVal && !hasRecord(vi.evidence, ev.ID) {
			vi.evidence = append(vi.evidence, evidenceOf(ev, factName, hit))
			changed = true
		}
	}
	return changed
}

// evidenceOf points at the physical line of a record that holds the match:
// for a 40-line traceback or a `ray status` block, the line that proved the
// fact is what a reader wants to see.
func evidenceOf(ev *parsers.Event, factName, hit string) finding.Evidence {
	text, line := ev.Text, ev.Line
	if strings.IndexByte(text, '\n') >= 0 && hit != "" {
		firstHitLine := hit
		if i := strings.IndexByte(hit, '\n'); i >= 0 {
			firstHitLine = hit[:i]
		}
		if i := strings.Index(text, firstHitLine); i >= 0 {
			start := strings.LastIndexByte(text[:i], '\n') + 1
			end := strings.IndexByte(text[i:], '\n')
			if end < 0 {
				end = len(text)
			} else {
				end += i
			}
			line += strings.Count(text[:start], "\n")
			text = text[start:end]
		}
	}
	if len(text) > maxEvidenceText {
		text = text[:maxEvidenceText] + " …"
	}
	return finding.Evidence{Fact: factName, Node: ev.Node, File: ev.File, Line: line, Time: ev.Time, Text: text, RecordID: ev.ID}
}
