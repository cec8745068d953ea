package loggen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func gen(t *testing.T, seed int64, opts Options, f Format, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := New(seed, opts).WriteLines(&b, f, n); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestDeterministic(t *testing.T) {
	for _, f := range []Format{Plain, DockerJSON} {
		a := gen(t, 7, Options{}, f, 20000)
		b := gen(t, 7, Options{}, f, 20000)
		if !bytes.Equal(a, b) {
			t.Fatalf("format %d: same seed gave different output", f)
		}
		c := gen(t, 8, Options{}, f, 20000)
		if bytes.Equal(a, c) {
			t.Fatalf("format %d: different seeds gave the same output", f)
		}
	}
	// Line and WriteLines(Plain) agree.
	g := New(7, Options{})
	var lines []byte
	for i := 0; i < 20000; i++ {
		lines = append(g.Line(lines), '\n')
	}
	if !bytes.Equal(lines, gen(t, 7, Options{}, Plain, 20000)) {
		t.Fatal("Line and WriteLines(Plain) differ")
	}
}

func TestAverageLength(t *testing.T) {
	const n = 200000
	out := gen(t, 1, Options{}, Plain, n)
	avg := float64(len(out)-n) / n
	if avg < 150 || avg > 220 {
		t.Fatalf("average line length %.1f, want 150..220", avg)
	}
	t.Logf("average line length %.1f bytes", avg)
}

func TestDockerJSONDecodes(t *testing.T) {
	out := gen(t, 3, Options{DiagnosticShare: 0.05}, DockerJSON, 50000)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	plain := bufio.NewScanner(bytes.NewReader(gen(t, 3, Options{DiagnosticShare: 0.05}, Plain, 50000)))
	plain.Buffer(nil, 1<<20)
	var last time.Time
	n := 0
	for sc.Scan() {
		var r struct {
			Log    string `json:"log"`
			Stream string `json:"stream"`
			Time   string `json:"time"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %d: %v: %s", n+1, err, sc.Bytes())
		}
		if !strings.HasPrefix(sc.Text(), `{"log":"`) || !strings.Contains(sc.Text(), `","stream":"`) {
			t.Fatalf("line %d: key order: %s", n+1, sc.Text())
		}
		if r.Stream != "stdout" && r.Stream != "stderr" {
			t.Fatalf("line %d: stream %q", n+1, r.Stream)
		}
		tm, err := time.Parse(time.RFC3339Nano, r.Time)
		if err != nil {
			t.Fatalf("line %d: time %q: %v", n+1, r.Time, err)
		}
		if tm.Before(last) {
			t.Fatalf("line %d: time goes back", n+1)
		}
		last = tm
		if !plain.Scan() || r.Log != plain.Text()+"\n" {
			t.Fatalf("line %d: log %q differs from plain %q", n+1, r.Log, plain.Text())
		}
		if strings.ContainsAny(sc.Text(), "<>&") {
			t.Fatalf("line %d: unescaped <>&: %s", n+1, sc.Text())
		}
		n++
	}
	if n != 50000 {
		t.Fatalf("got %d records", n)
	}
}

func TestShares(t *testing.T) {
	count := func(opts Options, needle string) int {
		return strings.Count(string(gen(t, 5, opts, Plain, 100000)), needle)
	}
	if c := count(Options{}, "No available node types"); c != 0 {
		t.Fatalf("default options produced %d diagnostic lines", c)
	}
	if c := count(Options{}, "NCCL WARN"); c != 0 {
		t.Fatalf("default options produced %d NCCL WARN lines", c)
	}
	tb := count(Options{}, "Traceback (most recent call last):")
	if tb < 500 || tb > 1500 {
		t.Fatalf("%d tracebacks in 100000 lines, want about 1%%", tb)
	}
	if c := count(Options{TracebackShare: -1}, "Traceback"); c != 0 {
		t.Fatalf("tracebacks disabled but got %d", c)
	}
	d := count(Options{DiagnosticShare: 0.1}, "node:192.168.200.")
	if d < 2000 {
		t.Fatalf("DiagnosticShare 0.1 gave only %d placement-group lines", d)
	}
	if c := count(Options{}, "(RayWorkerWrapper pid="); c < 10000 {
		t.Fatalf("only %d forwarded RayWorkerWrapper prefixes", c)
	}
}

func BenchmarkLine(b *testing.B) {
	g := New(1, Options{})
	var buf []byte
	n := 0
	for i := 0; i < b.N; i++ {
		buf = g.Line(buf[:0])
		n += len(buf)
	}
	b.SetBytes(int64(n / max(b.N, 1)))
}

func BenchmarkWriteDockerJSON(b *testing.B) {
	g := New(1, Options{})
	var sink countWriter
	b.ResetTimer()
	if _, err := g.WriteLines(&sink, DockerJSON, b.N); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(sink) / int64(max(b.N, 1)))
}

type countWriter int64

func (c *countWriter) Write(p []byte) (int, error) { *c += countWriter(len(p)); return len(p), nil }
