package rule

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

// findAll runs the matcher's regex. A regex that cannot match across lines
// runs only on the lines that hold its literal (a 40-line traceback is
// mostly other lines), and one that starts with (?m)^ runs anchored there:
// Go's regexp would otherwise try every position of every line.
func (m *matcher) findAll(text string) [][]string {
	if !m.lineLocal || (m.lineRe == nil && strings.IndexByte(text, '\n') < 0) {
		return m.findIn(text, nil)
	}
	var all [][]string
	for rest := text; ; {
		line := rest
		i := strings.IndexByte(rest, '\n')
		if i >= 0 {
			line = rest[:i]
		}
		if m.lineHasLiteral(line) {
			if m.lineRe != nil {
				all = append(all, m.lineRe.FindAllStringSubmatch(line, 32)...)
			} else {
				all = m.findIn(line, all)
			}
		}
		if i < 0 || len(all) >= 32 {
			break
		}
		rest = rest[i+1:]
	}
	return all
}

// findIn appends the regex's matches in s (at most 32) to all, as
// FindAllStringSubmatch finds them: with leading literals, by the anchored
// regex at each place one occurs (a match starts at one; the leftmost that
// matches is the leftmost match, and the next is looked for from its end).
func (m *matcher) findIn(s string, all [][]string) [][]string {
	if m.bol != nil {
		return m.findAtLines(s, all)
	}
	if m.led == nil {
		return append(all, m.re.FindAllStringSubmatch(s, 32)...)
	}
	for pos, n := 0, 0; n < 32; {
		at := -1
		for _, l := range m.lead {
			if k := strings.Index(s[pos:], l); k >= 0 && (at < 0 || k < at) {
				at = k
			}
		}
		if at < 0 {
			break
		}
		at += pos
		loc := m.led.FindStringSubmatchIndex(s[at:])
		if loc == nil {
			pos = at + 1
			continue
		}
		all = append(all, submatches(s, at, loc))
		n++
		pos = at + loc[1] // past the match: a lead is not empty, neither is a match
	}
	return all
}

// findAtLines is findIn for a regex whose matches start at line starts
// (see startsAtLine): the anchored regex at each line start from where the
// last match ended. A match holds a literal, so it is never empty, and
// the leftmost line start that matches is where the leftmost match is.
func (m *matcher) findAtLines(s string, all [][]string) [][]string {
	for pos, n := 0, 0; n < 32 && pos < len(s); {
		if pos > 0 && s[pos-1] != '\n' {
			k := strings.IndexByte(s[pos:], '\n')
			if k < 0 {
				break
			}
			pos += k + 1
			continue
		}
		loc := m.bol.FindStringSubmatchIndex(s[pos:])
		if loc == nil {
			pos++
			continue
		}
		all = append(all, submatches(s, pos, loc))
		n++
		pos += loc[1]
	}
	return all
}

// submatches is FindStringSubmatch's answer from the index pairs loc of a
// match in s[at:].
func submatches(s string, at int, loc []int) []string {
	sm := make([]string, len(loc)/2)
	for g := range sm {
		if loc[2*g] >= 0 {
			sm[g] = s[at+loc[2*g] : at+loc[2*g+1]]
		}
	}
	return sm
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

// matchIndex finds the catalog entries worth running on a text: those
// whose required literal it contains, plus those without one. Only entries
// that fill a fact some rule reads are in it.
//
// Rules are shared between engines (rules test runs many), so everything an
// engine mutates per event lives here, in the engine's own index.
type matchIndex struct {
	ac     *literalScanner
	markOf []uint8 // per pattern: the launch-marker bits it stands for
	sigOf  [][]int // per pattern: the launch signals (launch.literals) whose literal it is
	byLit  [][]*entryRef
	always []*entryRef
	order  map[*Rule]int // position in the rule list: evaluation order
	dirty  []uint64      // per rule: event generation in which it last learnt a fact
	rules  []*Rule
	launch *launchSet // the launch signals of the rules' pack
	// selfFacts are the facts some entry states as a node's own (self):
	// a value of one is the node's that states it, not its mentioners'.
	selfFacts map[string]bool
	scratch   extractScratch
}

// extractScratch is what Entry.extract reuses from one event to the next in
// an engine (a field matcher runs on every event: its two slices were a
// third of the engine's allocations). What it returns is read before the
// next call, never kept: record copies the values out.
type extractScratch struct {
	one [1]string
	out [][]string
	env map[string]any
}

type entryRef struct {
	e       *Entry
	outs    []int   // the entry's facts that some rule reads (indexes of e.outs)
	readers [][]int // per out: the rules that read it (indexes of the rule list)
	seen    uint64  // event generation that last ran it (a literal can occur twice)
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

// entriesOf returns the catalog entries of the rules' packs (rules loaded
// together share one), each id once.
func entriesOf(rules []*Rule) []*Entry {
	var out []*Entry
	seen := map[string]bool{}
	var packs []*Pack
	for _, r := range rules {
		if r.pack != nil && !slices.Contains(packs, r.pack) {
			packs = append(packs, r.pack)
		}
	}
	for _, p := range packs {
		for _, e := range p.Entries {
			if !seen[e.ID] {
				seen[e.ID] = true
				out = append(out, e)
			}
		}
	}
	return out
}

func buildIndex(rules []*Rule) *matchIndex {
	idx := &matchIndex{order: make(map[*Rule]int, len(rules)), dirty: make([]uint64, len(rules)), rules: rules, selfFacts: map[string]bool{}}
	readers := map[string][]int{}
	for i, r := range rules {
		idx.order[r] = i
		for _, f := range r.factNames {
			readers[f] = append(readers[f], i)
		}
	}
	var refs []*entryRef
	for _, e := range entriesOf(rules) {
		ref := &entryRef{e: e}
		for i, o := range e.outs {
			if rs := readers[o.name]; len(rs) > 0 {
				ref.outs = append(ref.outs, i)
				ref.readers = append(ref.readers, rs)
				if o.self {
					idx.selfFacts[o.name] = true
				}
			}
		}
		if len(ref.outs) > 0 {
			refs = append(refs, ref)
		}
	}
	idx.launch = launchOf(rules)
	idx.index(refs)
	return idx
}

// index builds the literal scanner over the entries' literals and the
// launch signals (a literal shared by both is one pattern).
func (idx *matchIndex) index(refs []*entryRef) {
	litIdx := map[string]int{}
	var lits []string
	intern := func(lit string) int {
		j, ok := litIdx[lit]
		if !ok {
			j = len(lits)
			litIdx[lit] = j
			lits = append(lits, lit)
			idx.byLit = append(idx.byLit, nil)
			idx.markOf = append(idx.markOf, 0)
			idx.sigOf = append(idx.sigOf, nil)
		}
		return j
	}
	for _, ref := range refs {
		if len(ref.e.m.literals) == 0 {
			idx.always = append(idx.always, ref)
			continue
		}
		for _, lit := range ref.e.m.literals {
			j := intern(lit)
			idx.byLit[j] = append(idx.byLit[j], ref)
		}
	}
	if idx.launch != nil {
		for i, lit := range idx.launch.literals {
			j := intern(lit)
			idx.markOf[j] |= idx.launch.marks[i]
			idx.sigOf[j] = append(idx.sigOf[j], i)
		}
	}
	idx.ac = newLiteralScanner(lits)
}

// confirmedHit is launch.confirmed(mark, text) for the text the scanner
// found hits in: only the signals whose literal is among the hits are
// looked at (launch.yaml has some 35 failed signals, and a line holding
// one failed literal would be searched for all of them).
func (idx *matchIndex) confirmedHit(mark int, text string, hits []int) bool {
	ls := idx.launch
	for _, p := range hits {
		if idx.markOf[p]&(1<<mark) == 0 {
			continue
		}
		for _, i := range idx.sigOf[p] {
			if ls.marks[i] != 1<<mark {
				continue
			}
			if s := &ls.signals[mark][ls.at[i]]; s.re == nil || s.matches(text) {
				return true
			}
		}
	}
	return false
}

// extract runs the entries whose required literal occurs in the text (one
// Aho-Corasick pass finds them all) and records the facts they yield; it
// returns the rules that learnt something, in rule order.
func (e *Engine) extract(ls *launchState, ev *parsers.Event, text string, hits []int) []*Rule {
	idx := e.idx
	e.gen++
	var dirty []*Rule
	// Matchers run on every event: reading the clock around each cost 8% of
	// diagnose, so their time is taken on one event in timedEvery.
	timing := e.gen%timedEvery == 0
	var vals [][]string
	var hit string
	try := func(ref *entryRef) {
		if ref.seen == e.gen {
			return
		}
		ref.seen = e.gen
		if !timing {
			vals, hit = ref.e.extract(ev, text, &idx.scratch)
		} else {
			start := time.Now()
			vals, hit = ref.e.extract(ev, text, &idx.scratch)
			if e.timed(ref.e.ID, start, timedEvery) {
				again := time.Now()
				ref.e.extract(ev, text, &idx.scratch)
				e.slow(ref.e.ID, time.Since(again), ev)
			}
		}
		if vals == nil {
			return
		}
		for k, oi := range ref.outs {
			o := &ref.e.outs[oi]
			if len(vals[oi]) == 0 || !e.record(ls, o.name, vals[oi], o.self, ev, hit) {
				continue
			}
			for _, ri := range ref.readers[k] {
				if idx.dirty[ri] != e.gen {
					idx.dirty[ri] = e.gen
					dirty = append(dirty, idx.rules[ri])
				}
			}
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

// find runs the matcher on an event: the field's value, or every match of
// the regex (nil when the filters exclude the event).
func (m *matcher) find(ev *parsers.Event, text string) (string, [][]string) {
	if m.sources != nil && !slices.Contains(m.sources, ev.Source) {
		return "", nil
	}
	if m.levels != nil && !slices.Contains(m.levels, ev.Level) {
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
	return "", m.findAll(text)
}

// exprFields names the event's parsed fields in a value expression; a named
// group of that name hides them.
const exprFields = "fields"

var noFields = map[string]string{}

// runValue computes a value expression over a match's named groups and the
// event's fields; false when it fails.
func runValue(p *vm.Program, groups []string, sm []string, fields map[string]string, sc *extractScratch) (string, bool) {
	var env map[string]any
	if sc != nil {
		if sc.env == nil {
			sc.env = map[string]any{}
		}
		env = sc.env
		clear(env)
	} else {
		env = make(map[string]any, len(groups))
	}
	if fields == nil {
		fields = noFields
	}
	env[exprFields] = fields
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
//
// With sc (the engine's), the field path's slices are reused: valid until
// the next call.
func (e *Entry) extract(ev *parsers.Event, text string, sc *extractScratch) ([][]string, string) {
	field, all := e.m.find(ev, text)
	if field == "" && len(all) == 0 {
		return nil, ""
	}
	if field != "" && (e.m.match.Combine == "" || e.m.match.Combine == "each") {
		// A field (a Ray worker's ip=, NCCL's host) is read on every
		// event: one value, one slice for every fact it fills.
		if field = strings.TrimSpace(field); field == "" {
			return nil, ""
		}
		var one []string
		var out [][]string
		if sc != nil {
			sc.one[0] = field
			one = sc.one[:]
			if cap(sc.out) < len(e.outs) {
				sc.out = make([][]string, len(e.outs))
			}
			out = sc.out[:len(e.outs)]
		} else {
			one = []string{field}
			out = make([][]string, len(e.outs))
		}
		for i, o := range e.outs {
			out[i] = one
			if !o.number {
				continue // parsing it anyway cost an error allocation per event
			}
			if n, ok := parseNumber(field); ok {
				out[i] = []string{fmtNumber(n)}
			}
		}
		return out, ""
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
				if v, ok = runValue(o.expr, e.m.groups, sm, ev.Fields, sc); !ok {
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
// anything new was learnt. What it keeps does not depend on the order the
// records come in (live, a node's lines may arrive after another's): the
// values are listed by their earliest evidence, each keeps its earliest
// records as evidence and the nodes in the order they first said it, and
// the owner is the earliest node to state it about itself — as diagnose,
// which reads every file merged by time, sees them.
func (e *Engine) record(ls *launchState, fact string, vals []string, self bool, ev *parsers.Event, hit string) bool {
	fs := ls.facts[fact]
	if fs == nil {
		fs = &factState{info: map[string]*valueInfo{}}
		ls.facts[fact] = fs
	}
	changed, reorder := false, false
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
		if vi.seenOn(ev) {
			changed = true
		}
		if self && (vi.owner == "" || ev.Time.Before(vi.ownerAt) || ev.Time.Equal(vi.ownerAt) && ev.Node < vi.owner) && vi.owner != ev.Node {
			vi.owner, vi.ownerAt = ev.Node, ev.Time
			changed = true
		}
		if len(vi.evidence) >= maxEvidencePerVal && !evidenceBefore(finding.Evidence{Time: ev.Time, Node: ev.Node, File: ev.File, Line: ev.Line}, vi.evidence[len(vi.evidence)-1]) {
			// Later than every record kept (the common case: the same
			// value on every line of a node): the evidence stays as it is,
			// so it is not built. A record's evidence points at one of its
			// lines, so it orders at or after its first.
			continue
		}
		if hasRecord(vi.evidence, ev.ID) {
			continue
		}
		x := evidenceOf(ev, fact, hit)
		i := sort.Search(len(vi.evidence), func(i int) bool { return evidenceBefore(x, vi.evidence[i]) })
		if i >= maxEvidencePerVal {
			continue // later than the records kept
		}
		vi.evidence = slices.Insert(vi.evidence, i, x)
		if len(vi.evidence) > maxEvidencePerVal {
			vi.evidence = vi.evidence[:maxEvidencePerVal]
		}
		changed = true
		reorder = reorder || i == 0
	}
	if reorder && len(fs.values) > 1 {
		// A value's earliest evidence changed: the values are listed by it.
		slices.SortStableFunc(fs.values, func(a, b string) int {
			ea, eb := fs.info[a].evidence, fs.info[b].evidence
			switch {
			case len(ea) == 0 || len(eb) == 0:
				return len(eb) - len(ea)
			case evidenceBefore(ea[0], eb[0]):
				return -1
			case evidenceBefore(eb[0], ea[0]):
				return 1
			}
			return strings.Compare(a, b)
		})
	}
	return changed
}

// seenOn notes that ev's node said the value; it reports whether that
// changed what is known (a new node, or one that said it earlier than
// thought: nodes are listed by when they first said it).
func (vi *valueInfo) seenOn(ev *parsers.Event) bool {
	i := slices.Index(vi.nodes, ev.Node)
	if i >= 0 && !ev.Time.Before(vi.nodeAt[i]) {
		return false
	}
	if i >= 0 {
		vi.nodes, vi.nodeAt = slices.Delete(vi.nodes, i, i+1), slices.Delete(vi.nodeAt, i, i+1)
	}
	j := sort.Search(len(vi.nodes), func(j int) bool {
		return ev.Time.Before(vi.nodeAt[j]) || ev.Time.Equal(vi.nodeAt[j]) && ev.Node < vi.nodes[j]
	})
	vi.nodes, vi.nodeAt = slices.Insert(vi.nodes, j, ev.Node), slices.Insert(vi.nodeAt, j, ev.Time)
	return i != j
}

// evidenceBefore orders evidence by time, then node, file and line.
func evidenceBefore(a, b finding.Evidence) bool {
	if !a.Time.Equal(b.Time) {
		return a.Time.Before(b.Time)
	}
	if a.Node != b.Node {
		return a.Node < b.Node
	}
	if a.File != b.File {
		return a.File < b.File
	}
	return a.Line < b.Line
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
