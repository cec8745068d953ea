package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/rule/ruletest"
	"github.com/faultline/faultline/sink"
)

func runRules(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("rules", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: analyzer rules lint|test [flags] [DIR ...]\n"+
			"       analyzer rules coverage [--rules DIR] [--rules-only] [--json] [--catalog] [LOGDIR ...]\n"+
			"       analyzer rules alertmanager-config [--rules DIR] [--rules-only]\n\n"+
			"lint: check a pack (rules, catalog/*.yaml, causes.yaml, launch.yaml): schema, regexes,\n"+
			"      expressions, templates, severities and confidences, ids, causes, facts, sources,\n"+
			"      levels, fields, and every catalog entry's example against its yields.\n"+
			"test: run the fixtures (*.test.yaml) beside the rules, and the catalog entries' tests.\n"+
			"coverage: for every catalog entry, the real lines it hits in testdata/logs/real and\n"+
			"      testdata/logs/nccl-runs (inside a checkout) and in each LOGDIR; lists the\n"+
			"      entries that hit nothing. --catalog: counts per project and subsystem.\n"+
			"alertmanager-config: print Alertmanager inhibit rules generated from the rules' explains\n"+
			"      (a consequence's alert is muted by its root cause's in the same launch; docs/alerting.md).\n"+
			"Without DIR, the built-in pack embedded in the binary is used.\n\n"+
			"Exit codes: 0 ok; 1 a rule does not lint, a fixture fails (or a rule errs at run time\n"+
			"in it) or a catalog entry's test fails, coverage --strict finds an entry a rule reads\n"+
			"that hits nothing, or a usage error.\n\nflags:")
		fs.PrintDefaults()
	}
	verbose := fs.BoolP("verbose", "v", false, "test: list passing cases too")
	withBuiltin := fs.Bool("with-builtin", false, "test: run DIR's fixtures against the built-in pack plus DIR's rules")
	asJSON := fs.Bool("json", false, "coverage: print JSON")
	strict := fs.Bool("strict", false, "coverage: exit 1 when a catalog entry that a rule reads hits nothing")
	catalog := fs.Bool("catalog", false, "coverage: print the catalog's counts per project and subsystem (messages, classified, benign, read, hit)")
	lines := fs.Int("lines", 3, "coverage: hit lines shown per matcher (`N`)")
	var rf ruleFlags
	rf.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError("%v", err)
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return usageError("missing lint or test")
	}
	dirs := fs.Args()[1:]
	switch fs.Arg(0) {
	case "lint":
		return lintRules(ctx, dirs, stdout, stderr)
	case "test":
		return testRules(ctx, dirs, *withBuiltin, *verbose, stdout, stderr)
	case "coverage":
		return coverRules(ctx, rf, dirs, *asJSON, *strict, *catalog, *lines, stdout, stderr)
	case "alertmanager-config":
		if len(dirs) > 0 {
			return usageError("alertmanager-config takes no DIR: give --rules DIR")
		}
		return alertmanagerConfig(rf, stdout)
	}
	return usageError("unknown rules subcommand %q (want lint, test, coverage or alertmanager-config)", fs.Arg(0))
}

// alertmanagerConfig prints the inhibit rules of the rules' explains
// (sink.InhibitRules) as Alertmanager YAML.
func alertmanagerConfig(rf ruleFlags, stdout io.Writer) error {
	rules, err := rf.load()
	if err != nil {
		return err
	}
	return sink.WriteAlertmanagerConfig(stdout, sink.InhibitRules(rule.Explains(rules)))
}

func loadForLint(dir string) (*rule.Pack, error) {
	if dir == "" {
		return rule.LoadBuiltinPack()
	}
	return rule.LoadDirPack(dir)
}

// lintRules loads each directory's pack (the built-in one without DIR) and
// prints every problem at file:line:col: rules, catalog entries (their
// examples included) and causes.
func lintRules(ctx context.Context, dirs []string, stdout, stderr io.Writer) error {
	if len(dirs) == 0 {
		dirs = []string{""}
	}
	bad := 0
	var rules, entries, causes int
	for _, d := range dirs {
		p, err := loadForLint(d)
		var le *rule.LoadError
		switch {
		case errors.As(err, &le):
			for _, pr := range le.Problems {
				fmt.Fprintln(stderr, pr.String())
			}
			bad += len(le.Problems)
		case err != nil:
			fmt.Fprintf(stderr, "%v\n", err)
			bad++
		}
		if p == nil {
			continue
		}
		for _, pr := range p.Warnings {
			fmt.Fprintln(stderr, pr.String())
		}
		for _, pr := range ruletest.CatalogOverlaps(ctx, p) {
			if d == "" || strings.HasPrefix(pr.File, strings.TrimSuffix(d, "/")+"/") {
				fmt.Fprintln(stderr, pr.String())
			}
		}
		for _, pr := range ruletest.CheckCatalog(ctx, p) {
			fmt.Fprintln(stderr, pr.String())
			bad++
		}
		rules, entries, causes = rules+len(p.Rules), entries+len(p.Entries), causes+len(p.Causes)
	}
	if bad > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d problem(s)", bad)}
	}
	fmt.Fprintf(stdout, "%d rules OK (catalog of %d entries, %d causes)\n", rules, entries, causes)
	return nil
}

func testRules(ctx context.Context, dirs []string, withBuiltin, verbose bool, stdout, stderr io.Writer) error {
	var results []ruletest.Result
	if len(dirs) == 0 {
		p, err := rule.LoadBuiltinPack()
		if err != nil {
			return usageError("%v", err)
		}
		results, err = ruletest.RunBuiltin(ctx, p.Rules)
		if err != nil {
			return usageError("%v", err)
		}
		results = append(results, ruletest.RunCatalog(ctx, p, "")...)
	}
	for _, d := range dirs {
		// DIR's rules on top of the built-in catalog and causes; with
		// --with-builtin, on top of the built-in rules too.
		p, err := rule.LoadPack([]string{d}, !withBuiltin)
		if err != nil {
			return usageError("%v", err)
		}
		r, err := ruletest.RunDir(ctx, d, p.Rules)
		if err != nil {
			return usageError("%v", err)
		}
		results = append(results, r...)
		results = append(results, ruletest.RunCatalog(ctx, p, d)...)
	}
	failed, skipped := 0, 0
	for _, r := range results {
		if r.Skipped != "" {
			skipped++
			fmt.Fprintf(stdout, "SKIP  %s: %s (%s)\n", r.File, r.Name, r.Skipped)
			continue
		}
		if r.Passed() {
			if verbose {
				fmt.Fprintf(stdout, "PASS  %s: %s\n", r.File, r.Name)
			}
			continue
		}
		failed++
		fmt.Fprintf(stdout, "FAIL  %s: %s\n", r.File, r.Name)
		for _, f := range r.Failures {
			fmt.Fprintf(stdout, "  - %s\n", f)
		}
		fmt.Fprintln(stdout, "  got:")
		if len(r.Got) == 0 {
			fmt.Fprintln(stdout, "    (no findings)")
		}
		for _, g := range r.Got {
			fmt.Fprintf(stdout, "    + %s [%s, %s, %s] facts: %s\n", g.Rule, g.Severity, g.Confidence, g.Status, factsLine(g.Facts))
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed", len(results)-failed-skipped, failed)
	if skipped > 0 {
		fmt.Fprintf(stdout, ", %d skipped", skipped)
	}
	fmt.Fprintln(stdout)
	if failed > 0 {
		return &exitError{code: 1}
	}
	if len(results) == 0 {
		return usageError("no fixtures (*.test.yaml) found")
	}
	return nil
}

func factsLine(facts map[string][]string) string {
	keys := make([]string, 0, len(facts))
	for k := range facts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + strings.Join(facts[k], ",")
	}
	return strings.Join(parts, " ")
}
