package parsers

import (
	"bytes"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/loggen"
)

// loggenInput is a realistic Docker json-file of a vLLM-over-Ray cluster (the
// input of the analyzer's and the shipper's benchmarks): many writers whose
// process prefixes differ by pid, so prefix caching alone does not help.
func loggenInput(b *testing.B, n int) []byte {
	var buf bytes.Buffer
	if _, err := loggen.New(1, loggen.Options{DiagnosticShare: 0.0001}).WriteLines(&buf, loggen.DockerJSON, n); err != nil {
		b.Fatal(err)
	}
	return buf.Bytes()
}

// BenchmarkLoggenReadJoin is framing plus joining of generated json-file
// logs (the shipper's per-line parsers cost).
func BenchmarkLoggenReadJoin(b *testing.B) { benchLoggen(b, false) }

// BenchmarkLoggenReadJoinParse adds Parse (the analyzer's per-line parsers cost).
func BenchmarkLoggenReadJoinParse(b *testing.B) { benchLoggen(b, true) }

func benchLoggen(b *testing.B, parse bool) {
	const n = 50000
	benchReadJoin(b, loggenInput(b, n), n, parse)
}

// benchReadJoin frames and joins n json-file lines of input, parsing each
// record when parse is set.
func benchReadJoin(b *testing.B, input []byte, n int, parse bool) {
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := cpuTime()
	recs := 0
	for i := 0; i < b.N; i++ {
		r := NewReader(bytes.NewReader(input), ReaderOptions{Format: FormatDockerJSON, EOFIsEnd: true})
		j := NewJoiner(Origin{Node: "n", FileID: "1:2:x"}, JoinOptions{}, func(rec Record) {
			recs++
			if parse {
				ev := Parse(rec)
				_ = ev
			}
		})
		for {
			l, err := r.Next()
			if err != nil {
				break
			}
			j.Add(l)
		}
		j.Flush()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "lines/s")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(n*b.N), "cpu-ns/line")
	b.ReportMetric(float64(recs)/float64(b.N), "records")
}

// cpuTime is the process's user+sys CPU time: the machine is shared, so
// wall time per line says little; CPU time (GC workers included) is what
// the one-core targets are about.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
