package rule

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/faultline/faultline/parsers"
)

// The upstream message catalog is the rule pack's fact library: every
// matcher lives in exactly one catalog entry, an entry may fill several
// facts at once (one per named group), and rules read facts by name. Files:
// catalog/<project>.yaml beside the rules (docs/rules.md, "The catalog").

// CatalogFile is one catalog file as written in YAML.
type CatalogFile struct {
	// Project is the catalog project the file's messages belong to (nccl,
	// pytorch, ray, vllm, ...); every entry id starts with it.
	Project string `yaml:"project"`
	// Repo is the upstream repository (NVIDIA/nccl).
	Repo string `yaml:"repo"`
	// Facts declares facts: each fact is declared once in the whole
	// catalog, in any of its files.
	Facts map[string]FactDecl `yaml:"facts"`
	// Messages are the entries: one upstream message each.
	Messages []EntrySpec `yaml:"messages"`
}

// FactDecl declares a fact: its type, whether its values are a property of
// the node that logs them, and what it means.
type FactDecl struct {
	Type        string `yaml:"type"` // string (default) or number
	Self        bool   `yaml:"self"`
	Description string `yaml:"description"`
}

// Meanings of a catalog entry.
const (
	MeaningCause             = "cause"               // the message is (a side of) a cause
	MeaningSymptom           = "symptom"             // a consequence: something failed, for a reason printed elsewhere
	MeaningBenignUnlessFatal = "benign-unless-fatal" // normal on healthy launches; a cause only when the launch fails
	MeaningBenign            = "benign"              // never a cause
)

var meanings = []string{MeaningCause, MeaningSymptom, MeaningBenignUnlessFatal, MeaningBenign}

// EntrySpec is one catalog entry: one message as upstream prints it, where
// it is printed, what it means and the facts it yields. Unknown keys are
// rejected.
type EntrySpec struct {
	// ID is unique in the whole catalog: <project>.<subsystem>.<slug>.
	ID        string `yaml:"id"`
	Subsystem string `yaml:"subsystem"`
	// PrintedBy names the upstream file and function that print the
	// message ("src/bootstrap.cc bootstrapNetInit").
	PrintedBy string `yaml:"printed_by"`
	// Versions is the release range that prints it ("2.4.2 - 2.28.9",
	// open-ended "2.19.3 -").
	Versions string `yaml:"versions"`
	// Format is the upstream format string, verbatim.
	Format  string   `yaml:"format"`
	Meaning string   `yaml:"meaning"`
	Causes  []string `yaml:"causes"`
	Match   Match    `yaml:"match"`
	// Self overrides the self of the facts this entry fills: whether the
	// node logging the message states its own value (Ray's "Local node
	// IP:") or another node's (the GCS logging a node that registered).
	Self *bool `yaml:"self"`
	// Facts maps each fact the entry fills to its value: $0 (the whole
	// match, or the field's value), $name (a named group), or an
	// expr-lang expression over the named groups ("" drops the match).
	Facts map[string]string `yaml:"facts"`
	// Example is a real line (or block of lines) as a log shows it, and
	// Yields the values it must give (one test per entry).
	Example string           `yaml:"example"`
	Yields  map[string][]any `yaml:"yields"`
	Note    string           `yaml:"note"`
}

// Match is an entry's matcher: a regex over the event message or a parsed
// field, with optional filters.
type Match struct {
	// Regex is matched against the event message (RE2 syntax); named
	// groups feed facts.
	Regex string `yaml:"regex"`
	// Field takes a parsed event field instead: ip, process, pid,
	// component, source, level, node, container, or a source-specific
	// field (host, exc_type, interface, ...).
	Field   string   `yaml:"field"`
	Sources []string `yaml:"sources"`
	Levels  []string `yaml:"levels"`
	// Combine says what several matches in one event give: "each"
	// (default, one value per match), "sum" or "count" (one value).
	Combine string `yaml:"combine"`
}

// Entry is a compiled catalog entry.
type Entry struct {
	EntrySpec
	Project string
	Repo    string
	File    string // where it was loaded from
	Line    int    // line of the entry in File
	// ExampleLine and ExampleColumn locate its example in File.
	ExampleLine, ExampleColumn int

	m    *matcher
	outs []factOut
}

// factOut is how an entry computes one fact's value from a match.
type factOut struct {
	fact   *FactDecl
	name   string
	self   bool
	group  int         // submatch index (0: the whole match); -1 with expr
	expr   *vm.Program // over the named groups
	number bool
}

// Yield returns the values the entry takes from an event, per fact (a fact
// without a value is absent): exactly what the engine records from it.
func (e *Entry) Yield(ev *parsers.Event) map[string][]string {
	text := ev.Message
	if text == "" {
		text = ev.Text
	}
	vals, _ := e.extract(ev, text, nil)
	out := map[string][]string{}
	for i, v := range vals {
		if len(v) > 0 {
			out[e.outs[i].name] = append(out[e.outs[i].name], v...)
		}
	}
	return out
}

// Matches reports whether the entry's matcher matches the event at all
// (an entry without facts only classifies a message).
func (e *Entry) Matches(ev *parsers.Event) bool {
	text := ev.Message
	if text == "" {
		text = ev.Text
	}
	field, all := e.m.find(ev, text)
	return field != "" || len(all) > 0
}

// FactNames returns the names of the facts the entry fills, sorted.
func (e *Entry) FactNames() []string {
	out := make([]string, len(e.outs))
	for i, o := range e.outs {
		out[i] = o.name
	}
	slices.Sort(out)
	return out
}

var (
	entryIDRe   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*){2,}$`)
	groupRefRe  = regexp.MustCompile(`^\$([A-Za-z_][A-Za-z0-9_]*|[0-9]+)$`)
	projectRe   = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	subsystemRe = projectRe
)

// compileEntry checks an entry and builds its matcher. facts are the
// catalog's declared facts; causes the known cause ids. Every problem names
// the path of its key under base ($.messages[i]).
func compileEntry(es EntrySpec, project string, facts map[string]*FactDecl, knownCause func(string) bool, base string, costs bool) (*Entry, []error) {
	var errs []error
	e := &Entry{EntrySpec: es, Project: project}
	switch {
	case es.ID == "":
		errs = append(errs, ferr(base, "missing id"))
	case !entryIDRe.MatchString(es.ID):
		errs = append(errs, ferr(base+".id", "id %q is not <project>.<subsystem>.<slug> in lower case (a-z, 0-9, -)", es.ID))
	case project != "" && !strings.HasPrefix(es.ID, project+"."):
		errs = append(errs, ferr(base+".id", "id %q does not start with the file's project %q", es.ID, project+"."))
	case es.Subsystem != "" && !strings.HasPrefix(es.ID, project+"."+es.Subsystem+"."):
		errs = append(errs, ferr(base+".id", "id %q does not start with %q (project.subsystem.)", es.ID, project+"."+es.Subsystem+"."))
	}
	switch {
	case es.Subsystem == "":
		errs = append(errs, ferr(base, "missing subsystem"))
	case !subsystemRe.MatchString(es.Subsystem):
		errs = append(errs, ferr(base+".subsystem", "subsystem %q must be lower case (a-z, 0-9, -)", es.Subsystem))
	}
	if strings.TrimSpace(es.PrintedBy) == "" {
		errs = append(errs, ferr(base, "missing printed_by (the upstream file and function that print the message)"))
	}
	switch {
	case strings.TrimSpace(es.Versions) == "":
		errs = append(errs, ferr(base, "missing versions (the upstream releases that print the message)"))
	case !strings.ContainsAny(es.Versions, "0123456789"):
		errs = append(errs, ferr(base+".versions", "versions %q names no version number", es.Versions))
	}
	switch {
	case es.Meaning == "":
		errs = append(errs, ferr(base, "missing meaning (%s)", strings.Join(meanings, " | ")))
	case !slices.Contains(meanings, es.Meaning):
		errs = append(errs, ferr(base+".meaning", "meaning %q is not one of %s", es.Meaning, strings.Join(meanings, ", ")))
	case es.Meaning == MeaningCause && len(es.Causes) == 0:
		errs = append(errs, ferr(base, "meaning cause needs causes: the catalog causes the message points to"))
	case es.Meaning == MeaningBenign && len(es.Causes) > 0:
		errs = append(errs, ferr(base+".causes", "a benign message points to no cause"))
	}
	for i, c := range es.Causes {
		if !knownCause(c) {
			errs = append(errs, ferr(fmt.Sprintf("%s.causes[%d]", base, i), "unknown cause %q", c))
		}
	}
	if strings.TrimSpace(es.Example) == "" {
		errs = append(errs, ferr(base, "missing example: a real line the message appears in (the entry's test)"))
	}

	m, err := compileMatch(es.Match, base+".match")
	if err != nil {
		errs = append(errs, err)
	} else {
		e.m = m
		errs = append(errs, lintMatch(es.Match, base+".match", costs)...)
	}

	for _, name := range sortedKeys(es.Facts) {
		path := base + ".facts." + name
		decl := facts[name]
		if decl == nil {
			errs = append(errs, ferr(path, "fact %q is not declared (declare it once under facts: in a catalog file, with its type and description)", name))
			continue
		}
		o := factOut{fact: decl, name: name, self: decl.Self, number: decl.Type == "number", group: -1}
		if es.Self != nil {
			o.self = *es.Self
		}
		src := strings.TrimSpace(es.Facts[name])
		if m == nil {
			continue
		}
		if err := o.compile(src, m, path); err != nil {
			errs = append(errs, err)
			continue
		}
		e.outs = append(e.outs, o)
	}
	for _, name := range sortedKeys(es.Yields) {
		if _, ok := es.Facts[name]; !ok {
			errs = append(errs, ferr(base+".yields."+name, "yields %q, which is not a fact of this entry", name))
		}
	}
	if es.Self != nil && len(es.Facts) == 0 {
		errs = append(errs, ferr(base+".self", "self without facts"))
	}
	return e, errs
}

// compile reads a fact's value spec: $0, $name or an expression.
func (o *factOut) compile(src string, m *matcher, path string) error {
	if src == "" {
		return ferr(path, "empty value: $0 (the whole match), $name (a named group) or an expression over the named groups")
	}
	if g := groupRefRe.FindStringSubmatch(src); g != nil {
		if g[1] == "0" {
			o.group = 0
			return nil
		}
		if m.re == nil {
			return ferr(path, "%s: a field matcher has no groups (use $0)", src)
		}
		if n, err := strconv.Atoi(g[1]); err == nil {
			if n > m.re.NumSubexp() {
				return ferr(path, "%s: the regex has %d group(s)", src, m.re.NumSubexp())
			}
			o.group = n
			return nil
		}
		i := m.re.SubexpIndex(g[1])
		if i < 0 {
			return ferr(path, "%s: the regex has no group named %q", src, g[1])
		}
		o.group = i
		return nil
	}
	if m.re == nil {
		return ferr(path, "an expression needs a regex with named groups (a field matcher gives $0)")
	}
	p, err := m.compileExpr(src)
	if err != nil {
		return ferr(path, "value: %v", oneLine(err))
	}
	o.expr = p
	return nil
}

// compileExpr compiles an expression over the regex's named groups and
// fields, the event's source-specific parsed fields (NCCL's host, ...;
// a key the event lacks reads as nil): a value that ties the message to
// where it was printed ("host + busId").
func (m *matcher) compileExpr(src string) (*vm.Program, error) {
	env := map[string]any{exprFields: map[string]string{}}
	for _, g := range m.groups {
		if g != "" {
			env[g] = ""
		}
	}
	return expr.Compile(src, append([]expr.Option{expr.Env(env),
		expr.Function("num", numFunc, new(func(any) float64)),
		expr.Function("sum_matches", m.sumMatches, new(func(string, string) float64)),
		expr.Function("count_matches", m.countMatches, new(func(string, string) float64))}, exprFuncs...)...)
}
