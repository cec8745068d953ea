package ruletest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
)

// modulePath identifies a Faultline checkout by its go.mod.
const modulePath = "github.com/faultline/faultline"

// CorpusDirs are the real logs of the repository that `rules coverage`
// reads by default, relative to its root.
var CorpusDirs = []string{"testdata/logs/real", "testdata/logs/nccl-runs"}

// RepoRoot finds a Faultline checkout: the working directory or one of its
// parents, else the checkout this binary was built from (the path the
// compiler recorded for this file; absent with -trimpath). The built-in
// fixtures and the real corpus live there, not in the binary: they are too
// big to embed, and testdata/ cannot hold a Go package that embeds them.
func RepoRoot() (string, bool) {
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; {
			if isCheckout(dir) {
				return dir, true
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok && filepath.IsAbs(file) {
		if dir := filepath.Join(filepath.Dir(file), "..", ".."); isCheckout(dir) {
			return filepath.Clean(dir), true
		}
	}
	return "", false
}

// isCheckout reports whether dir holds this module's go.mod and a rules/
// directory.
func isCheckout(dir string) bool {
	if st, err := os.Stat(filepath.Join(dir, "rules")); err != nil || !st.IsDir() {
		return false
	}
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) == 2 && fields[0] == "module" {
			return fields[1] == modulePath
		}
	}
	return false
}

// DefaultCorpus returns the repository's real-log folders that exist.
func DefaultCorpus() []string {
	root, ok := RepoRoot()
	if !ok {
		return nil
	}
	wd, _ := os.Getwd()
	var out []string
	for _, d := range CorpusDirs {
		p := filepath.Join(root, d)
		if st, err := os.Stat(p); err != nil || !st.IsDir() {
			continue
		}
		// Short names inside the checkout; absolute ones from elsewhere.
		if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
			p = rel
		}
		out = append(out, p)
	}
	return out
}

// Coverage replays every path (file or folder, as `analyzer diagnose`
// reads it) through the pipeline and records which catalog entries of the
// pack hit which lines. Each path is replayed on its own: matching does not
// depend on the other files.
func Coverage(ctx context.Context, p *rule.Pack, paths []string) (*rule.Coverage, error) {
	cov := rule.NewCoverage(p)
	for _, path := range paths {
		_, err := pipeline.Replay(ctx, []pipeline.Input{{Path: path}}, pipeline.Options{Cluster: rule.DefaultCluster},
			func(ev *parsers.Event) error {
				cov.Observe(ev)
				return nil
			})
		if err != nil {
			return nil, fmt.Errorf("coverage of %s: %w", path, err)
		}
	}
	return cov, nil
}
