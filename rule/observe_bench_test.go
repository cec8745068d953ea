package rule

import (
	"bytes"
	"testing"

	"github.com/faultline/faultline/internal/loggen"
	"github.com/faultline/faultline/parsers"
)

// BenchmarkObserveLoggen is the rule engine's share of diagnose: the built-in
// pack over the events of generated mixed Ray/vLLM/NCCL logs (the input of
// bench/diagnose.sh), parsed once before the timer starts.
//
//	go test ./rule -run '^$' -bench ObserveLoggen -benchtime 5x
func BenchmarkObserveLoggen(b *testing.B) {
	rules, err := LoadBuiltin()
	if err != nil {
		b.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := loggen.New(1, loggen.Options{DiagnosticShare: 0.0001}).WriteLines(&buf, loggen.DockerJSON, 100_000); err != nil {
		b.Fatal(err)
	}
	r := parsers.NewReader(bytes.NewReader(buf.Bytes()), parsers.ReaderOptions{Format: parsers.FormatDockerJSON, EOFIsEnd: true})
	var evs []parsers.Event
	j := parsers.NewJoiner(parsers.Origin{Node: "n", FileID: "1:2:x"}, parsers.JoinOptions{}, func(rec parsers.Record) {
		evs = append(evs, parsers.Parse(rec))
	})
	for {
		l, err := r.Next()
		if err != nil {
			break
		}
		j.Add(l)
	}
	j.Flush()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		e := NewEngine(rules)
		for k := range evs {
			e.Observe(&evs[k])
		}
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(len(evs)*b.N), "cpu-ns/event")
}
