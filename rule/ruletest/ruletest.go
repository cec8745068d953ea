// Package ruletest runs rule unit tests: YAML fixtures beside the rules
// (*.test.yaml) that give log lines per node (inline or as files) and the
// findings expected from them, in the spirit of `promtool test rules`. The
// fixtures run through the same pipeline and engine as `analyzer diagnose`.
package ruletest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/rules"
)

// File is one fixture file.
type File struct {
	Tests []Case `yaml:"tests"`
}

// Case is one test: input logs and what must (not) be found.
type Case struct {
	Name string `yaml:"name"`
	// Logs gives each node's log lines inline (node -> text).
	Logs map[string]string `yaml:"logs"`
	// Files gives each node's log files or folders, relative to the fixture.
	Files map[string][]string `yaml:"files"`
	// Expect lists findings that must be present, in this order among
	// themselves (the first one must be the first finding when First is set).
	Expect []Expected `yaml:"expect"`
	// Absent lists rule ids that must not fire.
	Absent []string `yaml:"absent"`
	// NoFindings requires that nothing at all fires (at or above NoFindingsAt).
	NoFindings   bool   `yaml:"no_findings"`
	NoFindingsAt string `yaml:"no_findings_at"` // severity threshold, default info
	// First requires Expect[0] to be the first finding in the output order.
	First bool `yaml:"first"`
}

// Expected describes a finding. Empty fields are not checked; Facts are
// checked as subsets (each listed value must be among the finding's values).
type Expected struct {
	Rule       string              `yaml:"rule"`
	Cause      string              `yaml:"cause"`
	Severity   string              `yaml:"severity"`
	Confidence string              `yaml:"confidence"`
	Status     string              `yaml:"status"`
	Nodes      []string            `yaml:"nodes"`
	Facts      map[string][]string `yaml:"facts"`
	RuledOut   []string            `yaml:"ruled_out"`
	Summary    []string            `yaml:"summary_contains"`
	Fix        []string            `yaml:"remediation_contains"`
}

// Result is the outcome of one case.
type Result struct {
	File     string
	Name     string
	Failures []string // empty = pass
	// Skipped, when set, says why the case did not run (its log files are
	// not there); a skipped case has no failures.
	Skipped string
	Got     []finding.Finding
}

// Passed reports whether the case passed.
func (r Result) Passed() bool { return len(r.Failures) == 0 }

// RunFS runs every *.test.yaml of dir in fsys against rules.
func RunFS(ctx context.Context, fsys fs.FS, dir, display string, rules []*rule.Rule) ([]Result, error) {
	return runFS(ctx, fsys, dir, display, runOptions{}, rules)
}

// runOptions say where a fixture's `files:` are.
type runOptions struct {
	base        string // directory relative files are in ("" = the fixture's own)
	skipMissing string // when set, a case whose files are missing is skipped with this reason
}

// RunBuiltin runs the fixtures of the built-in pack (embedded in the
// binary) against rules, from any working directory. Their `files:` name
// real logs as ../testdata/... relative to rules/ in the repository: those
// are too big to embed (and testdata/ cannot hold the Go package that would
// embed them), so they are read from the checkout RepoRoot finds. Without
// one (an installed binary run outside a checkout), the cases that need
// such files are skipped, saying why; inline cases still run.
func RunBuiltin(ctx context.Context, rs []*rule.Rule) ([]Result, error) {
	opts := runOptions{skipMissing: "needs the real logs of a Faultline checkout (testdata/): run inside one"}
	if root, ok := RepoRoot(); ok {
		opts = runOptions{base: filepath.Join(root, "rules")}
	}
	return runFS(ctx, rules.FS, ".", "rules", opts, rs)
}

func runFS(ctx context.Context, fsys fs.FS, dir, display string, opts runOptions, rules []*rule.Rule) ([]Result, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", display, err)
	}
	var results []Result
	for _, e := range entries {
		if e.IsDir() || !rule.IsTestFile(e.Name()) {
			continue
		}
		data, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		rs, err := runFile(ctx, filepath.Join(display, e.Name()), data, opts, rules)
		if err != nil {
			return nil, err
		}
		results = append(results, rs...)
	}
	return results, nil
}

// RunDir runs the fixtures of a directory on disk.
func RunDir(ctx context.Context, dir string, rules []*rule.Rule) ([]Result, error) {
	return RunFS(ctx, os.DirFS(dir), ".", dir, rules)
}

// RunFile runs the cases of one fixture file; name locates relative Files.
func RunFile(ctx context.Context, name string, data []byte, rules []*rule.Rule) ([]Result, error) {
	return runFile(ctx, name, data, runOptions{}, rules)
}

func runFile(ctx context.Context, name string, data []byte, opts runOptions, rules []*rule.Rule) ([]Result, error) {
	var f File
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.Strict()); err != nil {
		return nil, fmt.Errorf("%s: %s", name, oneLine(yaml.FormatError(err, false, false)))
	}
	if len(f.Tests) == 0 {
		return nil, fmt.Errorf("%s: no tests", name)
	}
	var out []Result
	for i, c := range f.Tests {
		if c.Name == "" {
			c.Name = fmt.Sprintf("test %d", i+1)
		}
		res := Result{File: name, Name: c.Name}
		base := opts.base
		if base == "" {
			base = filepath.Dir(name)
		}
		if opts.skipMissing != "" && filesMissing(base, c) {
			res.Skipped = opts.skipMissing
			out = append(out, res)
			continue
		}
		got, errs, err := run(ctx, base, c, rules)
		if err != nil {
			res.Failures = append(res.Failures, err.Error())
		} else {
			res.Got = got
			res.Failures = append(check(c, got, rules), ruleErrors(errs)...)
		}
		out = append(out, res)
	}
	return out, nil
}

// filesMissing reports whether a file or folder the case names is absent.
func filesMissing(base string, c Case) bool {
	for _, paths := range c.Files {
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				p = filepath.Join(base, p)
			}
			if _, err := os.Stat(p); err != nil {
				return true
			}
		}
	}
	return false
}

// ruleErrors turns the engine's runtime expression errors into failures: a
// rule that errs silently never fires, whatever the case expects.
func ruleErrors(errs map[string]rule.ErrorStat) []string {
	ids := make([]string, 0, len(errs))
	for id := range errs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = fmt.Sprintf("rule %s: %d runtime expression error(s), last: %s", id, errs[id].Count, oneLine(errs[id].Last))
	}
	return out
}

func run(ctx context.Context, base string, c Case, rules []*rule.Rule) ([]finding.Finding, map[string]rule.ErrorStat, error) {
	var files []pipeline.File
	nodes := make([]string, 0, len(c.Logs))
	for n := range c.Logs {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	for _, n := range nodes {
		files = append(files, pipeline.File{Path: n + ".log", Node: n, Data: []byte(c.Logs[n])})
	}
	for n, paths := range c.Files {
		for _, p := range paths {
			if !filepath.IsAbs(p) {
				p = filepath.Join(base, p)
			}
			// A fixture's file that cannot be read fails the case.
			var skipped error
			fs, err := pipeline.Expand([]pipeline.Input{{Node: n, Path: p}}, func(e error) { skipped = cmp.Or(skipped, e) })
			if err = cmp.Or(err, skipped); err != nil {
				return nil, nil, err
			}
			files = append(files, fs...)
		}
	}
	if len(files) == 0 {
		return nil, nil, errors.New("the case gives no logs and no files")
	}
	engine := rule.NewEngine(rules)
	_, err := pipeline.ReplayFiles(ctx, files, pipeline.Options{Cluster: rule.DefaultCluster}, func(ev *parsers.Event) error {
		engine.Observe(ev)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return engine.Findings(), engine.Errors(), nil
}

func check(c Case, got []finding.Finding, rules []*rule.Rule) []string {
	var fails []string
	pos := -1
	for i, want := range c.Expect {
		j := find(got, want)
		if j < 0 {
			fails = append(fails, fmt.Sprintf("expected finding %s: not found", describe(want)))
			continue
		}
		if mism := mismatch(got[j], want, ruleByID(rules, got[j].Rule)); mism != "" {
			fails = append(fails, fmt.Sprintf("finding %s: %s", want.Rule, mism))
		}
		if j < pos {
			fails = append(fails, fmt.Sprintf("finding %s comes before %s; expected the order given", want.Rule, c.Expect[i-1].Rule))
		}
		pos = j
	}
	if c.First && len(c.Expect) > 0 && len(got) > 0 && !matchesID(got[0], c.Expect[0]) {
		fails = append(fails, fmt.Sprintf("first finding is %s, expected %s", got[0].Rule, describe(c.Expect[0])))
	}
	for _, a := range c.Absent {
		for _, g := range got {
			if g.Rule == a && g.Status == finding.Active {
				fails = append(fails, fmt.Sprintf("rule %s fired but must not (%s)", a, g.Summary))
			}
		}
	}
	if c.NoFindings {
		at := finding.Severity(c.NoFindingsAt).Rank()
		for _, g := range got {
			if g.Status == finding.Active && finding.Severity(g.Severity).Rank() >= at {
				fails = append(fails, fmt.Sprintf("expected no findings, got %s [%s]: %s", g.Rule, g.Severity, g.Title))
			}
		}
	}
	return fails
}

func matchesID(f finding.Finding, e Expected) bool {
	return (e.Rule == "" || f.Rule == e.Rule) && (e.Cause == "" || f.Cause == e.Cause)
}

func find(got []finding.Finding, want Expected) int {
	for i, g := range got {
		if matchesID(g, want) && (want.Status != "" || g.Status == finding.Active) {
			return i
		}
	}
	return -1
}

func ruleByID(rules []*rule.Rule, id string) *rule.Rule {
	for _, r := range rules {
		if r.ID == id {
			return r
		}
	}
	return nil
}

// hasValue reports whether a fact's values hold v; values of a number fact
// are compared as numbers ("4" and "4.0" are one value).
func hasValue(r *rule.Rule, fact string, vals []string, v string) bool {
	number := r != nil && r.NumberFact(fact)
	want := rule.NormalValue(number, v)
	for _, g := range vals {
		if rule.NormalValue(number, g) == want {
			return true
		}
	}
	return false
}

func mismatch(g finding.Finding, w Expected, r *rule.Rule) string {
	var m []string
	if w.Severity != "" && string(g.Severity) != w.Severity {
		m = append(m, fmt.Sprintf("severity %s, expected %s", g.Severity, w.Severity))
	}
	if w.Confidence != "" && g.Confidence != w.Confidence {
		m = append(m, fmt.Sprintf("confidence %s, expected %s", g.Confidence, w.Confidence))
	}
	if w.Status != "" && string(g.Status) != w.Status {
		m = append(m, fmt.Sprintf("status %s, expected %s", g.Status, w.Status))
	}
	for _, n := range w.Nodes {
		if !contains(g.Nodes, n) {
			m = append(m, fmt.Sprintf("nodes %v lack %s", g.Nodes, n))
		}
	}
	facts := make([]string, 0, len(w.Facts))
	for k := range w.Facts {
		facts = append(facts, k)
	}
	sort.Strings(facts)
	for _, k := range facts {
		for _, v := range w.Facts[k] {
			if !hasValue(r, k, g.Facts[k], v) {
				m = append(m, fmt.Sprintf("fact %s = %q, expected it to contain %q", k, g.Facts[k], v))
			}
		}
	}
	for _, c := range w.RuledOut {
		found := false
		for _, r := range g.RuledOut {
			found = found || r.Cause == c
		}
		if !found {
			m = append(m, fmt.Sprintf("ruled_out lacks %s", c))
		}
	}
	for _, s := range w.Summary {
		if !strings.Contains(g.Summary, s) {
			m = append(m, fmt.Sprintf("summary lacks %q", s))
		}
	}
	for _, s := range w.Fix {
		if !strings.Contains(g.Remediation, s) {
			m = append(m, fmt.Sprintf("remediation lacks %q", s))
		}
	}
	return strings.Join(m, "; ")
}

func describe(e Expected) string {
	s := e.Rule
	if s == "" {
		s = "cause " + e.Cause
	}
	if e.Severity != "" {
		s += " [" + e.Severity + "]"
	}
	return s
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
