package rule

import (
	"slices"
	"sync"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

// Limits that keep a long-running engine's memory bounded.
const (
	maxLaunchesKept   = 4   // per cluster; older launches are forgotten, their findings with them (see ForgetFindings)
	maxUnresolved     = 256 // per cluster: active findings of forgotten launches a healthy launch still resolves
	maxValuesPerFact  = 64  // distinct values remembered per fact
	maxEvidencePerVal = 3   // evidence records kept per fact value
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
	clusters map[string]*clusterState
	// forget: the findings of a forgotten launch leave the engine (serve,
	// whose findings store keeps them); else they are kept for Findings
	// (diagnose), never looked at again by an evaluation.
	forget bool
	errors map[string]*ErrorStat

	times      map[string]*RuleTime // per rule id (ruletime.go)
	slowBudget time.Duration
	slowReport func(rule string, took time.Duration, ev *parsers.Event)
	// unexplained stands for the engine in the unexplained-failure
	// findings it raises itself (verdict.go).
	unexplained *Rule
}

// ErrorStat counts a rule's runtime expression errors (a condition calling
// max() on an empty list, say): such a rule silently never fires, so the
// count is reported (metrics, diagnose's summary, rules test).
type ErrorStat struct {
	Count int
	Last  string // the last error's text
}

// clusterState is one cluster's launches. Findings live in the launch they
// were raised in, so an evaluation looks at its own launch's findings only,
// however many were raised before.
type clusterState struct {
	launches []*launchState // oldest first, at most maxLaunchesKept
	seq      int
	restored LaunchMark // set by Restore: the checkpoint until a launch opens
	// unresolved are the active findings of forgotten launches (or known
	// from before a Restore) that a later launch coming up healthy
	// resolves; retired, unless the engine forgets them, every finding of
	// the forgotten launches, for Findings.
	unresolved []*finding.Finding
	retired    []*finding.Finding
	name       string                  // the cluster's label
	gone       []finding.LaunchSummary // summaries of the forgotten launches, unless the engine forgets findings
	// Arrival out of time order (late.go): the records of the kept
	// launches that matched something (to place them again when a late
	// launch marker moves a boundary) and the latest time of one dropped
	// from them for room.
	kept    []keptRecord
	trimmed time.Time
}

type launchState struct {
	num      int    // 1-based, displayed; a counter, so never part of an ID
	opener   string // ID of the record that opened it (openerID; firstLaunch): its findings' IDs derive from it
	pos      uint64 // stream position of the record that opened it (see ObserveAt)
	minPos   uint64 // the smallest stream position of a record placed in it (a late opener comes after others)
	marked   bool   // a launch marker was seen (else: logs started mid-launch)
	vllmSeen bool
	healthy  bool
	failed   bool // a failure signal was seen (see failureLiterals)
	start    time.Time
	facts    map[string]*factState // by fact name
	findings map[string]*finding.Finding
	ruleOf   map[string]*Rule // finding id -> the rule that raised it
	log      launchLog        // its nodes, outcome times and first failure (verdict.go)
}

func (ls *launchState) add(f *finding.Finding, r *Rule) {
	ls.findings[f.ID] = f
	ls.ruleOf[f.ID] = r
}

type factState struct {
	values []string
	info   map[string]*valueInfo
}

type valueInfo struct {
	nodes    []string    // that said it, by when they first did
	nodeAt   []time.Time // when each of nodes first said it
	owner    string      // node that stated this value about itself (MatchSpec.Self), the earliest
	ownerAt  time.Time
	evidence []finding.Evidence // its earliest records (evidenceBefore)
}

// Pair is a fact value with the node it belongs to (or the nodes that
// mentioned it), for templates: {{ range .pairs.registered_ip }}.
type Pair struct{ Value, Node string }

// NewEngine returns an engine running rules.
func NewEngine(rules []*Rule) *Engine {
	return &Engine{
		rules:       rules,
		idx:         buildIndex(rules),
		clusters:    map[string]*clusterState{},
		errors:      map[string]*ErrorStat{},
		times:       map[string]*RuleTime{},
		unexplained: &Rule{Spec: Spec{ID: UnexplainedFailure, Cause: UnexplainedFailure}},
	}
}

// ForgetFindings makes the findings of a launch leave the engine when the
// launch does (the oldest of more than maxLaunchesKept of a cluster): for a
// long-running engine whose findings are stored elsewhere (serve), memory
// and Findings stay bounded by the launches kept. Call it before the first
// Observe.
func (e *Engine) ForgetFindings() {
	e.mu.Lock()
	e.forget = true
	e.mu.Unlock()
}

// RaiseUpdates raises the version count (Finding.Updates) of each finding
// of the kept launches named in floor to at least its value there: an
// engine made anew for a rule reload numbers its versions above those
// announced from the engine it replaces, so that its later versions are
// newer.
func (e *Engine) RaiseUpdates(floor map[string]int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, cs := range e.clusters {
		for _, ls := range cs.launches {
			for id, f := range ls.findings {
				if n, ok := floor[id]; ok && f.Updates < n {
					f.Updates = n
				}
			}
		}
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
		cs = &clusterState{name: cluster}
		e.clusters[cluster] = cs
	}
	if len(cs.launches) == 0 {
		// A cluster's first record opens its first launch, unmarked (or
		// Restore left the cluster without launches: the replay's first
		// record is the one that opened the checkpoint's launch).
		e.newLaunch(cs, cs.firstOpener(ev), ev, pos)
	}
	text, hits, marks := e.scan(ev)
	if e.lateBoundary(cs, ev, text, marks) {
		return e.rebuild(cs, cluster, ev, pos)
	}
	return e.observe(cs, cluster, ev, pos, text, hits, marks, true)
}

// scan finds, in one Aho-Corasick pass, the launch markers and the
// literals of every matcher in ev's text.
func (e *Engine) scan(ev *parsers.Event) (text string, hits []int, marks uint8) {
	text = ev.Message
	if text == "" {
		text = ev.Text
	}
	hits = e.idx.ac.scan(text)
	for _, p := range hits {
		marks |= e.idx.markOf[p]
	}
	return text, hits, marks
}

// observe places ev in the launch its time belongs to and runs the rules
// there; retain: it may be kept for placing again (late.go).
func (e *Engine) observe(cs *clusterState, cluster string, ev *parsers.Event, pos uint64, text string, hits []int, marks uint8, retain bool) []finding.Finding {
	ls := cs.launchAt(ev.Time)
	if ls == nil {
		return nil // before every launch kept: it belongs to one forgotten
	}
	var changed []finding.Finding
	// What must be kept to place it again: a launch marker, a ready line,
	// a launch's first failure signal, or a fact learnt.
	keep := marks&^(1<<markFailed) != 0 || marks != 0 && !ls.failed
	if marks != 0 {
		changed = append(changed, e.trackLaunch(cluster, cs, ls, ev, pos, text, hits, marks)...)
		ls = cs.launchAt(ev.Time) // it may have opened one
	}
	if pos != 0 && (ls.minPos == 0 || pos < ls.minPos) {
		ls.minPos = pos
	}
	dirty := e.extract(ls, ev, text, hits)
	for _, r := range dirty {
		if f := e.evaluate(r, cluster, ls, ev); f != nil {
			changed = append(changed, *f)
		}
	}
	ls.log.record(ev)
	if (ls.failed || ls.log.unexplained != "") && (marks != 0 || len(dirty) > 0 || len(changed) > 0) {
		if f := e.judge(cluster, ls, ev); f != nil {
			changed = append(changed, *f)
		}
	}
	if retain && (keep || len(dirty) > 0) {
		cs.keep(ev, pos)
	}
	return changed
}

// firstLaunch stands for the opener of a cluster's first launch: the record
// that opens it is whichever arrived first, and that differs between a live
// stream (in order of arrival from the nodes) and an offline read (merged by
// time), while the launch is the same.
const firstLaunch = "(first launch)"

// snapshot copies a finding (so callers never share the engine's slices) and
// sets ExplainedBy from the findings present now.
func (e *Engine) snapshot(f *finding.Finding) finding.Finding {
	c := *f
	c.Nodes = append([]string(nil), f.Nodes...)
	c.Evidence = append([]finding.Evidence(nil), f.Evidence...)
	c.RuledOut = append([]finding.RuledOut(nil), f.RuledOut...)
	c.Alternatives = append([]finding.Alternative(nil), f.Alternatives...)
	c.Facts = make(map[string][]string, len(f.Facts))
	for k, v := range f.Facts {
		c.Facts[k] = append([]string(nil), v...)
	}
	c.ExplainedBy = e.explainer(f)
	return c
}

// explainer returns the id of a finding of the same launch whose rule
// declares that it explains f's cause (the root cause f is a consequence of).
// A finding of a launch forgotten keeps the one it had then.
func (e *Engine) explainer(f *finding.Finding) string {
	ls := e.launchOf(f)
	if ls == nil {
		return f.ExplainedBy
	}
	best := ""
	var bestF *finding.Finding
	for id, g := range ls.findings {
		if id == f.ID || g.Cause == f.Cause {
			continue
		}
		if !contains(ls.ruleOf[id].Explains, f.Cause) {
			continue
		}
		// Two rules explaining each other: neither is the other's consequence.
		if contains(ls.ruleOf[f.ID].Explains, g.Cause) {
			continue
		}
		if bestF == nil || g.Severity.Rank() > bestF.Severity.Rank() ||
			(g.Severity.Rank() == bestF.Severity.Rank() && g.FirstSeen.Before(bestF.FirstSeen)) {
			best, bestF = id, g
		}
	}
	return best
}

// launchOf is the kept launch that holds f (nil once forgotten).
func (e *Engine) launchOf(f *finding.Finding) *launchState {
	cs := e.clusters[f.Cluster]
	if cs == nil {
		return nil
	}
	for _, ls := range cs.launches {
		if ls.num == f.Launch && ls.findings[f.ID] == f {
			return ls
		}
	}
	return nil
}

// retire takes the findings of a launch being forgotten out of the
// evaluation: their root cause is settled as it is now; the active ones
// wait for a healthy launch to resolve them, and unless the engine forgets
// findings all are kept for Findings.
func (e *Engine) retire(cs *clusterState, ls *launchState) {
	ids := make([]string, 0, len(ls.findings))
	for id := range ls.findings {
		ids = append(ids, id)
	}
	slices.Sort(ids) // a stable order for Findings
	for _, id := range ids {
		f := ls.findings[id]
		f.ExplainedBy = e.explainer(f)
		if f.Status == finding.Active {
			cs.unresolved = append(cs.unresolved, f)
		}
		if !e.forget {
			cs.retired = append(cs.retired, f)
		}
	}
	if n := len(cs.unresolved); n > maxUnresolved {
		cs.unresolved = slices.Delete(cs.unresolved, 0, n-maxUnresolved)
	}
	if !e.forget {
		cs.gone = append(cs.gone, e.summary(cs.name, ls))
	}
}

// Findings returns every finding, ordered for a reader: active before
// resolved; root causes by severity, each followed by its consequences.
func (e *Engine) Findings() []finding.Finding {
	e.mu.Lock()
	defer e.mu.Unlock()
	var all []finding.Finding
	add := func(f *finding.Finding) {
		if f.Status != finding.Retracted {
			all = append(all, e.snapshot(f))
		}
	}
	for _, cs := range e.clusters {
		for _, f := range cs.retired {
			add(f)
		}
		for _, ls := range cs.launches {
			for _, f := range ls.findings {
				add(f)
			}
		}
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
