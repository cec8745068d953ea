// Package rule loads diagnostic rules (YAML documents, see docs/rules.md),
// checks them, and runs them over events: facts are extracted from events,
// correlated across every node of a cluster within one launch, and a rule
// whose condition holds raises a Finding with its evidence and fix.
package rule

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"text/template"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/faultline/faultline/finding"
)

// Spec is a rule as written in YAML. Unknown keys are rejected.
type Spec struct {
	ID          string              `yaml:"id"`
	Cause       string              `yaml:"cause"`
	Severity    string              `yaml:"severity"`   // literal or template yielding critical|warning|info
	Confidence  string              `yaml:"confidence"` // literal or template yielding high|medium|low
	Title       string              `yaml:"title"`
	Description string              `yaml:"description"`
	Facts       map[string]FactSpec `yaml:"facts"`
	Key         []string            `yaml:"key"`
	Condition   string              `yaml:"condition"`
	Evidence    []string            `yaml:"evidence"`
	Summary     string              `yaml:"summary"`
	Remediation string              `yaml:"remediation"`
	RuledOut    []RuledOutSpec      `yaml:"ruled_out"`
	Explains    []string            `yaml:"explains"`
	References  []string            `yaml:"references"`
	// Upstream names the upstream files and functions that print what the
	// rule matches, with the versions covered ("NVIDIA/nccl src/bootstrap.cc
	// bootstrapNetInit, 2.4-2.30"), so a reviewer can check a wording
	// against its source.
	Upstream []string `yaml:"upstream"`
}

// FactSpec declares a named fact and where its values come from.
type FactSpec struct {
	Type        string      `yaml:"type"` // string (default) or number
	Description string      `yaml:"description"`
	From        []MatchSpec `yaml:"from"`
}

// MatchSpec extracts values of a fact from an event.
type MatchSpec struct {
	Sources []string `yaml:"sources"`
	Levels  []string `yaml:"levels"`
	// Regex is matched against the event message (RE2 syntax). Every match
	// yields a value: the group named "value", else the first group, else
	// the whole match; with ValueExpr, an expression over the named groups.
	Regex     string `yaml:"regex"`
	ValueExpr string `yaml:"value_expr"`
	// Field takes a parsed event field instead: ip, process, pid, component,
	// source, level, node, or a source-specific field (exc_type, interface...).
	Field string `yaml:"field"`
	// Combine says what several matches in one event give: "each" (default,
	// one value per match), "sum" or "count" (one value per event).
	Combine string `yaml:"combine"`
	// Self marks a value as a property of the node that logged it (a node
	// stating its own IP), so summaries can say which node a value belongs to.
	Self bool `yaml:"self"`
	// Note says where a wording comes from when no real log in
	// testdata/logs/real shows it: the upstream file and the versions that
	// print it (`analyzer rules coverage` accepts a matcher without hits
	// only with a note).
	Note string `yaml:"note"`
}

// RuledOutSpec names a neighbouring cause that the facts exclude.
type RuledOutSpec struct {
	Cause  string `yaml:"cause"`
	When   string `yaml:"when"`
	Reason string `yaml:"reason"`
}

// Rule is a compiled, ready-to-run rule.
type Rule struct {
	Spec
	File string // where it was loaded from (for messages)
	line int
	pack *Pack // the pack it was compiled against

	facts       map[string]*fact
	factNames   []string
	condition   *vm.Program
	usesOutcome bool // the condition or a ruled_out reads the launch outcome
	severity    *template.Template
	confidence  *template.Template
	title       *template.Template
	summary     *template.Template
	remediation *template.Template
	ruledOut    []ruledOut
}

type fact struct {
	name    string
	number  bool
	matches []*matcher
}

type matcher struct {
	match     Match     // the matcher as written
	spec      MatchSpec // v1 rules: the fact's matcher
	fact      string
	re        *regexp.Regexp
	literals  []string       // every match contains one of these: a cheap pre-check
	also      []string       // every match contains all of these too (checked before the regex)
	lineLocal bool           // the regex can only match within one line
	lineRe    *regexp.Regexp // the regex anchored at the start of a line, for "(?m)^..." regexes
	valueIdx  int            // submatch index of the value, 0 = whole match
	groups    []string
	valueExpr *vm.Program
	sources   map[string]bool
	levels    map[string]bool

	mu      sync.Mutex
	regexps map[string]*regexp.Regexp // compiled on first use by sum_matches/count_matches
}

type ruledOut struct {
	cause  string
	when   *vm.Program
	reason *template.Template
}

// fieldError is a problem at a path inside a rule document; the loader turns
// the path into a line and column.
type fieldError struct {
	path string // goccy/go-yaml path, e.g. $.facts.x.from[0].regex
	msg  string
}

func (e *fieldError) Error() string { return e.msg }

func ferr(path, format string, args ...any) error {
	return &fieldError{path: path, msg: fmt.Sprintf(format, args...)}
}

// compile checks a spec and builds its matchers, expressions and templates.
// Every problem is returned, each naming the path of the offending key. A
// trusted spec (the embedded pack) skips the regex cost lint, 14 ms a load.
func compile(s Spec, p *Pack, trusted bool) (*Rule, []error) {
	knownCause := p.KnownCause
	var errs []error
	r := &Rule{Spec: s, facts: map[string]*fact{}}
	if s.ID == "" {
		errs = append(errs, ferr("$", "missing id"))
	}
	if s.Cause == "" {
		errs = append(errs, ferr("$", "missing cause"))
	} else if !knownCause(s.Cause) {
		errs = append(errs, ferr("$.cause", "unknown cause %q (the catalog: %s)", s.Cause, strings.Join(p.CauseIDs(), ", ")))
	}
	switch {
	case finding.Severity(s.Severity).Valid():
	case s.Severity == "":
		errs = append(errs, ferr("$", "missing severity"))
	case strings.Contains(s.Severity, "{{"):
		// A tier: one side alone is a warning, both sides critical.
	default:
		errs = append(errs, ferr("$.severity", "severity %q is not critical, warning or info (or a template yielding one)", s.Severity))
	}
	if s.Title == "" {
		errs = append(errs, ferr("$", "missing title"))
	}
	if s.Condition == "" {
		errs = append(errs, ferr("$", "missing condition"))
	}
	if s.Summary == "" {
		errs = append(errs, ferr("$", "missing summary"))
	}
	if s.Remediation == "" {
		errs = append(errs, ferr("$", "missing remediation"))
	}
	if len(s.Facts) == 0 {
		errs = append(errs, ferr("$", "a rule needs at least one fact"))
	}

	// outcome is the launch's state so far: "running", "ready" (the API
	// server came up) or "failed" (a traceback, an NCCL error code, a
	// process that died); benign-unless-fatal signals condition on it.
	env := map[string]any{"outcome": ""}
	for name, fs := range s.Facts {
		path := "$.facts." + name
		if !validName(name) {
			errs = append(errs, ferr(path, "fact name %q must be a lower-case identifier (a-z, 0-9, _)", name))
			continue
		}
		if reservedNames[name] {
			errs = append(errs, ferr(path, "fact name %q is reserved", name))
		}
		f := &fact{name: name}
		switch fs.Type {
		case "", "string":
			env[name] = []string{}
		case "number":
			f.number = true
			env[name] = []float64{}
		default:
			errs = append(errs, ferr(path+".type", "type %q is not string or number", fs.Type))
		}
		if len(fs.From) == 0 {
			errs = append(errs, ferr(path, "fact %q has no 'from' matchers", name))
		}
		for i, ms := range fs.From {
			m, err := compileMatcher(name, ms, fmt.Sprintf("%s.from[%d]", path, i))
			if err != nil {
				errs = append(errs, err)
				continue
			}
			f.matches = append(f.matches, m)
		}
		r.facts[name] = f
		r.factNames = append(r.factNames, name)
	}
	sortStrings(r.factNames)

	for i, k := range s.Key {
		if _, ok := s.Facts[k]; !ok {
			errs = append(errs, ferr(fmt.Sprintf("$.key[%d]", i), "key %q is not a fact of this rule", k))
		}
	}
	for i, k := range s.Evidence {
		if _, ok := s.Facts[k]; !ok {
			errs = append(errs, ferr(fmt.Sprintf("$.evidence[%d]", i), "evidence %q is not a fact of this rule", k))
		}
	}
	for i, c := range s.Explains {
		if !knownCause(c) {
			errs = append(errs, ferr(fmt.Sprintf("$.explains[%d]", i), "unknown cause %q", c))
		}
	}

	if s.Condition != "" {
		p, err := expr.Compile(s.Condition, append([]expr.Option{expr.Env(env), expr.AsBool()}, exprFuncs...)...)
		if err != nil {
			errs = append(errs, ferr("$.condition", "condition: %v", oneLine(err)))
		}
		r.condition = p
		r.usesOutcome = strings.Contains(s.Condition, "outcome") ||
			strings.Contains(s.Severity, "outcome") || strings.Contains(s.Confidence, "outcome")
	}
	var err error
	if r.severity, err = parseTemplate("severity", s.Severity); err != nil {
		errs = append(errs, ferr("$.severity", "%v", err))
	}
	if r.confidence, err = parseTemplate("confidence", orDefault(s.Confidence, "medium")); err != nil {
		errs = append(errs, ferr("$.confidence", "%v", err))
	}
	if r.title, err = parseTemplate("title", s.Title); err != nil {
		errs = append(errs, ferr("$.title", "%v", err))
	}
	if r.summary, err = parseTemplate("summary", s.Summary); err != nil {
		errs = append(errs, ferr("$.summary", "%v", err))
	}
	if r.remediation, err = parseTemplate("remediation", s.Remediation); err != nil {
		errs = append(errs, ferr("$.remediation", "%v", err))
	}
	for i, ro := range s.RuledOut {
		path := fmt.Sprintf("$.ruled_out[%d]", i)
		x := ruledOut{cause: ro.Cause}
		if !knownCause(ro.Cause) {
			errs = append(errs, ferr(path+".cause", "unknown cause %q", ro.Cause))
		}
		if ro.When == "" {
			errs = append(errs, ferr(path, "ruled_out needs 'when'"))
		} else if x.when, err = expr.Compile(ro.When, append([]expr.Option{expr.Env(env), expr.AsBool()}, exprFuncs...)...); err != nil {
			errs = append(errs, ferr(path+".when", "when: %v", oneLine(err)))
		} else if strings.Contains(ro.When, "outcome") {
			r.usesOutcome = true
		}
		if x.reason, err = parseTemplate("reason", ro.Reason); err != nil {
			errs = append(errs, ferr(path+".reason", "%v", err))
		}
		r.ruledOut = append(r.ruledOut, x)
	}
	errs = append(errs, lintSpec(s, !trusted)...)
	return r, errs
}

func compileMatcher(factName string, ms MatchSpec, path string) (*matcher, error) {
	m, err := compileMatch(Match{Regex: ms.Regex, Field: ms.Field, Sources: ms.Sources, Levels: ms.Levels, Combine: ms.Combine}, path)
	if err != nil {
		return nil, err
	}
	m.spec, m.fact = ms, factName
	if m.re != nil {
		m.valueIdx = m.re.SubexpIndex("value")
		if m.valueIdx < 0 {
			m.valueIdx = 0
			if m.re.NumSubexp() > 0 {
				m.valueIdx = 1
			}
		}
	}
	if ms.ValueExpr != "" {
		if ms.Regex == "" {
			return nil, ferr(path+".value_expr", "value_expr needs a regex with named groups")
		}
		p, err := m.compileExpr(ms.ValueExpr)
		if err != nil {
			return nil, ferr(path+".value_expr", "value_expr: %v", oneLine(err))
		}
		m.valueExpr = p
	}
	return m, nil
}

// compileMatch builds a matcher: its regex (or field), the literals that
// let the Aho-Corasick pass skip it, and its filters.
func compileMatch(ms Match, path string) (*matcher, error) {
	m := &matcher{match: ms}
	if (ms.Regex == "") == (ms.Field == "") {
		return nil, ferr(path, "a matcher needs exactly one of 'regex' or 'field'")
	}
	switch ms.Combine {
	case "", "each", "sum", "count":
	default:
		return nil, ferr(path+".combine", "combine %q is not each, sum or count", ms.Combine)
	}
	if len(ms.Sources) > 0 {
		m.sources = map[string]bool{}
		for _, s := range ms.Sources {
			m.sources[s] = true
		}
	}
	if len(ms.Levels) > 0 {
		m.levels = map[string]bool{}
		for _, l := range ms.Levels {
			m.levels[l] = true
		}
	}
	if ms.Regex != "" {
		re, err := regexp.Compile(ms.Regex)
		if err != nil {
			return nil, ferr(path+".regex", "regex: %v", err)
		}
		m.re = re
		m.groups = re.SubexpNames()
		if lits := requiredLiterals(ms.Regex); score(lits) >= minLiteral {
			m.literals = lits
		}
		m.also = alsoLiterals(ms.Regex, m.literals)
		m.lineLocal = lineLocal(ms.Regex)
		if m.lineLocal && strings.HasPrefix(ms.Regex, "(?m)^") {
			// On one line, "^" (start of text) is where "(?m)^" can match,
			// and an anchored regex is tried at one position only.
			m.lineRe, _ = regexp.Compile("^" + ms.Regex[len("(?m)^"):])
		}
	}
	return m, nil
}

// minLiteral is the shortest literal worth pre-checking; shorter ones (a
// space, "ip") occur in nearly every line.
const minLiteral = 3

// requiredLiterals returns a set of literals such that every match of the
// regex contains at least one of them, so most events are rejected by one
// Aho-Corasick pass before the regex engine runs: the longest literal of a
// concatenation, or one per branch of an alternation. nil when there is no
// useful set (or the regex folds case).
func requiredLiterals(src string) []string {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil
	}
	return literalSet(re.Simplify())
}

// lineLocal reports whether a regex can only match inside one line: nothing
// in it matches a newline, and it has no start/end-of-text anchors (those
// would mean something else on a single line).
func lineLocal(src string) bool {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return false
	}
	ok := true
	var walk func(r *syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpAnyChar, syntax.OpBeginText, syntax.OpEndText:
			ok = false
		case syntax.OpLiteral:
			for _, c := range r.Rune {
				if c == '\n' {
					ok = false
				}
			}
		case syntax.OpCharClass:
			for i := 0; i+1 < len(r.Rune); i += 2 {
				if r.Rune[i] <= '\n' && '\n' <= r.Rune[i+1] {
					ok = false
				}
			}
		}
		for _, sub := range r.Sub {
			walk(sub)
		}
	}
	walk(re)
	return ok
}

// alsoLiterals returns the literals of the regex's top-level concatenation
// other than the trigger set: a line with " GPU" but no "/" cannot be a
// `ray status` GPU line, and strings.Contains says so far faster than the
// regex engine.
func alsoLiterals(src string, trigger []string) []string {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat {
		return nil
	}
	var out []string
	for _, sub := range re.Sub {
		set := literalSet(sub)
		if len(set) != 1 || (len(trigger) == 1 && trigger[0] == set[0]) {
			continue
		}
		out = append(out, set[0])
	}
	return out
}

// score is the length of the shortest literal of a set: a longer one is
// rarer in logs, so it filters more.
func score(set []string) int {
	if len(set) == 0 {
		return 0
	}
	m := len(set[0])
	for _, s := range set[1:] {
		m = min(m, len(s))
	}
	return m
}

func literalSet(r *syntax.Regexp) []string {
	switch r.Op {
	case syntax.OpLiteral:
		if r.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []string{string(r.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return literalSet(r.Sub[0]) // x+ contains x
	case syntax.OpRepeat:
		if r.Min >= 1 {
			return literalSet(r.Sub[0])
		}
	case syntax.OpConcat:
		var best []string
		for _, sub := range r.Sub {
			if set := literalSet(sub); score(set) > score(best) {
				best = set
			}
		}
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range r.Sub {
			set := literalSet(sub)
			if len(set) == 0 {
				return nil
			}
			all = append(all, set...)
		}
		return all
	}
	return nil
}

// sumMatches adds up the first group of every match of re in s; with
// count_matches it lets a rule total the GPUs of a list of bundles.
func (m *matcher) sumMatches(params ...any) (any, error) {
	re, err := m.cachedRegexp(params[1].(string))
	if err != nil {
		return 0.0, err
	}
	total := 0.0
	for _, sm := range re.FindAllStringSubmatch(params[0].(string), -1) {
		if len(sm) > 1 {
			if f, ok := parseNumber(sm[1]); ok {
				total += f
			}
		}
	}
	return total, nil
}

func (m *matcher) countMatches(params ...any) (any, error) {
	re, err := m.cachedRegexp(params[1].(string))
	if err != nil {
		return 0.0, err
	}
	return float64(len(re.FindAllStringIndex(params[0].(string), -1))), nil
}

func (m *matcher) cachedRegexp(src string) (*regexp.Regexp, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if re, ok := m.regexps[src]; ok {
		return re, nil
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	if m.regexps == nil {
		m.regexps = map[string]*regexp.Regexp{}
	}
	m.regexps[src] = re
	return re, nil
}

func numFunc(params ...any) (any, error) {
	switch v := params[0].(type) {
	case float64:
		return v, nil
	case int:
		return float64(v), nil
	case string:
		f, ok := parseNumber(v)
		if !ok {
			return 0.0, nil
		}
		return f, nil
	}
	return 0.0, nil
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

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", " | ")), " ")
}
