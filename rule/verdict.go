package rule

// An answer for every launch (issue 21 §3): the engine keeps, per launch,
// which nodes it spans, when it came up or failed and the first failure
// signal with the records just before it; a failed launch that no rule's
// finding explains gets a finding of the engine's own, unexplained-failure
// (a warning), and every launch has a summary (finding.LaunchSummary).

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

// UnexplainedFailure is the rule and the cause of the engine's finding on a
// failed launch that no rule explains.
const UnexplainedFailure = "unexplained-failure"

const (
	contextRecords  = 3 // records of the failing node kept before its first failure
	failedNodesKept = 4 // other nodes whose first failure is kept
	closestCauses   = 3 // causes listed as the closest of an unexplained failure
)

// launchLog is what a launch saw, for its summary and its unexplained
// failure: kept apart from the facts, which belong to rules.
type launchLog struct {
	nodes   map[string]*recentRecords // per node: its last records
	lastN   *recentRecords            // the node of the last record (records come in runs of one node)
	records int
	last    time.Time
	readyAt time.Time
	readyOn []string // the nodes that printed a ready signal, in order
	// fail is the launch's first failure signal; failCtx the records of
	// its node just before it, oldest first; failures the first failure of
	// each other node, in order.
	fail     *parsers.Event
	fatal    *parsers.Event // the record whose line says what failed: fail, or a later one of its node when fail is a traceback frame
	failCtx  []parsers.Event
	failures []parsers.Event
	// unexplained is the id of the engine's unexplained-failure finding of
	// this launch, once raised.
	unexplained string
}

// recentRecords is a ring of a node's last records (copies: the reader
// reuses its event).
type recentRecords struct {
	node string
	evs  [contextRecords]parsers.Event
	next int
	n    int
}

func (r *recentRecords) add(ev *parsers.Event) {
	// Copied in place: kept's value went through two copies of the event
	// (350 bytes, written with barriers) on every record of a launch.
	c := &r.evs[r.next]
	*c = *ev
	c.Fields = keptFields(ev)
	r.next = (r.next + 1) % contextRecords
	r.n = min(r.n+1, contextRecords)
}

// oldestFirst lists the ring's records, oldest first.
func (r *recentRecords) oldestFirst() []parsers.Event {
	out := make([]parsers.Event, 0, r.n)
	for i := contextRecords - r.n; i < contextRecords; i++ {
		out = append(out, r.evs[(r.next+i)%contextRecords])
	}
	return out
}

// kept copies an event to keep past the call: the reader reuses the event
// and its fields, so only the fields read later are copied.
func kept(ev *parsers.Event) parsers.Event {
	c := *ev
	c.Fields = keptFields(ev)
	return c
}

// keptFields copies the fields of ev read later (nil when none).
func keptFields(ev *parsers.Event) map[string]string {
	if t := ev.Fields["exc_type"]; t != "" {
		return map[string]string{"exc_type": t, "exc_message": ev.Fields["exc_message"]}
	}
	return nil
}

// record notes a record of the launch (after its launch marks and facts).
func (l *launchLog) record(ev *parsers.Event) {
	l.records++
	if ev.Time.After(l.last) {
		l.last = ev.Time
	}
	r := l.lastN
	if r == nil || r.node != ev.Node {
		if l.nodes == nil {
			l.nodes = map[string]*recentRecords{}
		}
		if r = l.nodes[ev.Node]; r == nil {
			r = &recentRecords{node: ev.Node}
			l.nodes[ev.Node] = r
		}
		l.lastN = r
	}
	r.add(ev)
}

// failure notes a failure signal: the launch's first, or a node's first.
func (l *launchLog) failure(ev *parsers.Event) {
	if l.fail == nil {
		c := kept(ev)
		l.fail, l.fatal = &c, &c
		if r := l.nodes[ev.Node]; r != nil {
			l.failCtx = r.oldestFirst()
		}
		return
	}
	if ev.Node == l.fail.Node {
		if frameLike(fatalLine(l.fatal)) && !frameLike(fatalLine(ev)) {
			c := kept(ev)
			l.fatal = &c
		}
		return
	}
	if len(l.failures) >= failedNodesKept {
		return
	}
	for _, f := range l.failures {
		if f.Node == ev.Node {
			return
		}
	}
	l.failures = append(l.failures, kept(ev))
}

func (l *launchLog) ready(ev *parsers.Event) {
	if l.readyAt.IsZero() {
		l.readyAt = ev.Time
	}
	if !slices.Contains(l.readyOn, ev.Node) {
		l.readyOn = append(l.readyOn, ev.Node)
	}
}

// judge raises, updates or retracts the launch's unexplained-failure
// finding: it stands while the launch failed, did not come up and has no
// active finding of a rule at warning or above.
func (e *Engine) judge(cluster string, ls *launchState, ev *parsers.Event) *finding.Finding {
	var f *finding.Finding
	if ls.log.unexplained != "" {
		f = ls.findings[ls.log.unexplained]
	}
	if !ls.failed || ls.healthy || ls.log.fail == nil || e.explained(ls) {
		if f != nil && f.Status == finding.Active {
			f.Status = finding.Retracted
			f.Updates++
			snap := e.snapshot(f)
			return &snap
		}
		return nil
	}
	if f == nil {
		id := findingID(UnexplainedFailure, cluster, ls.opener, nil)
		f = &finding.Finding{ID: id, Rule: UnexplainedFailure, Cause: UnexplainedFailure, Severity: finding.Warning,
			Confidence: "low", Cluster: cluster, Launch: ls.num, LaunchID: launchID(cluster, ls.opener),
			Status: finding.Active, FirstSeen: ls.log.fail.Time}
		ls.add(f, e.unexplained)
		ls.log.unexplained = id
	}
	f.LastSeen = ev.Time
	f.Status = finding.Active
	before := fingerprint(f)
	e.fillUnexplained(f, ls)
	if fingerprint(f) == before && f.Updates > 0 {
		return nil
	}
	f.Updates++
	snap := e.snapshot(f)
	return &snap
}

// explained reports whether a rule's finding of the launch, at warning or
// above, stands: then the failure has a cause. A finding resolved (a later
// launch came up) still names it: records of the launch that arrive after
// the later launch's must not make it unexplained.
func (e *Engine) explained(ls *launchState) bool {
	for id, f := range ls.findings {
		if id != ls.log.unexplained && f.Status != finding.Retracted && f.Severity.Rank() >= finding.Warning.Rank() {
			return true
		}
	}
	return false
}

func (e *Engine) fillUnexplained(f *finding.Finding, ls *launchState) {
	first := ls.log.fail
	head := fatalLine(ls.log.fatal)
	proc := processOf(first)
	at := ""
	if !first.Time.IsZero() {
		at = " at " + first.Time.UTC().Format(time.DateTime)
	}
	var ev []finding.Evidence
	for i := range ls.log.failCtx {
		ev = append(ev, evidenceOf(&ls.log.failCtx[i], "context", ""))
	}
	ev = append(ev, evidenceOf(first, "first_failure", ""))
	if ls.log.fatal != first {
		ev = append(ev, evidenceOf(ls.log.fatal, "fatal_error", ""))
	}
	var others []string
	for i := range ls.log.failures {
		o := &ls.log.failures[i]
		ev = append(ev, evidenceOf(o, "failure", fatalLine(o)))
		others = append(others, fmt.Sprintf("%s (%q)", o.Node, clip(fatalLine(o), 100)))
	}
	nodes := map[string]bool{}
	for _, x := range ev {
		nodes[x.Node] = true
	}
	f.Nodes = slices.Sorted(maps.Keys(nodes))
	f.Evidence = ev
	f.Facts = map[string][]string{"failed_node": {first.Node}, "fatal_error": {head}}
	if proc != "" {
		f.Facts["failed_process"] = []string{proc}
	}
	f.Alternatives = e.closest(ls)
	search := searchFor(ls.log.fatal, head)
	f.TellApart = search

	who := first.Node
	if proc != "" {
		who += " (" + proc + ")"
	}
	f.Title = fmt.Sprintf("Launch %d failed on %s with no known cause: %s", ls.num, first.Node, clip(head, 120))
	var b strings.Builder
	fmt.Fprintf(&b, "Launch %d failed; the first fatal error was on %s%s: %q. No rule of the pack explains it.", ls.num, who, at, clip(head, 300))
	if len(others) > 0 {
		fmt.Fprintf(&b, " Then %s failed too: %s.", plural(len(others), "other node"), strings.Join(others, "; "))
	}
	if len(f.Alternatives) == 0 {
		b.WriteString(" No rule found any of its evidence in these logs.")
	} else {
		b.WriteString(" Closest causes:")
		for i, a := range f.Alternatives {
			if i > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " %s (%s; %s)", a.Cause, a.Fits, a.Lacks)
		}
		b.WriteString(".")
	}
	f.Summary = b.String()
	f.Remediation = fmt.Sprintf("Read what %s printed just before the failure: `%s` (after `analyzer ingest` of these logs, or on the host with serve). "+
		"The first fatal error is usually the cause and the errors after it on other nodes its consequences. "+
		"If it is a cause Faultline should know, write a rule for it (docs/rules.md) with this log as its fixture.", first.Node, search)
	f.RuledOut = f.RuledOut[:0]
}

// closest lists the causes whose rules found some of their evidence in the
// launch, most facts first, with what each found and what it lacks.
func (e *Engine) closest(ls *launchState) []finding.Alternative {
	type near struct {
		r        *Rule
		has, not []string
	}
	var ns []near
	for _, r := range e.rules {
		var n near
		n.r = r
		for _, name := range r.factNames {
			if fs := ls.facts[name]; fs != nil && len(fs.values) > 0 {
				n.has = append(n.has, name+" "+clip(fs.values[0], 60))
			} else {
				n.not = append(n.not, name)
			}
		}
		if len(n.has) > 0 {
			ns = append(ns, n)
		}
	}
	slices.SortStableFunc(ns, func(a, b near) int {
		return cmp.Compare(len(b.has)*len(a.r.factNames), len(a.has)*len(b.r.factNames)) // the larger share first
	})
	var out []finding.Alternative
	seen := map[string]bool{}
	for _, n := range ns {
		if seen[n.r.Cause] || len(out) == closestCauses {
			continue
		}
		seen[n.r.Cause] = true
		lacks := "no other fact of it"
		if len(n.not) > 0 {
			lacks = "lacks " + strings.Join(n.not, ", ")
		}
		out = append(out, finding.Alternative{Cause: n.r.Cause, Rank: len(out) + 1,
			Fits: "has " + strings.Join(n.has, ", "), Lacks: lacks})
	}
	return out
}

// fatalLine is the line of a failure record that says what failed: a
// Python exception's own line, else the last line that names an error and
// is not a traceback frame, else the first line of the message.
func fatalLine(ev *parsers.Event) string {
	if t := ev.Fields["exc_type"]; t != "" {
		if m := ev.Fields["exc_message"]; m != "" {
			return t + ": " + firstLine(m)
		}
		return t
	}
	msg := ev.Message
	if msg == "" {
		msg = ev.Text
	}
	if strings.IndexByte(msg, '\n') < 0 {
		return strings.TrimSpace(msg)
	}
	lines := strings.Split(msg, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if strings.HasPrefix(l, "File \"") || strings.HasPrefix(l, "^") || l == "" {
			continue
		}
		if strings.Contains(l, "rror") || strings.Contains(l, "xception") || strings.Contains(l, "failed") || strings.Contains(l, "died") {
			return l
		}
	}
	return firstLine(msg)
}

// frameLike reports whether a line is a frame of a traceback (where the
// code failed, not what failed).
func frameLike(l string) bool {
	return strings.HasPrefix(l, `File "`) || strings.Contains(l, `", line `)
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// processOf names the process that printed a record, as its prefix does.
func processOf(ev *parsers.Event) string {
	var parts []string
	if ev.Process != "" {
		parts = append(parts, ev.Process)
	}
	if ev.PID > 0 {
		parts = append(parts, fmt.Sprintf("pid=%d", ev.PID))
	}
	if ev.IP != "" {
		parts = append(parts, "ip="+ev.IP)
	}
	return strings.Join(parts, " ")
}

// searchFor is the search that shows a failure with the records around it.
func searchFor(ev *parsers.Event, head string) string {
	words := strings.Fields(strings.NewReplacer("'", " ", `"`, " ", "`", " ").Replace(head))
	if len(words) > 6 {
		words = words[:6]
	}
	var b strings.Builder
	b.WriteString("analyzer search --node ")
	b.WriteString(ev.Node)
	b.WriteString(" -C 10 --sort time")
	if !ev.Time.IsZero() {
		b.WriteString(" --since " + ev.Time.Add(-time.Minute).UTC().Format(time.RFC3339))
	}
	b.WriteString(` '"` + strings.Join(words, " ") + `"'`)
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// summary is the account of one launch.
func (e *Engine) summary(cluster string, ls *launchState) finding.LaunchSummary {
	s := finding.LaunchSummary{Cluster: cluster, Launch: ls.num, LaunchID: launchID(cluster, ls.opener),
		Outcome: ls.outcome(), Start: ls.start, Ready: ls.log.readyAt, ReadyOn: slices.Clone(ls.log.readyOn),
		LastSeen: ls.log.last, Nodes: slices.Sorted(maps.Keys(ls.log.nodes)), Records: ls.log.records}
	if s.Nodes == nil {
		s.Nodes = []string{}
	}
	if fl := ls.log.fail; fl != nil {
		s.Failed = fl.Time
		ev := evidenceOf(fl, "first_failure", fatalLine(fl))
		s.FirstFailure = &ev
		s.FailedProcess = processOf(fl)
	}
	// The cause of a launch stays its cause once a later launch came up
	// (its findings resolved); a retracted finding was none.
	var standing []finding.Finding
	for _, f := range ls.findings {
		switch f.Status {
		case finding.Active:
			s.Findings++
			standing = append(standing, *f)
		case finding.Resolved:
			standing = append(standing, *f)
		}
	}
	if len(standing) > 0 {
		for i := range standing {
			standing[i].Status = finding.Active // order by severity, not by status
		}
		s.Cause = finding.Order(standing)[0].Cause
	}
	s.Summary = sentence(s)
	return s
}

// sentence says a launch summary in words.
func sentence(s finding.LaunchSummary) string {
	on := plural(len(s.Nodes), "node")
	if len(s.Nodes) > 0 && len(s.Nodes) <= 4 {
		on += " (" + strings.Join(s.Nodes, ", ") + ")"
	}
	at := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return " at " + t.UTC().Format(time.DateTime)
	}
	var b strings.Builder
	switch s.Outcome {
	case finding.OutcomeReady:
		fmt.Fprintf(&b, "launch %d came up%s on %s", s.Launch, at(s.Ready), on)
		if s.Findings > 0 {
			fmt.Fprintf(&b, ", with %s (first: %s)", plural(s.Findings, "active finding"), s.Cause)
		}
	case finding.OutcomeFailed:
		fmt.Fprintf(&b, "launch %d failed%s", s.Launch, at(s.Failed))
		if ff := s.FirstFailure; ff != nil {
			fmt.Fprintf(&b, " on %s", ff.Node)
			if s.FailedProcess != "" {
				fmt.Fprintf(&b, " (%s)", s.FailedProcess)
			}
		}
		fmt.Fprintf(&b, ", spanning %s", on)
		switch {
		case s.Cause == UnexplainedFailure:
			b.WriteString(": no known cause")
		case s.Cause != "":
			fmt.Fprintf(&b, ": %s", s.Cause)
		}
	default:
		fmt.Fprintf(&b, "launch %d has not come up in these records", s.Launch)
		if !s.LastSeen.IsZero() {
			fmt.Fprintf(&b, " (the last%s)", at(s.LastSeen))
		}
		fmt.Fprintf(&b, " on %s", on)
		if s.Cause != "" {
			fmt.Fprintf(&b, ": %s", s.Cause)
		}
	}
	return b.String()
}
