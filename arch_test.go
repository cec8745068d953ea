package faultline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/faultline/faultline"

// listedPackage is what the import-graph rules need of `go list -json`.
type listedPackage struct {
	ImportPath   string
	Standard     bool
	Module       *struct{ Path string }
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string // transitive, not counting tests
}

// TestImportGraph keeps the edges of the design: parsers is the standard
// library only (it is shared by every binary and must stay light), the
// shipper binary links neither Bleve nor expr (it runs on every GPU node),
// server does not import shipper (both depend on transport only), and no
// package imports a command.
func TestImportGraph(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool on PATH")
	}
	cmd := exec.Command(goTool, "list", "-deps", "-json", "./...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	pkgs, err := decodeList(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list gave %d packages: not the module", len(pkgs))
	}
	for _, v := range importViolations(pkgs) {
		t.Error(v)
	}
}

// TestImportGraphRulesFire: each rule reports a graph that breaks it (the
// real graph passing proves nothing if a rule can never fire).
func TestImportGraphRulesFire(t *testing.T) {
	std := func(p string) listedPackage { return listedPackage{ImportPath: p, Standard: true} }
	mod := func(p string, imports ...string) listedPackage {
		return listedPackage{ImportPath: module + "/" + p, Module: &struct{ Path string }{module}, Imports: imports, Deps: imports}
	}
	base := []listedPackage{std("fmt"), mod("parsers", "fmt"), mod("transport", "fmt", module+"/parsers"),
		mod("shipper", module+"/transport"), mod("server", module+"/transport"), mod("cmd/shipper", module+"/shipper"),
		mod("finding", "fmt"), mod("rule", module+"/finding"), mod("sink", module+"/finding")}
	if v := importViolations(base); len(v) != 0 {
		t.Fatalf("a clean graph is reported: %v", v)
	}
	bad := map[string]func([]listedPackage) []listedPackage{
		"parsers imports": func(g []listedPackage) []listedPackage {
			g[1].Deps = append(g[1].Deps, "gopkg.in/yaml.v3")
			return append(g, listedPackage{ImportPath: "gopkg.in/yaml.v3"})
		},
		"links github.com/blevesearch/bleve/v2": func(g []listedPackage) []listedPackage {
			g[5].Deps = append(g[5].Deps, "github.com/blevesearch/bleve/v2")
			return g
		},
		"links github.com/expr-lang/expr": func(g []listedPackage) []listedPackage {
			g[5].Deps = append(g[5].Deps, "github.com/expr-lang/expr/vm")
			return g
		},
		"server imports " + module + "/shipper": func(g []listedPackage) []listedPackage {
			g[4].Deps = append(g[4].Deps, module+"/shipper")
			return g
		},
		"sink imports " + module + "/rule": func(g []listedPackage) []listedPackage {
			g[8].Deps = append(g[8].Deps, module+"/rule")
			return g
		},
		"finding imports gopkg.in/yaml.v3": func(g []listedPackage) []listedPackage {
			g[6].Deps = append(g[6].Deps, "gopkg.in/yaml.v3")
			return append(g, listedPackage{ImportPath: "gopkg.in/yaml.v3"})
		},
		"imports the command " + module + "/cmd/shipper": func(g []listedPackage) []listedPackage {
			g[3].XTestImports = append(g[3].XTestImports, module+"/cmd/shipper")
			return g
		},
	}
	for want, breakIt := range bad {
		g := breakIt(slices.Clone(base))
		v := importViolations(g)
		if !slices.ContainsFunc(v, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("%q not reported; got %v", want, v)
		}
	}
}

func decodeList(out []byte) ([]listedPackage, error) {
	var pkgs []listedPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		pkgs = append(pkgs, p)
	}
}

// findingOnly are the packages that carry findings but never evaluate rules.
var findingOnly = []string{"index", "index/fanout", "web", "sink", "cluster", "report"}

// importViolations checks pkgs (go list -deps -json of the module) against
// the rules of TestImportGraph.
func importViolations(pkgs []listedPackage) []string {
	byPath := map[string]listedPackage{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	var out []string
	if p, ok := byPath[module+"/parsers"]; ok {
		for _, d := range p.Deps {
			if dp, ok := byPath[d]; !ok || !dp.Standard {
				out = append(out, "parsers imports "+d+": it must stay on the standard library")
			}
		}
	} else {
		out = append(out, "no package parsers in the list")
	}
	if p, ok := byPath[module+"/cmd/shipper"]; ok {
		for _, d := range p.Deps {
			for _, heavy := range []string{"github.com/blevesearch/", "github.com/expr-lang/expr"} {
				if strings.HasPrefix(d, heavy) {
					out = append(out, "the shipper binary links "+d+" (via its imports): it must not link the index or the rule engine")
				}
			}
		}
	} else {
		out = append(out, "no package cmd/shipper in the list")
	}
	if p, ok := byPath[module+"/server"]; ok {
		if slices.Contains(p.Deps, module+"/shipper") {
			out = append(out, "server imports "+module+"/shipper (directly or not): both must depend on transport only")
		}
	} else {
		out = append(out, "no package server in the list")
	}
	// Findings travel everywhere; the rule engine that makes them does not.
	if p, ok := byPath[module+"/finding"]; ok {
		for _, d := range p.Deps {
			if dp, ok := byPath[d]; !ok || !dp.Standard {
				out = append(out, "finding imports "+d+": it must stay a leaf on the standard library")
			}
		}
	} else {
		out = append(out, "no package finding in the list")
	}
	for _, name := range findingOnly {
		if p, ok := byPath[module+"/"+name]; ok && slices.Contains(p.Deps, module+"/rule") {
			out = append(out, name+" imports "+module+"/rule (directly or not): it needs findings, not the engine; import "+module+"/finding")
		}
	}
	for _, p := range pkgs {
		if p.Module == nil || p.Module.Path != module {
			continue
		}
		for _, imps := range [][]string{p.Imports, p.TestImports, p.XTestImports} {
			for _, imp := range imps {
				if strings.HasPrefix(imp, module+"/cmd/") && imp != p.ImportPath {
					out = append(out, p.ImportPath+" imports the command "+imp)
				}
			}
		}
	}
	return out
}
