package rule

import (
	"fmt"
	"strings"
	"text/template/parse"

	"github.com/faultline/faultline/parsers"
)

// Strict lint: names that the engine would silently never match (a source
// spelt `vllmm`, a field no parser sets, a template field that is not a
// fact) are errors at load time, so a typo cannot disable a rule — also not
// through hot reload, which compiles with the same code. Nothing here runs
// per event.

// knownSources are the values parsers put in Event.Source.
var knownSources = []string{
	parsers.SourceVLLM, parsers.SourceRay, parsers.SourceNCCL,
	parsers.SourceTorch, parsers.SourcePython, parsers.SourceOther,
}

// knownLevels are the normalised levels of Event.Level.
var knownLevels = []string{
	parsers.LevelDebug, parsers.LevelInfo, parsers.LevelWarning,
	parsers.LevelError, parsers.LevelCritical,
}

// genericFields are the names eventField resolves from Event's own members.
var genericFields = []string{"ip", "process", "pid", "component", "source", "level", "node", "container"}

// parserFields are the source-specific keys parsers set in Event.Fields
// (p.set("...") in parsers/parse*.go); TestParserFieldsAreKnown keeps this
// list in step with the parsers.
var parserFields = []string{
	"address", "cuda_dev", "cuda_version", "env", "env_value", "exc_chain", "exc_message",
	"exc_type", "file", "function", "host", "interface", "lineno", "nccl_result", "node_ip",
	"nranks", "pid", "rank", "ray_component", "repeated", "tid", "version", "warning_type",
}

// lintMatch checks a matcher's sources, levels and field against what the
// parsers set, and with costs its regex against the cost budget.
func lintMatch(ms Match, path string, costs bool) []error {
	var errs []error
	for i, src := range ms.Sources {
		if !containsString(knownSources, src) {
			errs = append(errs, ferr(fmt.Sprintf("%s.sources[%d]", path, i), "unknown source %q (valid: %s)", src, strings.Join(knownSources, ", ")))
		}
	}
	for i, lvl := range ms.Levels {
		if !containsString(knownLevels, lvl) {
			errs = append(errs, ferr(fmt.Sprintf("%s.levels[%d]", path, i), "unknown level %q (valid: %s)", lvl, strings.Join(knownLevels, ", ")))
		}
	}
	if ms.Field != "" && !containsString(genericFields, ms.Field) && !containsString(parserFields, ms.Field) {
		errs = append(errs, ferr(path+".field", "unknown field %q (valid: %s; source-specific: %s)", ms.Field,
			strings.Join(genericFields, ", "), strings.Join(parserFields, ", ")))
	}
	if costs && ms.Regex != "" {
		if err := lintRegexCost(ms.Regex, path+".regex"); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// dotKind is what `.` stands for at a point of a template.
type dotKind int

const (
	dotRoot    dotKind = iota // the rule's template data
	dotPair                   // an element of .pairs.<fact>
	dotUnknown                // anything else (a value of a fact, ...): not checked
)

// templateFields parses a template and returns the facts it reads and a
// message for every field that refers to nothing: `.x` where x is neither
// a declared fact nor reserved, `.owned.x`/`.pairs.x` where x is not a
// fact, a field of a pair other than Value and Node. Reserved names read
// are returned too (outcome matters to re-evaluation).
func templateFields(name, text string, facts map[string]*FactDecl) ([]string, []string) {
	if text == "" {
		return nil, nil
	}
	// Only the tree matters here: function names are compile's to check,
	// and so are parse errors.
	t := parse.New(name)
	t.Mode = parse.SkipFuncCheck
	trees := map[string]*parse.Tree{}
	if _, err := t.Parse(text, "", "", trees); err != nil {
		return nil, nil
	}
	l := &templateLint{name: name, text: text, facts: facts, refs: map[string]bool{}}
	for _, t := range trees {
		if t.Root != nil {
			l.walk(t.Root, dotRoot)
		}
	}
	return sortedKeys(l.refs), l.msgs
}

type templateLint struct {
	name, text string
	facts      map[string]*FactDecl
	refs       map[string]bool
	msgs       []string
}

func (l *templateLint) addf(pos parse.Pos, format string, args ...any) {
	line := 1 + strings.Count(l.text[:min(int(pos), len(l.text))], "\n")
	l.msgs = append(l.msgs, fmt.Sprintf("%s (template line %d): %s", l.name, line, fmt.Sprintf(format, args...)))
}

func (l *templateLint) walk(n parse.Node, dot dotKind) {
	switch n := n.(type) {
	case *parse.ListNode:
		if n == nil {
			return
		}
		for _, c := range n.Nodes {
			l.walk(c, dot)
		}
	case *parse.ActionNode:
		l.pipe(n.Pipe, dot)
	case *parse.IfNode:
		l.pipe(n.Pipe, dot)
		l.walk(n.List, dot)
		l.walk(n.ElseList, dot)
	case *parse.RangeNode:
		l.pipe(n.Pipe, dot)
		l.walk(n.List, l.rangeDot(n.Pipe, dot))
		l.walk(n.ElseList, dot)
	case *parse.WithNode:
		l.pipe(n.Pipe, dot)
		l.walk(n.List, dotUnknown)
		l.walk(n.ElseList, dot)
	case *parse.TemplateNode:
		l.pipe(n.Pipe, dot)
	}
}

// rangeDot is the dot inside `range PIPE`: a Pair over .pairs.<fact>.
func (l *templateLint) rangeDot(p *parse.PipeNode, dot dotKind) dotKind {
	if p == nil || len(p.Cmds) != 1 || len(p.Cmds[0].Args) != 1 {
		return dotUnknown
	}
	var ident []string
	switch a := p.Cmds[0].Args[0].(type) {
	case *parse.FieldNode:
		if dot != dotRoot {
			return dotUnknown
		}
		ident = a.Ident
	case *parse.VariableNode:
		if a.Ident[0] != "$" {
			return dotUnknown
		}
		ident = a.Ident[1:]
	}
	if len(ident) == 2 && ident[0] == "pairs" {
		return dotPair
	}
	return dotUnknown
}

func (l *templateLint) pipe(p *parse.PipeNode, dot dotKind) {
	if p == nil {
		return
	}
	for _, c := range p.Cmds {
		for _, a := range c.Args {
			l.arg(a, dot)
		}
	}
}

func (l *templateLint) arg(a parse.Node, dot dotKind) {
	switch a := a.(type) {
	case *parse.FieldNode:
		l.fields(a.Position(), a.Ident, dot)
	case *parse.VariableNode:
		// $ is the root data wherever it appears; other variables hold
		// values the lint does not follow.
		if a.Ident[0] == "$" && len(a.Ident) > 1 {
			l.fields(a.Position(), a.Ident[1:], dotRoot)
		}
	case *parse.ChainNode:
		if p, ok := a.Node.(*parse.PipeNode); ok {
			l.pipe(p, dot)
		}
	case *parse.PipeNode:
		l.pipe(a, dot)
	}
}

// fields checks a field chain (.a.b) evaluated on a dot of the given kind.
func (l *templateLint) fields(pos parse.Pos, ident []string, dot dotKind) {
	switch dot {
	case dotPair:
		if ident[0] != "Value" && ident[0] != "Node" {
			l.addf(pos, "unknown field .%s of a pair (a pair has .Value and .Node)", ident[0])
		}
	case dotRoot:
		x := ident[0]
		switch {
		case x == "owned" || x == "pairs":
			if len(ident) > 1 {
				if l.facts[ident[1]] == nil {
					l.addf(pos, "unknown field .%s.%s: %q is not a declared fact", x, ident[1], ident[1])
				} else {
					l.refs[ident[1]] = true
				}
			}
		case reservedNames[x]:
			l.refs[x] = true
		case l.facts[x] == nil:
			l.addf(pos, "unknown field .%s: not a declared fact nor reserved (.%s)", x, strings.Join(sortedKeys(reservedNames), ", ."))
		default:
			l.refs[x] = true
		}
	}
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return keys
}
