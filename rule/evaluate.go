package rule

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"text/template"
	"time"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

// env builds the expression environment of a rule: each fact it reads as
// the list of its values (numbers as float64).
func (r *Rule) env(ls *launchState) map[string]any {
	env := make(map[string]any, len(r.facts)+1)
	env["outcome"] = ls.outcome()
	for name, d := range r.facts {
		fs := ls.facts[name]
		if d.Type == "number" {
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

// pick returns the case a rule's facts give: nil when its condition does
// not hold or no case's when does.
func (e *Engine) pick(r *Rule, env map[string]any, ev *parsers.Event) (*ruleCase, error) {
	holds := func(p *vm.Program) (bool, error) {
		start := time.Now()
		ok, err := expr.Run(p, env)
		if e.timed(r.ID, start, 1) {
			again := time.Now()
			expr.Run(p, env)
			e.slow(r.ID, time.Since(again), ev)
		}
		b, _ := ok.(bool)
		return b, err
	}
	if r.condition != nil {
		if ok, err := holds(r.condition); err != nil || !ok {
			return nil, err
		}
	}
	for i := range r.cases {
		c := &r.cases[i]
		if c.when == nil {
			return c, nil
		}
		if ok, err := holds(c.when); err != nil || ok {
			if err != nil {
				return nil, err
			}
			return c, nil
		}
	}
	return nil, nil
}

func (e *Engine) evaluate(r *Rule, cluster string, ls *launchState, ev *parsers.Event) *finding.Finding {
	env := r.env(ls)
	c, err := e.pick(r, env, ev)
	if err != nil {
		e.countError(r.ID, err)
		return nil
	}
	if c == nil {
		// A finding whose condition no longer holds (a later fact
		// contradicted it) is retracted, not left standing.
		for _, f := range ls.findings {
			if f.Rule == r.ID && f.Status == finding.Active {
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
		if fs := ls.facts[k]; fs != nil && len(fs.values) > 0 {
			keyVals = append(keyVals, k+"="+fs.values[0])
		}
	}
	id := findingID(r.ID, cluster, ls.opener, keyVals)
	f := ls.findings[id]
	if f == nil {
		f = &finding.Finding{ID: id, Rule: r.ID, Cause: r.Cause, Severity: c.severity, Cluster: cluster,
			Launch: ls.num, LaunchID: launchID(cluster, ls.opener), Status: finding.Active, FirstSeen: ev.Time}
		ls.add(f, r)
	}
	f.LastSeen = ev.Time
	if f.Status == finding.Retracted {
		f.Status = finding.Active
	}
	before := fingerprint(f)
	e.fill(f, r, c, cluster, ls, env)
	if fingerprint(f) == before && f.Updates > 0 {
		return nil
	}
	f.Updates++
	snap := e.snapshot(f)
	return &snap
}

// fill renders a finding from the facts of its launch and the case they
// gave.
func (e *Engine) fill(f *finding.Finding, r *Rule, c *ruleCase, cluster string, ls *launchState, env map[string]any) {
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
		fs := ls.facts[name]
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
			if who == "" && e.idx.selfFacts[name] {
				// A node's own property that no node stated about itself
				// (yet: live, its node's lines may come later): whose it is
				// is not known, and the nodes that mentioned it are not it.
				parts = append(parts, fmt.Sprintf("%s (reported by %s)", v, strings.Join(vi.nodes, ", ")))
				continue
			}
			if who == "" {
				who = strings.Join(vi.nodes, ", ")
			}
			parts = append(parts, fmt.Sprintf("%s (%s)", v, who))
			pairs[name] = append(pairs[name], Pair{Value: v, Node: who})
		}
		owned[name] = strings.Join(parts, ", ")
	}
	for _, name := range evFacts {
		fs := ls.facts[name]
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
	f.NodeFacts = nodeFacts(evFacts, func(n string) *factState { return ls.facts[n] })
	f.Title = render(c.title, data)
	f.Summary = render(c.summary, data)
	f.Remediation = render(c.remediation, data)
	f.Severity = c.severity
	f.Confidence = c.confidence
	f.Alternatives, f.TellApart = nil, ""
	if len(c.alternatives) > 0 {
		f.Alternatives = append(f.Alternatives, finding.Alternative{Cause: r.Cause, Rank: 1, Fits: renderOpt(c.fits, data), Lacks: renderOpt(c.lacks, data)})
		for i, a := range c.alternatives {
			f.Alternatives = append(f.Alternatives, finding.Alternative{Cause: a.cause, Rank: i + 2, Fits: renderOpt(a.fits, data), Lacks: renderOpt(a.lacks, data)})
		}
		f.TellApart = render(c.tellApart, data)
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

// fingerprint is what a reader of a finding sees: when it changes, the
// finding is announced again (a ruled-out reason or a title that names a
// value changes when the value does).
func fingerprint(f *finding.Finding) string {
	var b strings.Builder
	for _, s := range []string{f.Title, f.Summary, f.Remediation, string(f.Status), string(f.Severity), f.Confidence} {
		b.WriteString(s)
		b.WriteByte(0)
	}
	for _, ev := range f.Evidence {
		b.WriteString(ev.RecordID)
	}
	for _, ro := range f.RuledOut {
		b.WriteString(ro.Cause)
		b.WriteString(ro.Reason)
	}
	for _, a := range f.Alternatives {
		b.WriteString(a.Cause + "\x00" + a.Fits + "\x00" + a.Lacks)
	}
	b.WriteString(f.TellApart)
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

// renderOpt renders an optional template (nil: "").
func renderOpt(t *template.Template, data map[string]any) string {
	if t == nil {
		return ""
	}
	return render(t, data)
}
