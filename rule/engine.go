package rule

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/expr-lang/expr"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

// Limits that keep a long-running engine's memory bounded.
const (
	maxLaunchesKept   = 4  // per cluster; older launches' facts are forgotten (their findings stay)
	maxValuesPerFact  = 64 // distinct values remembered per fact
	maxEvidencePerVal = 3  // evidence records kept per fact value
	maxEvidenceText   = 2000
)

// DefaultCluster labels events that carry no cluster.
const DefaultCluster = "default"

// Engine evaluates rules over a stream of events. It is safe for concurrent
// use; Observe is cheap for events that no rule is interested in.
type Engine struct {
	mu       sync.Mutex
	rules    []*Rule
	idx      *matchIndex
	gen      uint64
	memo     regexMemo
	clusters map[string]*clusterState
	findings map[string]*finding.Finding
	ruleOf   map[string]*Rule // finding id -> rule that raised it
	errors   map[string]*ErrorStat

	times      map[string]*RuleTime // per rule id (ruletime.go)
	slowBudget time.Duration
	slowReport func(rule string, took time.Duration, ev *parsers.Event)
}

// ErrorStat counts a rule's runtime expression errors (a condition calling
// max() on an empty list, say): such a rule silently never fires, so the
// count is reported (metrics, diagnose's summary, rules test).
type ErrorStat struct {
	Count int
	Last  string // the last error's text
}

type clusterState struct {
	launches []*launchState // oldest first, at most maxLaunchesKept
	seq      int
	restored LaunchMark // set by Restore: the checkpoint until a launch opens
}

type launchState struct {
	num      int    // 1-based, displayed; a counter, so never part of an ID
	opener   string // ID of the record that opened it (openerID; firstLaunch): its findings' IDs derive from it
	pos      uint64 // stream position of the record that opened it (see ObserveAt)
	marked   bool   // a launch marker was seen (else: logs started mid-launch)
	vllmSeen bool
	healthy  bool
	failed   bool // a failure signal was seen (see failureLiterals)
	start    time.Time
	facts    map[string]*factState // rule id + "/" + fact name
}

type factState struct {
	values []string
	info   map[string]*valueInfo
}

type valueInfo struct {
	nodes    []string
	owner    string // node that stated this value about itself (MatchSpec.Self)
	evidence []finding.Evidence
}

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
	src := m.spec.Regex
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
	dirty  []uint64      // per rule: event generation in which it last learnt a fact
}

type matcherRef struct {
	r    *Rule
	ri   int // index of r in the rule list
	f    *fact
	m    *matcher
	seen uint64 // event generation that last ran it (a literal can occur twice)
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
	// Literals are distinct patterns, so a marker that is also some rule's
	// literal shares that literal's pattern.
	for bit, lit := range markerLiterals {
		j := intern(lit)
		idx.markOf[j] |= 1 << bit
	}
	for _, lit := range failureLiterals {
		idx.markOf[intern(lit)] |= 1 << markFailed
	}
	idx.ac = newLiteralScanner(lits)
	return idx
}

// Pair is a fact value with the node it belongs to (or the nodes that
// mentioned it), for templates: {{ range .pairs.registered_ip }}.
type Pair struct{ Value, Node string }

// NewEngine returns an engine running rules.
func NewEngine(rules []*Rule) *Engine {
	return &Engine{
		rules:    rules,
		idx:      buildIndex(rules),
		clusters: map[string]*clusterState{},
		findings: map[string]*finding.Finding{},
		ruleOf:   map[string]*Rule{},
		errors:   map[string]*ErrorStat{},
		times:    map[string]*RuleTime{},
	}
}

// SetRules swaps the rule set (hot reload). Facts already gathered for rules
// that keep their id stay; findings stay.
func (e *Engine) SetRules(rules []*Rule) {
	idx := buildIndex(rules)
	e.mu.Lock()
	e.rules, e.idx = rules, idx
	e.mu.Unlock()
}

// Rules returns the rules in use.
func (e *Engine) Rules() []*Rule {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*Rule(nil), e.rules...)
}

// Errors returns, per rule id, the runtime expression errors counted so far.
func (e *Engine) Errors() map[string]ErrorStat {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make(map[string]ErrorStat, len(e.errors))
	for k, v := range e.errors {
		out[k] = *v
	}
	return out
}

func (e *Engine) countError(ruleID string, err error) {
	st := e.errors[ruleID]
	if st == nil {
		st = &ErrorStat{}
		e.errors[ruleID] = st
	}
	st.Count++
	st.Last = err.Error()
}

// Launch markers. A new `vllm serve` (its version banner) or a restarted Ray
// head begins a launch; the API server coming up marks the launch healthy.
const (
	markRayHead = iota
	markVLLM
	markHealthy
	markUvicorn
	markFailed
)

// markerLiterals are found by the same Aho-Corasick pass as the matchers'
// literals (indexed by the mark constants; every failure literal stands for
// markFailed).
var markerLiterals = [...]string{rayHeadStart, "server version", "startup complete", "Uvicorn running"}

// failureLiterals prove that a launch failed, whatever the cause: an
// exception that reached the top, an NCCL result code (ncclGetErrorString
// and torch's C10D_NCCL_CHECK texts, all NCCL versions), a process or actor
// that died. Signals that are benign on a healthy launch ("NET/IB : No
// device found", the Gloo loopback fallback) matter only with one of these.
var failureLiterals = []string{
	"Traceback (most recent call last)",
	"NCCL error", "unhandled system error", "unhandled cuda error", "invalid usage (run with NCCL_DEBUG",
	"internal error - please report", "remote process exited or there was a network error",
	"ncclSystemError", "ncclInternalError", "ncclInvalidUsage", "ncclRemoteError", "ncclUnhandledCudaError",
	"DistBackendError", "DistNetworkError", "DistStoreError",
	"Engine core initialization failed", "RayActorError", "ActorDiedError", "WorkerCrashedError",
	"core dumped", "Fatal Python error", "SIGABRT",
	"Watchdog caught collective operation timeout",
}

var (
	reVLLMBanner = regexp.MustCompile(`vLLM API server version (\S+)|vLLM server version (\S+)`)
	rayHeadStart = "To add another node to this Ray cluster"
	reHealthy    = regexp.MustCompile(`Application startup complete|Uvicorn running on`)
)

// Observe feeds one event to the rules and returns the findings it created or
// changed (copies).
func (e *Engine) Observe(ev *parsers.Event) []finding.Finding { return e.ObserveAt(ev, 0) }

// ObserveAt is Observe for an event read at stream position pos (increasing
// in stream order; 0: unknown). A launch remembers the position of the
// record that opened it, for Checkpoint.
func (e *Engine) ObserveAt(ev *parsers.Event, pos uint64) []finding.Finding {
	e.mu.Lock()
	defer e.mu.Unlock()
	cluster := ev.Cluster
	if cluster == "" {
		cluster = DefaultCluster
	}
	cs := e.clusters[cluster]
	if cs == nil {
		cs = &clusterState{}
		e.clusters[cluster] = cs
	}
	if len(cs.launches) == 0 {
		// A cluster's first record opens its first launch, unmarked (or
		// Restore left the cluster without launches: the replay's first
		// record is the one that opened the checkpoint's launch).
		e.newLaunch(cs, cs.firstOpener(ev), ev, pos)
	}
	text := ev.Message
	if text == "" {
		text = ev.Text
	}
	// One Aho-Corasick pass finds the launch markers and the literals of
	// every matcher.
	hits := e.idx.ac.scan(text)
	var marks uint8
	for _, p := range hits {
		marks |= e.idx.markOf[p]
	}
	var changed []finding.Finding
	if marks != 0 {
		changed = append(changed, e.trackLaunch(cluster, cs, ev, pos, text, marks)...)
	}
	ls := cs.launches[len(cs.launches)-1]
	dirty := e.extract(ls, ev, text, hits)
	for _, r := range dirty {
		if f := e.evaluate(r, cluster, ls, ev); f != nil {
			changed = append(changed, *f)
		}
	}
	return changed
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

// firstLaunch stands for the opener of a cluster's first launch: the record
// that opens it is whichever arrived first, and that differs between a live
// stream (in order of arrival from the nodes) and an offline read (merged by
// time), while the launch is the same.
const firstLaunch = "(first launch)"

// firstOpener is the opener of the launch that ev opens in a cluster without
// launches: the checkpoint's launch keeps the opener the checkpoint names
// (even when the stream lost that record); a checkpoint written before
// openers were kept names none, and the replay's first record is taken.
func (cs *clusterState) firstOpener(ev *parsers.Event) string {
	switch {
	case cs.restored.Opener != "":
		return cs.restored.Opener
	case cs.restored != (LaunchMark{}):
		return openerID(ev)
	}
	return firstLaunch
}

func (e *Engine) newLaunch(cs *clusterState, opener string, ev *parsers.Event, pos uint64) *launchState {
	cs.seq++
	ls := &launchState{num: cs.seq, opener: opener, pos: pos, start: ev.Time, facts: map[string]*factState{}}
	cs.launches = append(cs.launches, ls)
	if len(cs.launches) > maxLaunchesKept {
		cs.launches = cs.launches[len(cs.launches)-maxLaunchesKept:]
	}
	return ls
}

// trackLaunch starts a new launch on a launch marker and resolves the
// findings of earlier launches when a launch comes up healthy.
func (e *Engine) trackLaunch(cluster string, cs *clusterState, ev *parsers.Event, pos uint64, msg string, marks uint8) []finding.Finding {
	ls := cs.launches[len(cs.launches)-1]
	switch {
	case marks&(1<<markRayHead) != 0:
		if ls.marked {
			ls = e.newLaunch(cs, openerID(ev), ev, pos)
		}
		ls.marked = true
	case marks&(1<<markVLLM) != 0 && reVLLMBanner.MatchString(msg):
		if ls.vllmSeen {
			ls = e.newLaunch(cs, openerID(ev), ev, pos)
		}
		ls.marked, ls.vllmSeen = true, true
	case marks&(1<<markFailed) != 0:
		if ls.failed {
			return nil
		}
		ls.failed = true
		return e.reevaluateOutcome(cluster, ls, ev)
	case marks&(1<<markHealthy|1<<markUvicorn) != 0 && reHealthy.MatchString(msg):
		if ls.healthy {
			return nil
		}
		ls.healthy = true
		out := e.reevaluateOutcome(cluster, ls, ev)
		for _, f := range e.findings {
			if f.Cluster == cluster && f.Launch < ls.num && f.Status == finding.Active {
				f.Status = finding.Resolved
				f.Updates++
				out = append(out, e.snapshot(f))
			}
		}
		return out
	}
	return nil
}

// reevaluateOutcome re-runs the rules whose conditions read the outcome, now
// that it changed.
func (e *Engine) reevaluateOutcome(cluster string, ls *launchState, ev *parsers.Event) []finding.Finding {
	var out []finding.Finding
	for _, r := range e.rules {
		if !r.usesOutcome {
			continue
		}
		if f := e.evaluate(r, cluster, ls, ev); f != nil {
			out = append(out, *f)
		}
	}
	return out
}

// outcome is how far the launch got: "ready" once the API server came up,
// else "failed" once a failure signal was seen, else "running".
func (ls *launchState) outcome() string {
	switch {
	case ls.healthy:
		return "ready"
	case ls.failed:
		return "failed"
	}
	return "running"
}

// extract returns the values this matcher finds in an event, and the text
// of the first match (to point the evidence at the right line of a
// multi-line record).
func (m *matcher) extract(ev *parsers.Event, text string, memo *regexMemo) ([]string, string) {
	if m.sources != nil && !m.sources[ev.Source] {
		return nil, ""
	}
	if m.levels != nil && !m.levels[ev.Level] {
		return nil, ""
	}
	if m.spec.Field != "" {
		v := eventField(ev, m.spec.Field)
		if v == "" {
			return nil, ""
		}
		return []string{v}, ""
	}
	for _, lit := range m.also {
		if !strings.Contains(text, lit) {
			return nil, ""
		}
	}
	all := memo.find(m, text)
	if len(all) == 0 {
		return nil, ""
	}
	hit := all[0][0]
	vals := make([]string, 0, len(all))
	for _, sm := range all {
		v := sm[m.valueIdx]
		if m.valueExpr != nil {
			env := map[string]any{}
			for i, g := range m.groups {
				if g != "" {
					env[g] = sm[i]
				}
			}
			out, err := expr.Run(m.valueExpr, env)
			if err != nil {
				continue
			}
			v = fmt.Sprint(out)
			if f, ok := out.(float64); ok {
				v = fmtNumber(f)
			}
		}
		vals = append(vals, v)
	}
	switch m.spec.Combine {
	case "sum":
		return []string{fmtNumber(reduce(vals, 0, func(a, b float64) float64 { return a + b }))}, hit
	case "count":
		return []string{strconv.Itoa(len(vals))}, hit
	}
	return vals, hit
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

// env builds the expression environment of a rule: each fact as the list of
// its values (numbers as float64).
func (r *Rule) env(ls *launchState) map[string]any {
	env := make(map[string]any, len(r.facts)+1)
	env["outcome"] = ls.outcome()
	for name, f := range r.facts {
		fs := ls.facts[r.ID+"/"+name]
		if f.number {
			nums := []float64{}
			if fs != nil {
				for _, v := range fs.values {
					if n, ok := parseNumber(v); ok {
						nums = append(nums, n)
					}
				}
			}
			env[name] = nums
			continue
		}
		vals := []string{}
		if fs != nil {
			vals = append(vals, fs.values...)
		}
		env[name] = vals
	}
	return env
}

func (e *Engine) evaluate(r *Rule, cluster string, ls *launchState, ev *parsers.Event) *finding.Finding {
	env := r.env(ls)
	start := time.Now()
	ok, err := expr.Run(r.condition, env)
	if e.timed(r.ID, start, 1) {
		again := time.Now()
		expr.Run(r.condition, env)
		e.slow(r.ID, time.Since(again), ev)
	}
	if err != nil {
		e.countError(r.ID, err)
		return nil
	}
	if b, _ := ok.(bool); !b {
		// A finding whose condition no longer holds (a later fact
		// contradicted it) is retracted, not left standing.
		for _, f := range e.findings {
			if f.Rule == r.ID && f.Cluster == cluster && f.Launch == ls.num && f.Status == finding.Active {
				f.Status = finding.Retracted
				f.Updates++
				snap := e.snapshot(f)
				return &snap
			}
		}
		return nil
	}
	var keyVals []string
	// Key facts split findings of one rule; the first value of each is used
	// so that a finding keeps its id while more values arrive.
	for _, k := range r.Key {
		if fs := ls.facts[r.ID+"/"+k]; fs != nil && len(fs.values) > 0 {
			keyVals = append(keyVals, k+"="+fs.values[0])
		}
	}
	id := findingID(r.ID, cluster, ls.opener, keyVals)
	f := e.findings[id]
	if f == nil {
		f = &finding.Finding{ID: id, Rule: r.ID, Cause: r.Cause, Severity: finding.Severity(r.Severity), Cluster: cluster,
			Launch: ls.num, LaunchID: launchID(cluster, ls.opener), Status: finding.Active, FirstSeen: ev.Time}
		e.findings[id] = f
		e.ruleOf[id] = r
	}
	f.LastSeen = ev.Time
	if f.Status == finding.Retracted {
		f.Status = finding.Active
	}
	before := fingerprint(f)
	e.fill(f, r, cluster, ls, env)
	if fingerprint(f) == before && f.Updates > 0 {
		return nil
	}
	f.Updates++
	snap := e.snapshot(f)
	return &snap
}

// fill renders a finding from the facts of its launch.
func (e *Engine) fill(f *finding.Finding, r *Rule, cluster string, ls *launchState, env map[string]any) {
	data := map[string]any{"cluster": cluster, "launch": ls.num, "outcome": ls.outcome()}
	owned := map[string]string{}
	pairs := map[string][]Pair{}
	nodeSet := map[string]bool{}
	facts := map[string][]string{}
	var evidence []finding.Evidence
	evFacts := r.Evidence
	if len(evFacts) == 0 {
		evFacts = r.factNames
	}
	for _, name := range r.factNames {
		fs := ls.facts[r.ID+"/"+name]
		vals := []string{}
		if fs != nil {
			vals = append(vals, fs.values...)
		}
		data[name] = vals
		if len(vals) == 0 {
			continue
		}
		facts[name] = vals
		parts := make([]string, 0, len(vals))
		for _, v := range vals {
			vi := fs.info[v]
			who := vi.owner
			if who == "" {
				who = strings.Join(vi.nodes, ", ")
			}
			parts = append(parts, fmt.Sprintf("%s (%s)", v, who))
			pairs[name] = append(pairs[name], Pair{Value: v, Node: who})
		}
		owned[name] = strings.Join(parts, ", ")
	}
	for _, name := range evFacts {
		fs := ls.facts[r.ID+"/"+name]
		if fs == nil {
			continue
		}
		for _, v := range fs.values {
			for _, ev := range fs.info[v].evidence {
				if !hasRecord(evidence, ev.RecordID) {
					evidence = append(evidence, ev)
				}
				nodeSet[ev.Node] = true
			}
		}
	}
	sort.SliceStable(evidence, func(i, j int) bool {
		if !evidence[i].Time.Equal(evidence[j].Time) {
			return evidence[i].Time.Before(evidence[j].Time)
		}
		if evidence[i].Node != evidence[j].Node {
			return evidence[i].Node < evidence[j].Node
		}
		return evidence[i].Line < evidence[j].Line
	})
	nodes := make([]string, 0, len(nodeSet))
	for n := range nodeSet {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	data["nodes"] = nodes
	data["owned"] = owned
	data["pairs"] = pairs

	f.Facts = facts
	f.Nodes = nodes
	f.Evidence = evidence
	f.Title = render(r.title, data)
	f.Summary = render(r.summary, data)
	f.Remediation = render(r.remediation, data)
	f.Severity = finding.Severity(render(r.severity, data))
	if f.Severity.Rank() == 0 {
		f.Severity = finding.Warning
	}
	f.Confidence = render(r.confidence, data)
	switch f.Confidence {
	case "high", "medium", "low":
	default:
		f.Confidence = "medium"
	}
	f.RuledOut = f.RuledOut[:0]
	for _, ro := range r.ruledOut {
		ok, err := expr.Run(ro.when, env)
		if err != nil {
			continue
		}
		if b, _ := ok.(bool); b {
			f.RuledOut = append(f.RuledOut, finding.RuledOut{Cause: ro.cause, Reason: render(ro.reason, data)})
		}
	}
}

func fingerprint(f *finding.Finding) string {
	var b strings.Builder
	b.WriteString(f.Summary)
	b.WriteString(string(f.Status))
	b.WriteString(string(f.Severity))
	b.WriteString(f.Confidence)
	for _, ev := range f.Evidence {
		b.WriteString(ev.RecordID)
	}
	for _, ro := range f.RuledOut {
		b.WriteString(ro.Cause)
	}
	return b.String()
}

// findingID identifies a finding by its rule, cluster, key facts and the
// record that opened its launch (firstLaunch for a cluster's first): the
// same logs give the same IDs whatever the launch counter says (a replay
// from a checkpoint, another analyzer taking a partition over), which a
// launch number would not.
// launchID names a launch as its findings' IDs do: by the record that
// opened it, so that every analyzer and every replay gives it the same.
func launchID(cluster, opener string) string {
	h := sha256.New()
	fmt.Fprintf(h, "launch\x00%s\x00%s", cluster, opener)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

func findingID(rule, cluster, opener string, key []string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", rule, cluster, opener, strings.Join(key, "\x00"))
	return hex.EncodeToString(h.Sum(nil)[:10])
}

// openerID is the identity of a launch's opening record: its record ID.
// Records from the parsers always have one (node, file identity, offset);
// an event built without one (tests, callers of Observe) is identified by
// where it sits and what it says instead — node, file, line, time, text and
// message — which is as stable across replays of the same events.
func openerID(ev *parsers.Event) string {
	if ev.ID != "" {
		return ev.ID
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%s\x00%s\x00%s", ev.Node, ev.File, ev.Line, ev.Time.Format(time.RFC3339Nano), ev.Text, ev.Message)
	return "noid:" + hex.EncodeToString(h.Sum(nil)[:12])
}

// snapshot copies a finding (so callers never share the engine's slices) and
// sets ExplainedBy from the findings present now.
func (e *Engine) snapshot(f *finding.Finding) finding.Finding {
	c := *f
	c.Nodes = append([]string(nil), f.Nodes...)
	c.Evidence = append([]finding.Evidence(nil), f.Evidence...)
	c.RuledOut = append([]finding.RuledOut(nil), f.RuledOut...)
	c.Facts = make(map[string][]string, len(f.Facts))
	for k, v := range f.Facts {
		c.Facts[k] = append([]string(nil), v...)
	}
	c.ExplainedBy = e.explainer(f)
	return c
}

// explainer returns the id of a finding of the same launch whose rule
// declares that it explains f's cause (the root cause f is a consequence of).
func (e *Engine) explainer(f *finding.Finding) string {
	best := ""
	var bestF *finding.Finding
	for id, g := range e.findings {
		if id == f.ID || g.Cluster != f.Cluster || g.Launch != f.Launch || g.Cause == f.Cause {
			continue
		}
		if !contains(e.ruleOf[id].Explains, f.Cause) {
			continue
		}
		// Two rules explaining each other: neither is the other's consequence.
		if contains(e.ruleOf[f.ID].Explains, g.Cause) {
			continue
		}
		if bestF == nil || g.Severity.Rank() > bestF.Severity.Rank() ||
			(g.Severity.Rank() == bestF.Severity.Rank() && g.FirstSeen.Before(bestF.FirstSeen)) {
			best, bestF = id, g
		}
	}
	return best
}

// Findings returns every finding, ordered for a reader: active before
// resolved; root causes by severity, each followed by its consequences.
func (e *Engine) Findings() []finding.Finding {
	e.mu.Lock()
	defer e.mu.Unlock()
	all := make([]finding.Finding, 0, len(e.findings))
	for _, f := range e.findings {
		if f.Status == finding.Retracted {
			continue
		}
		all = append(all, e.snapshot(f))
	}
	return finding.Order(all)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func hasRecord(evs []finding.Evidence, id string) bool {
	for _, e := range evs {
		if e.RecordID == id {
			return true
		}
	}
	return false
}
