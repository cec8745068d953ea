package main

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/faultline/faultline/internal/loggen"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
)

// BenchmarkDiagnose measures the whole offline path (framing, joining,
// parsing, rules) over generated Docker json-file logs. For the 1 GB figure
// and peak RSS of the real binary, run bench/diagnose.sh.
func BenchmarkDiagnose(b *testing.B) {
	const lines = 200_000
	path := filepath.Join(b.TempDir(), "node.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	size, err := loggen.New(1, loggen.Options{DiagnosticShare: 0.0001}).WriteLines(w, loggen.DockerJSON, lines)
	if err != nil {
		b.Fatal(err)
	}
	w.Flush()
	f.Close()
	rules, err := rule.LoadBuiltin()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(size)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		engine := rule.NewEngine(rules)
		st, err := pipeline.Replay(context.Background(), []pipeline.Input{{Node: "n", Path: path}}, pipeline.Options{},
			func(ev *parsers.Event) error { engine.Observe(ev); return nil })
		if err != nil || st.Lines != lines {
			b.Fatalf("replay: %v, %d lines", err, st.Lines)
		}
	}
	b.ReportMetric(float64(lines)*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
}
