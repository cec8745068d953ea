// Package rule loads diagnostic rule packs (YAML, see docs/rules.md) —
// rules, the upstream message catalog that fills the facts they read, the
// causes they name and the launch signals — checks them, and runs them over
// events: catalog entries extract facts from events, facts are correlated
// across every node of a cluster within one launch, and a rule whose
// condition holds raises a Finding from its first matching case, with its
// evidence and fix.
package rule

import (
	"fmt"
	"slices"
	"strings"
	"text/template"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/vm"

	"github.com/faultline/faultline/finding"
)

// Spec is a rule as written in YAML (rule language v2). Unknown keys are
// rejected. A rule reads facts of the catalog by name: in its condition,
// its cases' when, its templates, key, evidence and ruled_out.
type Spec struct {
	ID          string   `yaml:"id"`
	Cause       string   `yaml:"cause"`
	Description string   `yaml:"description"`
	Explains    []string `yaml:"explains"`
	Key         []string `yaml:"key"`
	// Condition, when set, must hold for the rule to fire at all; then the
	// first case whose when holds gives the finding.
	Condition string   `yaml:"condition"`
	Evidence  []string `yaml:"evidence"`
	// Title, Summary and Remediation are what a case that sets none says
	// (a case without remediation, in a rule without one, gives its
	// cause's fix).
	Title       string         `yaml:"title"`
	Summary     string         `yaml:"summary"`
	Remediation string         `yaml:"remediation"`
	Cases       []CaseSpec     `yaml:"cases"`
	RuledOut    []RuledOutSpec `yaml:"ruled_out"`
	References  []string       `yaml:"references"`
}

// CaseSpec is one case of a rule, evaluated first-match: when its when
// holds (the last case may omit it), the finding has its severity,
// confidence, title, summary and remediation.
type CaseSpec struct {
	When        string `yaml:"when"`
	Severity    string `yaml:"severity"`   // critical | warning | info
	Confidence  string `yaml:"confidence"` // high | medium | low
	Title       string `yaml:"title"`
	Summary     string `yaml:"summary"`
	Remediation string `yaml:"remediation"`
	// A differential case: the evidence fits the rule's cause and these
	// others; the finding ranks them (its own cause first, then in this
	// order) and TellApart is the command that tells them apart. Fits and
	// Lacks say what of the rule's own cause is in the logs and what is not.
	Fits         string            `yaml:"fits"`
	Lacks        string            `yaml:"lacks"`
	Alternatives []AlternativeSpec `yaml:"alternatives"`
	TellApart    string            `yaml:"tell_apart"`
}

// AlternativeSpec is another cause a differential case weighs: what in
// the logs fits it and what would prove it (templates).
type AlternativeSpec struct {
	Cause string `yaml:"cause"`
	Fits  string `yaml:"fits"`
	Lacks string `yaml:"lacks"`
}

// RuledOutSpec names a neighbouring cause that the facts exclude.
type RuledOutSpec struct {
	Cause  string `yaml:"cause"`
	When   string `yaml:"when"`
	Reason string `yaml:"reason"`
}

// v1Spec catches the keys of rule language v1, to say where they went.
type v1Spec struct {
	Spec       `yaml:",inline"`
	Facts      any `yaml:"facts"`
	Severity   any `yaml:"severity"`
	Confidence any `yaml:"confidence"`
	Upstream   any `yaml:"upstream"`
}

// Rule is a compiled, ready-to-run rule.
type Rule struct {
	Spec
	File string // where it was loaded from (for messages)
	line int
	pack *Pack // the pack it was compiled against

	facts       map[string]*FactDecl // the facts it reads
	factNames   []string             // sorted
	condition   *vm.Program          // nil: none
	cases       []ruleCase
	usesOutcome bool // an expression or template reads the launch outcome
	ruledOut    []ruledOut
}

type ruleCase struct {
	when        *vm.Program // nil: always (the default case)
	severity    finding.Severity
	confidence  string
	title       *template.Template
	summary     *template.Template
	remediation *template.Template
	// differential: fits/lacks of the rule's own cause, the alternatives
	// and the command that tells them apart (nil: not a differential case)
	fits, lacks  *template.Template
	alternatives []alternative
	tellApart    *template.Template
}

type alternative struct {
	cause       string
	fits, lacks *template.Template
}

type ruledOut struct {
	cause  string
	when   *vm.Program
	reason *template.Template
}

// Facts returns the names of the facts the rule reads, sorted.
func (r *Rule) Facts() []string { return slices.Clone(r.factNames) }

// NumberFact reports whether the rule reads fact name as a number fact
// (its values are then compared as numbers: "4" and "4.0" are one value).
func (r *Rule) NumberFact(name string) bool {
	d := r.facts[name]
	return d != nil && d.Type == "number"
}

// Severities returns the severities its cases can give.
func (r *Rule) Severities() []finding.Severity {
	var out []finding.Severity
	for _, c := range r.cases {
		if !slices.Contains(out, c.severity) {
			out = append(out, c.severity)
		}
	}
	return out
}

// MaxSeverity is the most severe severity its cases can give.
func (r *Rule) MaxSeverity() finding.Severity {
	var best finding.Severity
	for _, c := range r.cases {
		if c.severity.Rank() > best.Rank() {
			best = c.severity
		}
	}
	return best
}

// TitleText is the rule's title template as written: the rule's own, else
// its first case's.
func (r *Rule) TitleText() string {
	if r.Title != "" || len(r.Cases) == 0 {
		return r.Title
	}
	return r.Cases[0].Title
}

// confidences are the words a case's confidence may be.
var confidences = []string{"high", "medium", "low"}

// fieldError is a problem at a path inside a rule document; the loader turns
// the path into a line and column.
type fieldError struct {
	path string // goccy/go-yaml path, e.g. $.cases[0].severity
	msg  string
}

func (e *fieldError) Error() string { return e.msg }

func ferr(path, format string, args ...any) error {
	return &fieldError{path: path, msg: fmt.Sprintf(format, args...)}
}

// compile checks a spec against its pack (facts, causes) and builds its
// expressions and templates. Every problem is returned, each naming the
// path of the offending key.
func compile(s Spec, p *Pack, trusted bool) (*Rule, []error) {
	var errs []error
	r := &Rule{Spec: s, facts: map[string]*FactDecl{}, pack: p}
	used := map[string]bool{}
	if s.ID == "" {
		errs = append(errs, ferr("$", "missing id"))
	} else if reservedRuleIDs[s.ID] {
		errs = append(errs, ferr("$.id", "rule id %q names a pack file", s.ID))
	}
	cause := p.Cause(s.Cause)
	switch {
	case s.Cause == "":
		errs = append(errs, ferr("$", "missing cause"))
	case cause == nil:
		errs = append(errs, ferr("$.cause", "unknown cause %q (the pack's causes: %s; a --rules DIR adds causes in its causes.yaml)", s.Cause, strings.Join(p.CauseIDs(), ", ")))
	}
	if len(s.Cases) == 0 {
		errs = append(errs, ferr("$", "a rule needs cases: (each with when, severity, confidence, title, summary)"))
	}

	// Expressions see every declared fact (so that a typo is an unknown
	// name) as a list: []string, or []float64 for a number fact.
	env := map[string]any{"outcome": ""}
	for name, d := range p.Facts {
		if d.Type == "number" {
			env[name] = []float64{}
		} else {
			env[name] = []string{}
		}
	}
	compileExpr := func(path, what, src string) *vm.Program {
		prog, err := expr.Compile(src, append([]expr.Option{expr.Env(env), expr.AsBool(), numOption}, exprFuncs...)...)
		if err != nil {
			errs = append(errs, ferr(path, "%s: %s", what, exprProblem(err)))
			return nil
		}
		for _, id := range identifiers(prog) {
			if id == "outcome" {
				r.usesOutcome = true
			} else if _, ok := p.Facts[id]; ok {
				used[id] = true
			}
		}
		return prog
	}
	compileTemplate := func(path, name, text string) *template.Template {
		t, err := parseTemplate(name, text)
		if err != nil {
			errs = append(errs, ferr(path, "%v", err))
			return nil
		}
		refs, msgs := templateFields(name, text, p.Facts)
		for _, m := range msgs {
			errs = append(errs, ferr(path, "%s", m))
		}
		for _, f := range refs {
			if f == "outcome" {
				r.usesOutcome = true
			} else {
				used[f] = true
			}
		}
		return t
	}

	if s.Condition != "" {
		r.condition = compileExpr("$.condition", "condition", s.Condition)
	}
	var title, summary, remediation *template.Template
	if s.Title != "" {
		title = compileTemplate("$.title", "title", s.Title)
	}
	if s.Summary != "" {
		summary = compileTemplate("$.summary", "summary", s.Summary)
	}
	if s.Remediation != "" {
		remediation = compileTemplate("$.remediation", "remediation", s.Remediation)
	} else if cause != nil {
		remediation, _ = parseTemplate("remediation", cause.Fix)
	}
	for i, cs := range s.Cases {
		path := fmt.Sprintf("$.cases[%d]", i)
		c := ruleCase{title: title, summary: summary, remediation: remediation}
		switch {
		case cs.When != "":
			c.when = compileExpr(path+".when", "when", cs.When)
		case i < len(s.Cases)-1:
			errs = append(errs, ferr(path, "only the last case may omit when (it is the default)"))
		case s.Condition == "":
			errs = append(errs, ferr(path, "a default case (no when) needs the rule's condition: without one the rule would fire on any fact"))
		}
		switch sev, err := finding.ParseSeverity(cs.Severity); {
		case cs.Severity == "":
			errs = append(errs, ferr(path, "missing severity (critical, warning or info)"))
		case strings.Contains(cs.Severity, "{{"):
			errs = append(errs, ferr(path+".severity", "severity is a word, not a template: give each branch a case of its own"))
		case err != nil:
			errs = append(errs, ferr(path+".severity", "%v", err))
		default:
			c.severity = sev
		}
		switch {
		case cs.Confidence == "":
			errs = append(errs, ferr(path, "missing confidence (high, medium or low)"))
		case strings.Contains(cs.Confidence, "{{"):
			errs = append(errs, ferr(path+".confidence", "confidence is a word, not a template: give each branch a case of its own"))
		case !slices.Contains(confidences, cs.Confidence):
			errs = append(errs, ferr(path+".confidence", "confidence %q is not one of high, medium, low", cs.Confidence))
		default:
			c.confidence = cs.Confidence
		}
		if cs.Title != "" {
			c.title = compileTemplate(path+".title", "title", cs.Title)
		} else if s.Title == "" {
			errs = append(errs, ferr(path, "missing title (the case's, or the rule's for every case)"))
		}
		if cs.Summary != "" {
			c.summary = compileTemplate(path+".summary", "summary", cs.Summary)
		} else if s.Summary == "" {
			errs = append(errs, ferr(path, "missing summary (the case's, or the rule's for every case)"))
		}
		if cs.Remediation != "" {
			c.remediation = compileTemplate(path+".remediation", "remediation", cs.Remediation)
		}
		if cs.Fits != "" {
			c.fits = compileTemplate(path+".fits", "fits", cs.Fits)
		}
		if cs.Lacks != "" {
			c.lacks = compileTemplate(path+".lacks", "lacks", cs.Lacks)
		}
		for j, a := range cs.Alternatives {
			ap := fmt.Sprintf("%s.alternatives[%d]", path, j)
			switch {
			case a.Cause == "":
				errs = append(errs, ferr(ap, "an alternative needs its cause"))
			case !p.KnownCause(a.Cause):
				errs = append(errs, ferr(ap+".cause", "unknown cause %q (the pack's: %s)", a.Cause, strings.Join(p.CauseIDs(), ", ")))
			case a.Cause == s.Cause:
				errs = append(errs, ferr(ap+".cause", "the rule's own cause is the first of the ranking, not an alternative"))
			}
			alt := alternative{cause: a.Cause}
			if a.Fits != "" {
				alt.fits = compileTemplate(ap+".fits", "fits", a.Fits)
			}
			if a.Lacks != "" {
				alt.lacks = compileTemplate(ap+".lacks", "lacks", a.Lacks)
			}
			c.alternatives = append(c.alternatives, alt)
		}
		switch {
		case cs.TellApart != "" && len(cs.Alternatives) == 0:
			errs = append(errs, ferr(path+".tell_apart", "tell_apart tells alternatives apart: the case has none"))
		case cs.TellApart == "" && len(cs.Alternatives) > 0:
			errs = append(errs, ferr(path, "a case with alternatives needs tell_apart: the one command that tells them apart"))
		case cs.TellApart != "":
			c.tellApart = compileTemplate(path+".tell_apart", "tell_apart", cs.TellApart)
		}
		r.cases = append(r.cases, c)
	}
	for i, ro := range s.RuledOut {
		path := fmt.Sprintf("$.ruled_out[%d]", i)
		x := ruledOut{cause: ro.Cause}
		if !p.KnownCause(ro.Cause) {
			errs = append(errs, ferr(path+".cause", "unknown cause %q", ro.Cause))
		}
		if ro.When == "" {
			errs = append(errs, ferr(path, "ruled_out needs 'when'"))
		} else {
			x.when = compileExpr(path+".when", "when", ro.When)
		}
		x.reason = compileTemplate(path+".reason", "reason", ro.Reason)
		r.ruledOut = append(r.ruledOut, x)
	}
	for i, k := range s.Key {
		if _, ok := p.Facts[k]; !ok {
			errs = append(errs, ferr(fmt.Sprintf("$.key[%d]", i), "key %q is not a declared fact", k))
		}
		used[k] = true
	}
	for i, k := range s.Evidence {
		if _, ok := p.Facts[k]; !ok {
			errs = append(errs, ferr(fmt.Sprintf("$.evidence[%d]", i), "evidence %q is not a declared fact", k))
		}
		used[k] = true
	}
	for i, c := range s.Explains {
		if !p.KnownCause(c) {
			errs = append(errs, ferr(fmt.Sprintf("$.explains[%d]", i), "unknown cause %q", c))
		}
	}
	for name := range used {
		d := p.Facts[name]
		if d == nil {
			continue // reported where it is named
		}
		if len(p.fillers[name]) == 0 {
			errs = append(errs, ferr("$", "fact %q is read by this rule but filled by no catalog entry (it would never have a value)", name))
		}
		r.facts[name] = d
		r.factNames = append(r.factNames, name)
	}
	if len(r.factNames) == 0 && len(s.Cases) > 0 && len(errs) == 0 {
		errs = append(errs, ferr("$", "the rule reads no fact"))
	}
	slices.Sort(r.factNames)
	return r, errs
}

// reservedRuleIDs are the pack's own files: a rule may not be named so.
var reservedRuleIDs = map[string]bool{"causes": true, "launch": true}

// numOption lets conditions compare a string fact with a number fact:
// num("4.0") == 4.
var numOption = expr.Function("num", numFunc, new(func(any) float64))

// identifiers returns the names an expression reads.
func identifiers(p *vm.Program) []string {
	var v identVisitor
	node := p.Node()
	ast.Walk(&node, &v)
	return v.names
}

type identVisitor struct{ names []string }

func (v *identVisitor) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok {
		v.names = append(v.names, id.Value)
	}
}

// exprProblem is an expression's compile error on one line, with a hint
// where a number fact meets a string fact (4 and "4.0" are not compared as
// strings: declare the fact a number, or say num(x)).
func exprProblem(err error) string {
	msg := oneLine(err)
	if strings.Contains(msg, "mismatched types string and float64") || strings.Contains(msg, "mismatched types float64 and string") ||
		strings.Contains(msg, "cannot use float64 as type string") || strings.Contains(msg, "cannot use string as type float64") {
		msg += " (a number fact meets a string fact: declare both type number, or convert with num(x))"
	}
	return msg
}

func validName(s string) bool {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " | ")), " ")
}
