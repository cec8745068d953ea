package rule

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// A rule pack is a directory: rules (<id>.yaml) with their fixtures
// (<id>.test.yaml), the catalog of upstream messages that fills the facts
// the rules read (catalog/*.yaml) and the causes rules name (causes.yaml).
// The built-in pack is embedded; every --rules DIR is a layer on top of it
// that may add or replace rules, catalog entries and causes.
const (
	catalogDir = "catalog"
	causesFile = "causes.yaml"
)

// Pack is a loaded rule pack: what the engine runs and what lint reports on.
type Pack struct {
	// Warnings are what lint reports without failing: facts no rule reads,
	// facts no entry fills.
	Warnings []Problem

	Rules   []*Rule
	Entries []*Entry // the catalog, in file order
	Facts   map[string]*FactDecl
	Causes  []Cause

	factAt  map[string]string   // fact -> where it is declared, for messages
	fillers map[string][]*Entry // fact -> the entries that fill it
	launch  *launchSet
}

// Cause is a cause of the catalog: what it means and its default fix (the
// remediation of a finding whose rule gives none).
type Cause struct {
	ID          string `yaml:"id"`
	Description string `yaml:"description"`
	Fix         string `yaml:"fix"`
	File        string `yaml:"-"`
}

// causesSpec is causes.yaml.
type causesSpec struct {
	Causes []Cause `yaml:"causes"`
}

// KnownCause reports whether c is a cause of the pack.
func (p *Pack) KnownCause(c string) bool { return p.Cause(c) != nil }

// Cause returns the cause named c, or nil.
func (p *Pack) Cause(c string) *Cause {
	for i := range p.Causes {
		if p.Causes[i].ID == c {
			return &p.Causes[i]
		}
	}
	return nil
}

// CauseIDs returns the ids of the pack's causes, in pack order.
func (p *Pack) CauseIDs() []string {
	out := make([]string, len(p.Causes))
	for i, c := range p.Causes {
		out[i] = c.ID
	}
	return out
}

// Entry returns the catalog entry with the given id, or nil.
func (p *Pack) Entry(id string) *Entry {
	for _, e := range p.Entries {
		if e.ID == id {
			return e
		}
	}
	return nil
}

// layer is what one pack directory holds, parsed but not compiled.
type layer struct {
	display string
	trusted bool
	rules   []ruleDoc
	catalog []catalogDoc
	causes  []causeDoc
	launch  []launchDoc
}

type ruleDoc struct {
	file string
	doc  *ast.DocumentNode
	line int
	spec Spec
}

type catalogDoc struct {
	file  string
	doc   *ast.DocumentNode
	spec  CatalogFile
	nodes []ast.Node // each entry's node (nil where it did not decode)
	bad   []int      // entries that did not decode (already reported)
}

type causeDoc struct {
	file  string
	doc   *ast.DocumentNode
	index int
	cause Cause
}

// readLayer parses the pack files of dir in fsys; display names the
// directory in messages.
func readLayer(fsys fs.FS, dir, display string, trusted bool) (*layer, []Problem) {
	l := &layer{display: display, trusted: trusted}
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, []Problem{{File: display, Line: 1, Column: 1, Message: fmt.Sprintf("read rules: %v", err)}}
	}
	var problems []Problem
	read := func(rel string) ([]byte, string, bool) {
		name := path.Join(display, rel)
		data, err := fs.ReadFile(fsys, path.Join(dir, rel))
		if err != nil {
			problems = append(problems, Problem{File: name, Line: 1, Column: 1, Message: err.Error()})
			return nil, name, false
		}
		return data, name, true
	}
	for _, e := range entries {
		switch {
		case e.IsDir() && e.Name() == catalogDir:
			cat, err := fs.ReadDir(fsys, path.Join(dir, catalogDir))
			if err != nil {
				problems = append(problems, Problem{File: path.Join(display, catalogDir), Line: 1, Column: 1, Message: err.Error()})
				continue
			}
			for _, c := range cat {
				if c.IsDir() || !isYAML(c.Name()) {
					continue
				}
				data, name, ok := read(path.Join(catalogDir, c.Name()))
				if !ok {
					continue
				}
				docs, ps := parseCatalogFile(name, data)
				l.catalog = append(l.catalog, docs...)
				problems = append(problems, ps...)
			}
		case e.IsDir():
		case e.Name() == launchFile:
			data, name, ok := read(e.Name())
			if !ok {
				continue
			}
			docs, specs, ps := parseDocs[LaunchSpec](name, data)
			for i := range docs {
				l.launch = append(l.launch, launchDoc{file: name, doc: docs[i], spec: specs[i]})
			}
			problems = append(problems, ps...)
		case e.Name() == causesFile:
			data, name, ok := read(e.Name())
			if !ok {
				continue
			}
			cs, ps := parseCauses(name, data)
			l.causes = append(l.causes, cs...)
			problems = append(problems, ps...)
		case isRuleFile(e.Name()):
			data, name, ok := read(e.Name())
			if !ok {
				continue
			}
			docs, cats, ps := parseRuleFile(name, data)
			l.rules = append(l.rules, docs...)
			l.catalog = append(l.catalog, cats...)
			problems = append(problems, ps...)
		}
	}
	return l, problems
}

func isYAML(name string) bool {
	return (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) && !IsTestFile(name)
}

// parseDocs decodes every YAML document of a file into a T, strictly
// (unknown keys are errors at their line).
func parseDocs[T any](file string, data []byte) ([]*ast.DocumentNode, []T, []Problem) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, nil, []Problem{yamlProblem(file, err)}
	}
	return decodeDocs[T](file, f.Docs, nil)
}

// decodeDocs decodes the documents keep accepts (all for nil) into a T,
// strictly.
func decodeDocs[T any](file string, all []*ast.DocumentNode, keep func(*ast.DocumentNode) bool) ([]*ast.DocumentNode, []T, []Problem) {
	var docs []*ast.DocumentNode
	var out []T
	var problems []Problem
	for _, doc := range all {
		if doc.Body == nil || (keep != nil && !keep(doc)) {
			continue
		}
		var v T
		if err := yaml.NodeToValue(doc.Body, &v, yaml.Strict()); err != nil {
			problems = append(problems, yamlProblem(file, err))
			continue
		}
		docs = append(docs, doc)
		out = append(out, v)
	}
	return docs, out, problems
}

// catalogTop is a catalog file with its entries left undecoded: each is
// decoded on its own, so that an unknown key in one entry does not hide the
// problems of the others.
type catalogTop struct {
	Project  string              `yaml:"project"`
	Repo     string              `yaml:"repo"`
	Facts    map[string]FactDecl `yaml:"facts"`
	Messages []ast.Node          `yaml:"messages"`
}

func parseCatalogFile(file string, data []byte) ([]catalogDoc, []Problem) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, []Problem{yamlProblem(file, err)}
	}
	return parseCatalogDocs(file, f.Docs, nil)
}

// isCatalogDoc reports whether a document of a rule file is a catalog
// document (messages, or fact declarations without a rule id): a rule file
// may carry the entries its rule reads, as a document of its own.
func isCatalogDoc(doc *ast.DocumentNode) bool {
	keys, ok := topKeys(doc.Body)
	if !ok {
		var m map[string]any
		if yaml.NodeToValue(doc.Body, &m) != nil {
			return false
		}
		keys = map[string]bool{}
		for k := range m {
			keys[k] = true
		}
	}
	return keys["messages"] || (keys["facts"] && !keys["id"])
}

// topKeys is the set of keys of a block mapping read from its nodes (not
// decoding the values). ok is false where decoding could say otherwise: not
// a plain mapping, or a merge key.
func topKeys(n ast.Node) (map[string]bool, bool) {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		return nil, false
	}
	keys := make(map[string]bool, len(m.Values))
	for _, v := range m.Values {
		k, ok := v.Key.(*ast.StringNode)
		if !ok {
			return nil, false
		}
		keys[k.Value] = true
	}
	return keys, true
}

func parseCatalogDocs(file string, all []*ast.DocumentNode, keep func(*ast.DocumentNode) bool) ([]catalogDoc, []Problem) {
	docs, tops, problems := decodeDocs[catalogTop](file, all, keep)
	var out []catalogDoc
	for i, doc := range docs {
		t := tops[i]
		cd := catalogDoc{file: file, doc: doc, spec: CatalogFile{Project: t.Project, Repo: t.Repo, Facts: t.Facts},
			nodes: make([]ast.Node, len(t.Messages))}
		for j, n := range t.Messages {
			var es EntrySpec
			var err error
			if _, alias := n.(*ast.AliasNode); n == nil || alias {
				// A null or an alias: the node at its path, as written.
				var yp *yaml.Path
				if yp, err = yaml.PathString(fmt.Sprintf("$.messages[%d]", j)); err != nil {
					continue
				}
				n, err = yp.FilterNode(doc.Body)
			}
			if err == nil && n != nil {
				err = yaml.NodeToValue(n, &es, yaml.Strict())
			}
			if err != nil {
				problems = append(problems, yamlProblem(file, err))
				// Keep its place, so that later entries keep their paths.
				es = EntrySpec{ID: ""}
				cd.bad = append(cd.bad, j)
			}
			cd.nodes[j] = n
			cd.spec.Messages = append(cd.spec.Messages, es)
		}
		out = append(out, cd)
	}
	return out, problems
}

func parseCauses(file string, data []byte) ([]causeDoc, []Problem) {
	docs, specs, problems := parseDocs[causesSpec](file, data)
	var out []causeDoc
	for i, doc := range docs {
		for j, c := range specs[i].Causes {
			c.File = file
			out = append(out, causeDoc{file: file, doc: doc, index: j, cause: c})
		}
	}
	return out, problems
}

// parseRuleFile reads a rule file, parsed once: its rules, and the catalog
// documents it may carry.
func parseRuleFile(file string, data []byte) ([]ruleDoc, []catalogDoc, []Problem) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, nil, []Problem{yamlProblem(file, err)}
	}
	catalog := make(map[*ast.DocumentNode]bool, len(f.Docs))
	for _, doc := range f.Docs {
		if doc.Body != nil {
			catalog[doc] = isCatalogDoc(doc)
		}
	}
	rules, problems := parseRuleDocs(file, f.Docs, func(doc *ast.DocumentNode) bool { return !catalog[doc] })
	cats, ps := parseCatalogDocs(file, f.Docs, func(doc *ast.DocumentNode) bool { return catalog[doc] })
	return rules, cats, append(problems, ps...)
}

func parseRuleDocs(file string, all []*ast.DocumentNode, keep func(*ast.DocumentNode) bool) ([]ruleDoc, []Problem) {
	docs, specs, problems := decodeDocs[v1Spec](file, all, keep)
	out := make([]ruleDoc, 0, len(docs))
	for i, doc := range docs {
		line := 1
		if tk := doc.Body.GetToken(); tk != nil && tk.Position != nil {
			line = tk.Position.Line
		}
		// Rule language v1 keys: say where they went instead of "unknown".
		v1 := false
		for _, k := range []struct {
			key string
			set bool
			msg string
		}{
			{"facts", specs[i].Facts != nil, "rule language v1: a rule no longer declares matchers; facts come from the catalog (catalog/*.yaml entries fill them, rules read them by name: docs/rules.md)"},
			{"severity", specs[i].Severity != nil, "rule language v1: severity is set per case (cases: [{when, severity, confidence, title, summary}])"},
			{"confidence", specs[i].Confidence != nil, "rule language v1: confidence is set per case (cases: [{when, severity, confidence, title, summary}])"},
			{"upstream", specs[i].Upstream != nil, "rule language v1: where a message is printed is said by its catalog entry (printed_by, versions)"},
		} {
			if k.set {
				problems = append(problems, positioned(file, doc, line, ferr("$."+k.key, "%s", k.msg)))
				v1 = true
			}
		}
		if v1 {
			continue
		}
		out = append(out, ruleDoc{file: file, doc: doc, line: line, spec: specs[i].Spec})
	}
	return out, problems
}

// build compiles layers, each on top of the ones before it: causes and
// catalog entries of a later layer replace those of the same id, facts are
// declared once, and rules of a later layer replace rules of the same id.
// With rulesFrom > 0, the rules of the layers before it are left out (the
// catalog and causes stay: --rules-only).
func build(layers []*layer, rulesFrom int) (*Pack, []Problem) {
	p := &Pack{Facts: map[string]*FactDecl{}, factAt: map[string]string{}}
	var problems []Problem
	at := func(file string, doc *ast.DocumentNode, err error) {
		problems = append(problems, positioned(file, doc, 1, err))
	}

	// Causes.
	for _, l := range layers {
		seen := map[string]bool{}
		for _, cd := range l.causes {
			base := fmt.Sprintf("$.causes[%d]", cd.index)
			c := cd.cause
			switch {
			case c.ID == "":
				at(cd.file, cd.doc, ferr(base, "missing id"))
				continue
			case !causeIDRe.MatchString(c.ID):
				at(cd.file, cd.doc, ferr(base+".id", "cause id %q must be lower case words joined by - (a-z, 0-9)", c.ID))
			case seen[c.ID]:
				at(cd.file, cd.doc, ferr(base+".id", "duplicate cause %q", c.ID))
				continue
			}
			seen[c.ID] = true
			if strings.TrimSpace(c.Description) == "" {
				at(cd.file, cd.doc, ferr(base, "cause %q has no description", c.ID))
			}
			if strings.TrimSpace(c.Fix) == "" {
				at(cd.file, cd.doc, ferr(base, "cause %q has no fix (the default remediation)", c.ID))
			}
			if i := slices.IndexFunc(p.Causes, func(x Cause) bool { return x.ID == c.ID }); i >= 0 {
				p.Causes[i] = c
			} else {
				p.Causes = append(p.Causes, c)
			}
		}
	}

	// Launch signals: every layer's add to the ones before.
	var launch []launchDoc
	for _, l := range layers {
		launch = append(launch, l.launch...)
	}
	ls, ps := compileLaunch(launch)
	p.launch = ls
	problems = append(problems, ps...)

	declared := map[string]Problem{} // where each fact is declared
	// Facts: declared once. A later layer may repeat a declaration as it
	// is (a copy of the built-in pack given as --rules), not change it.
	for li, l := range layers {
		inLayer := map[string]bool{}
		for _, cd := range l.catalog {
			for _, name := range sortedKeys(cd.spec.Facts) {
				path := "$.facts." + name
				d := cd.spec.Facts[name]
				if prev, dup := p.factAt[name]; dup {
					if inLayer[name] {
						at(cd.file, cd.doc, ferr(path, "fact %q is already declared in %s (a fact is declared once)", name, prev))
					} else if *p.Facts[name] != d {
						at(cd.file, cd.doc, ferr(path, "fact %q is declared differently in %s (a fact means one thing: give this one another name)", name, prev))
					}
					continue
				}
				inLayer[name] = true
				switch {
				case !validName(name):
					at(cd.file, cd.doc, ferr(path, "fact name %q must be a lower-case identifier (a-z, 0-9, _)", name))
					continue
				case reservedNames[name]:
					at(cd.file, cd.doc, ferr(path, "fact name %q is reserved", name))
					continue
				}
				switch d.Type {
				case "", "string":
				case "number":
				default:
					at(cd.file, cd.doc, ferr(path+".type", "type %q is not string or number", d.Type))
				}
				if strings.TrimSpace(d.Description) == "" {
					at(cd.file, cd.doc, ferr(path, "fact %q has no description", name))
				}
				decl := d
				p.Facts[name] = &decl
				p.factAt[name] = cd.file
				if li >= rulesFrom {
					// Lint speaks of the layers it was asked about.
					declared[name] = positioned(cd.file, cd.doc, 1, ferr(path, ""))
				}
			}
		}
	}

	// Entries: a later layer's entry replaces the earlier one of its id.
	type placed struct {
		e     *Entry
		doc   *ast.DocumentNode
		at    string
		layer int
	}
	var entries []placed
	byID := map[string]int{}
	example, _ := yaml.PathString("$.example")
	for li, l := range layers {
		inLayer := map[string]string{}
		for _, cd := range l.catalog {
			if len(cd.spec.Messages) > 0 && cd.spec.Project == "" {
				at(cd.file, cd.doc, ferr("$", "missing project (the catalog project of the file's messages)"))
			} else if cd.spec.Project != "" && !projectRe.MatchString(cd.spec.Project) {
				at(cd.file, cd.doc, ferr("$.project", "project %q must be lower case (a-z, 0-9, -)", cd.spec.Project))
			}
			for i, es := range cd.spec.Messages {
				if slices.Contains(cd.bad, i) {
					continue
				}
				base := fmt.Sprintf("$.messages[%d]", i)
				e, errs := compileEntry(es, cd.spec.Project, p.Facts, p.KnownCause, base, !l.trusted)
				for _, err := range errs {
					at(cd.file, cd.doc, err)
				}
				e.Repo, e.File = cd.spec.Repo, cd.file
				e.Line, e.ExampleLine, e.ExampleColumn = entryPos(cd, i, base, example)
				if e.ID == "" {
					continue
				}
				if prev, dup := inLayer[e.ID]; dup {
					at(cd.file, cd.doc, ferr(base+".id", "duplicate entry id %q (also in %s)", e.ID, prev))
					continue
				}
				inLayer[e.ID] = fmt.Sprintf("%s:%d", cd.file, e.Line)
				if len(errs) > 0 {
					continue
				}
				pl := placed{e: e, doc: cd.doc, at: base, layer: li}
				if j, ok := byID[e.ID]; ok {
					entries[j] = pl
					continue
				}
				byID[e.ID] = len(entries)
				entries = append(entries, pl)
			}
		}
	}
	// One wording, one entry: a matcher written twice in a pack is two
	// entries that drift apart. (A --rules DIR may match a built-in wording
	// for facts of its own.)
	seenMatch := map[string]*Entry{}
	for _, pl := range entries {
		key := fmt.Sprint(pl.layer, "\x00", matchKey(pl.e.Match))
		if prev := seenMatch[key]; prev != nil {
			at(pl.e.File, pl.doc, ferr(pl.at+".match", "the same matcher as entry %s (%s:%d): one message, one entry (add the facts to that entry)", prev.ID, prev.File, prev.Line))
			continue
		}
		seenMatch[key] = pl.e
		p.Entries = append(p.Entries, pl.e)
	}
	p.fillers = map[string][]*Entry{}
	for _, e := range p.Entries {
		for _, o := range e.outs {
			p.fillers[o.name] = append(p.fillers[o.name], e)
		}
	}

	// Rules.
	read := map[string]bool{} // facts read by a rule of any layer
	byRule := map[string]int{}
	for li, l := range layers {
		inLayer := map[string]string{}
		for _, rd := range l.rules {
			r, errs := compile(rd.spec, p, l.trusted)
			for _, e := range errs {
				problems = append(problems, positioned(rd.file, rd.doc, rd.line, e))
			}
			if len(errs) > 0 {
				continue
			}
			r.File, r.line, r.pack = rd.file, rd.line, p
			for _, f := range r.factNames {
				read[f] = true
			}
			if prev, dup := inLayer[r.ID]; dup {
				problems = append(problems, Problem{File: rd.file, Line: rd.line, Column: 1,
					Message: fmt.Sprintf("duplicate rule id %q (also in %s)", r.ID, prev)})
				continue
			}
			inLayer[r.ID] = rd.file
			if li < rulesFrom {
				continue
			}
			if j, ok := byRule[r.ID]; ok {
				p.Rules[j] = r
				continue
			}
			byRule[r.ID] = len(p.Rules)
			p.Rules = append(p.Rules, r)
		}
	}
	for _, name := range sortedKeys(declared) {
		w := declared[name]
		switch {
		case len(p.fillers[name]) == 0:
			w.Message = fmt.Sprintf("warning: fact %q is filled by no catalog entry", name)
		case !read[name]:
			w.Message = fmt.Sprintf("warning: fact %q is read by no rule (its entries run only for coverage)", name)
		default:
			continue
		}
		p.Warnings = append(p.Warnings, w)
	}
	sortProblems(p.Warnings)
	return p, problems
}

var causeIDRe = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// matchKey identifies a matcher for the duplicate check: the same regex
// (or field) with the same filters.
func matchKey(m Match) string {
	return strings.Join([]string{m.Regex, m.Field, strings.Join(m.Sources, ","), strings.Join(m.Levels, ","), m.Combine}, "\x00")
}

// nodePos is the line and column of the node at a path of a document (or
// of its closest parent).
func nodePos(doc *ast.DocumentNode, p string) (int, int) {
	pr := positioned("", doc, 1, ferr(p, ""))
	return pr.Line, pr.Column
}

// entryPos is the line of the i-th entry of a catalog document and the
// line and column of its example (of the entry where it has none), found
// from the entry's node: nodePos from the document's root walks its path
// for each entry.
func entryPos(cd catalogDoc, i int, base string, example *yaml.Path) (line, exLine, exCol int) {
	n := cd.nodes[i]
	if n == nil || example == nil {
		line, _ = nodePos(cd.doc, base)
		exLine, exCol = nodePos(cd.doc, base+".example")
		return line, exLine, exCol
	}
	line = 1
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		line = tk.Position.Line
	}
	exLine, exCol = line, 1
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		exCol = tk.Position.Column
	}
	if x, err := example.FilterNode(n); err == nil && x != nil {
		if tk := x.GetToken(); tk != nil && tk.Position != nil {
			exLine, exCol = tk.Position.Line, tk.Position.Column
		}
	}
	return line, exLine, exCol
}

// loadLayers reads and builds a pack from layers given as file systems.
func loadLayers(srcs []layerSource, rulesFrom int) (*Pack, error) {
	var layers []*layer
	var problems []Problem
	for _, s := range srcs {
		l, ps := readLayer(s.fsys, s.dir, s.display, s.trusted)
		problems = append(problems, ps...)
		if l != nil {
			layers = append(layers, l)
		}
	}
	p, ps := build(layers, rulesFrom)
	problems = append(problems, ps...)
	sortProblems(problems)
	if len(problems) > 0 {
		return p, &LoadError{Problems: problems}
	}
	return p, nil
}

type layerSource struct {
	fsys    fs.FS
	dir     string
	display string
	trusted bool
}

var errNoDirs = errors.New("--rules-only needs at least one --rules DIR")

// sortProblems orders problems by file, then line and column.
func sortProblems(ps []Problem) {
	sort.SliceStable(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
}
