package rule

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/faultline/faultline/rules"
)

// IsTestFile reports whether a file in a rule directory holds rule unit
// tests (fixtures) rather than rules.
func IsTestFile(name string) bool {
	return strings.HasSuffix(name, ".test.yaml") || strings.HasSuffix(name, ".test.yml")
}

func isRuleFile(name string) bool {
	return (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) && !IsTestFile(name)
}

// Problem is one thing wrong with a rule file, with its position.
type Problem struct {
	File    string
	Line    int
	Column  int
	Message string
}

func (p Problem) String() string {
	return fmt.Sprintf("%s:%d:%d: %s", p.File, p.Line, p.Column, p.Message)
}

// LoadError lists every problem found while loading rules.
type LoadError struct{ Problems []Problem }

func (e *LoadError) Error() string {
	s := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		s[i] = p.String()
	}
	return strings.Join(s, "\n")
}

// LoadBuiltin loads the rule pack embedded in the binary.
func LoadBuiltin() ([]*Rule, error) {
	// Trusted: the pack's regex costs are checked once, by
	// TestBuiltinRegexCost, not at every start of every command.
	return loadFS(rules.FS, ".", "rules", true)
}

// LoadDir loads every rule file (*.yaml, *.yml, not *.test.yaml) in dir.
func LoadDir(dir string) ([]*Rule, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("load rules: %w", err)
	}
	return LoadFS(os.DirFS(dir), ".", dir)
}

// LoadFS loads the rule files of dir in fsys; display is the directory name
// used in messages. All problems of all files are reported at once.
func LoadFS(fsys fs.FS, dir, display string) ([]*Rule, error) {
	return loadFS(fsys, dir, display, false)
}

// loadFS is LoadFS; trusted skips the lint that costs start-up time (see
// compile).
func loadFS(fsys fs.FS, dir, display string, trusted bool) ([]*Rule, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("load rules from %s: %w", display, err)
	}
	var out []*Rule
	var problems []Problem
	seen := map[string]string{}
	for _, e := range entries {
		if e.IsDir() || !isRuleFile(e.Name()) {
			continue
		}
		data, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		name := path.Join(display, e.Name())
		if err != nil {
			problems = append(problems, Problem{File: name, Line: 1, Column: 1, Message: err.Error()})
			continue
		}
		rs, ps := parseRules(name, data, trusted)
		problems = append(problems, ps...)
		for _, r := range rs {
			if prev, dup := seen[r.ID]; dup {
				problems = append(problems, Problem{File: name, Line: r.line, Column: 1,
					Message: fmt.Sprintf("duplicate rule id %q (also in %s)", r.ID, prev)})
				continue
			}
			seen[r.ID] = name
			out = append(out, r)
		}
	}
	if len(problems) > 0 {
		return out, &LoadError{Problems: problems}
	}
	return out, nil
}

// Parse reads the rules of one file (one rule per YAML document) and checks
// them. Problems name the file, line and column.
func Parse(file string, data []byte) ([]*Rule, []Problem) {
	return parseRules(file, data, false)
}

func parseRules(file string, data []byte, trusted bool) ([]*Rule, []Problem) {
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil, []Problem{yamlProblem(file, err)}
	}
	var out []*Rule
	var problems []Problem
	for _, doc := range f.Docs {
		if doc.Body == nil {
			continue
		}
		var spec Spec
		if err := yaml.NodeToValue(doc.Body, &spec, yaml.Strict()); err != nil {
			problems = append(problems, yamlProblem(file, err))
			continue
		}
		line := 1
		if tk := doc.Body.GetToken(); tk != nil && tk.Position != nil {
			line = tk.Position.Line
		}
		r, errs := compile(spec, trusted)
		for name := range spec.Facts {
			if reservedNames[name] {
				errs = append(errs, ferr("$.facts."+name, "fact name %q is reserved", name))
			}
		}
		for _, e := range errs {
			problems = append(problems, positioned(file, doc, line, e))
		}
		if len(errs) == 0 {
			r.File = file
			r.line = line
			out = append(out, r)
		}
	}
	sort.SliceStable(problems, func(i, j int) bool { return problems[i].Line < problems[j].Line })
	return out, problems
}

func yamlProblem(file string, err error) Problem {
	var ye yaml.Error
	if errors.As(err, &ye) {
		if tk := ye.GetToken(); tk != nil && tk.Position != nil {
			return Problem{File: file, Line: tk.Position.Line, Column: tk.Position.Column, Message: ye.GetMessage()}
		}
		return Problem{File: file, Line: 1, Column: 1, Message: ye.GetMessage()}
	}
	return Problem{File: file, Line: 1, Column: 1, Message: err.Error()}
}

// positioned finds the YAML node a fieldError points at.
func positioned(file string, doc *ast.DocumentNode, fallback int, err error) Problem {
	p := Problem{File: file, Line: fallback, Column: 1, Message: err.Error()}
	var fe *fieldError
	if !errors.As(err, &fe) {
		return p
	}
	// Walk up the path until a node exists (a missing key is reported at its parent).
	for pathStr := fe.path; pathStr != ""; pathStr = parentPath(pathStr) {
		yp, perr := yaml.PathString(pathStr)
		if perr != nil {
			continue
		}
		n, ferr := yp.FilterNode(doc.Body)
		if ferr != nil || n == nil {
			continue
		}
		if tk := n.GetToken(); tk != nil && tk.Position != nil {
			p.Line, p.Column = tk.Position.Line, tk.Position.Column
			return p
		}
	}
	return p
}

func parentPath(p string) string {
	if p == "$" {
		return ""
	}
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return "$"
	}
	return p[:i]
}

// Load returns the rules a command runs: the built-in pack (unless only)
// with the rules of dirs added, a rule of the same id replacing the built-in.
func Load(dirs []string, only bool) ([]*Rule, error) {
	var rules []*Rule
	if !only {
		b, err := LoadBuiltin()
		if err != nil {
			return nil, fmt.Errorf("built-in rules: %w", err)
		}
		rules = b
	} else if len(dirs) == 0 {
		return nil, errors.New("--rules-only needs at least one --rules DIR")
	}
	for _, d := range dirs {
		extra, err := LoadDir(d)
		if err != nil {
			return nil, err
		}
		rules = Merge(rules, extra)
	}
	return rules, nil
}

// Merge returns base with extra added; a rule in extra with the id of a base
// rule replaces it.
func Merge(base, extra []*Rule) []*Rule {
	byID := map[string]int{}
	out := append([]*Rule(nil), base...)
	for i, r := range out {
		byID[r.ID] = i
	}
	for _, r := range extra {
		if i, ok := byID[r.ID]; ok {
			out[i] = r
			continue
		}
		byID[r.ID] = len(out)
		out = append(out, r)
	}
	return out
}
