package rule

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"

	"github.com/faultline/faultline/rules"
)

// IsTestFile reports whether a file in a rule directory holds rule unit
// tests (fixtures) rather than rules.
func IsTestFile(name string) bool {
	return strings.HasSuffix(name, ".test.yaml") || strings.HasSuffix(name, ".test.yml")
}

func isRuleFile(name string) bool {
	return isYAML(name) && name != causesFile && name != launchFile
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
	p, err := LoadBuiltinPack()
	if p == nil {
		return nil, err
	}
	return p.Rules, err
}

// LoadBuiltinPack loads the pack embedded in the binary: rules, catalog
// and causes.
func LoadBuiltinPack() (*Pack, error) {
	return loadLayers([]layerSource{builtinLayer()}, 0)
}

// builtinLayer is the embedded pack. Trusted: its regex costs are checked
// once, by TestBuiltinRegexCost, not at every start of every command.
func builtinLayer() layerSource {
	return layerSource{fsys: rules.FS, dir: ".", display: "rules", trusted: true}
}

// LoadDir loads the rules of dir (*.yaml, *.yml, not *.test.yaml) with its
// catalog and causes, on top of the built-in catalog and causes (not the
// built-in rules).
func LoadDir(dir string) ([]*Rule, error) {
	p, err := LoadDirPack(dir)
	if p == nil {
		return nil, err
	}
	return p.Rules, err
}

// LoadDirPack is LoadDir, returning the whole pack.
func LoadDirPack(dir string) (*Pack, error) {
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("load rules: %w", err)
	}
	return LoadFSPack(os.DirFS(dir), ".", dir)
}

// LoadFS loads the pack in dir of fsys as LoadDir does; display is the
// directory name used in messages. All problems of all files are reported
// at once.
func LoadFS(fsys fs.FS, dir, display string) ([]*Rule, error) {
	p, err := LoadFSPack(fsys, dir, display)
	if p == nil {
		return nil, err
	}
	return p.Rules, err
}

// LoadFSPack is LoadFS, returning the whole pack.
func LoadFSPack(fsys fs.FS, dir, display string) (*Pack, error) {
	return loadLayers([]layerSource{builtinLayer(), {fsys: fsys, dir: dir, display: display}}, 1)
}

// Parse reads the rules of one file (one rule per YAML document, with the
// catalog documents it may carry) and checks them against the built-in
// catalog and causes. Problems name the file,
// line and column.
func Parse(file string, data []byte) ([]*Rule, []Problem) {
	base, problems := readLayer(rules.FS, ".", "rules", true)
	docs, cats, ps := parseRuleFile(file, data)
	problems = append(problems, ps...)
	p, ps := build([]*layer{base, {display: file, rules: docs, catalog: cats}}, 1)
	problems = append(problems, ps...)
	sortProblems(problems)
	return p.Rules, problems
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
// with the pack of each dir on top (a rule, catalog entry or cause of the
// same id replaces the built-in one).
func Load(dirs []string, only bool) ([]*Rule, error) {
	p, err := LoadPack(dirs, only)
	if err != nil {
		return nil, err
	}
	return p.Rules, nil
}

// LoadPack is Load, returning the whole pack. With only, the built-in rules
// are left out; the built-in catalog and causes stay, for the rules of dirs
// to read.
func LoadPack(dirs []string, only bool) (*Pack, error) {
	if only && len(dirs) == 0 {
		return nil, errNoDirs
	}
	srcs := []layerSource{builtinLayer()}
	for _, d := range dirs {
		if _, err := os.Stat(d); err != nil {
			return nil, fmt.Errorf("load rules: %w", err)
		}
		srcs = append(srcs, layerSource{fsys: os.DirFS(d), dir: ".", display: d})
	}
	from := 0
	if only {
		from = 1
	}
	return loadLayers(srcs, from)
}
