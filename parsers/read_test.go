package parsers

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// repeatReader yields n bytes of b repeated, then the tail, without holding
// them in memory.
type repeatReader struct {
	b    byte
	n    int64
	tail []byte
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n > 0 {
		k := int64(len(p))
		if k > r.n {
			k = r.n
		}
		for i := range p[:k] {
			p[i] = r.b
		}
		r.n -= k
		return int(k), nil
	}
	if len(r.tail) == 0 {
		return 0, io.EOF
	}
	k := copy(p, r.tail)
	r.tail = r.tail[k:]
	return k, nil
}

func TestReaderHugeLineBoundedMemory(t *testing.T) {
	const n = 50 << 20
	src := &repeatReader{b: 'a', n: n, tail: []byte("\nnext\n")}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r := NewReader(src, ReaderOptions{Format: FormatPlain, EOFIsEnd: true})
	l, err := r.Next()
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("reading a 50 MB line allocated %d bytes", grew)
	}
	want := fmt.Sprintf(" …[truncated %d bytes]", n-DefaultMaxLineBytes)
	if l.Size != n+1 || len(l.Text) != DefaultMaxLineBytes+len(want) || !strings.HasSuffix(l.Text, want) {
		t.Fatalf("size %d, text len %d, tail %q", l.Size, len(l.Text), l.Text[len(l.Text)-40:])
	}
	l2, err := r.Next()
	if err != nil || l2.Text != "next" || l2.Offset != n+1 || l2.Num != 2 {
		t.Fatalf("next line %+v, %v", l2, err)
	}
}

func TestReaderTruncation(t *testing.T) {
	tests := []struct {
		name, in string
		format   Format
		want     string
	}{
		{"plain", "0123456789abcdef\nok\n", FormatPlain, "01234567 …[truncated 8 bytes]"},
		{"plain unterminated", "0123456789abcdef", FormatPlain, "01234567 …[truncated 8 bytes]"},
		{"json", `{"log":"0123456789abcdef\n","stream":"stdout","time":"2019-01-01T11:11:11Z"}` + "\nok\n", FormatDockerJSON, "01234567 …[truncated 8 bytes]"},
		{"json partials", `{"log":"01234","stream":"stdout","time":"2019-01-01T11:11:11Z"}` + "\n" +
			`{"log":"56789abcdef\n","stream":"stdout","time":"2019-01-01T11:11:11Z"}` + "\n", FormatDockerJSON, "01234567 …[truncated 8 bytes]"},
		{"cri", "2019-01-01T11:11:11Z stdout F 0123456789abcdef\n", FormatCRI, "01234567 …[truncated 8 bytes]"},
		{"cri partials", "2019-01-01T11:11:11Z stdout P 01234\n2019-01-01T11:11:11Z stdout F 56789abcdef\n", FormatCRI, "01234567 …[truncated 8 bytes]"},
		{"utf8 fits", "ab€€€€\n", FormatPlain, "ab€€ …[truncated 6 bytes]"},
		{"utf8 cut", "abc€€€€\n", FormatPlain, "abc€ …[truncated 9 bytes]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, _, _ := readAllLines(t, []byte(tt.in), ReaderOptions{Format: tt.format, MaxLineBytes: 8})
			if len(lines) == 0 || lines[0].Text != tt.want {
				t.Fatalf("got %+v, want text %q", lines, tt.want)
			}
		})
	}
}

// growingReader returns io.EOF until more data is appended, like a file
// being written.
type growingReader struct{ buf bytes.Buffer }

func (g *growingReader) Read(p []byte) (int, error) { return g.buf.Read(p) }

func TestReaderTailing(t *testing.T) {
	g := &growingReader{}
	r := NewReader(g, ReaderOptions{Format: FormatDockerJSON, StartOffset: 1000, StartLine: 41})
	next := func() (Line, error) { return r.Next() }

	if _, err := next(); !errors.Is(err, io.EOF) {
		t.Fatalf("empty: %v", err)
	}
	rec1 := `{"log":"first half ","stream":"stdout","time":"2019-01-01T11:11:11Z"}` + "\n"
	g.buf.WriteString(rec1 + `{"log":"second ha`)
	if _, err := next(); !errors.Is(err, io.EOF) {
		t.Fatalf("partial + unterminated: %v", err)
	}
	if off, ok := r.PendingOffset(); !ok || off != 1000 {
		t.Fatalf("PendingOffset = %d, %v", off, ok)
	}
	rest := `lf\n","stream":"stdout","time":"2019-01-01T11:11:12Z"}` + "\n"
	g.buf.WriteString(rest)
	l, err := next()
	if err != nil {
		t.Fatal(err)
	}
	wantSize := int64(len(rec1) + len(`{"log":"second ha`) + len(rest))
	if l.Text != "first half second half" || l.Offset != 1000 || l.Num != 41 || l.Size != wantSize {
		t.Fatalf("got %+v", l)
	}
	if r.Offset() != 1000+wantSize {
		t.Fatalf("Offset() = %d", r.Offset())
	}
	if _, ok := r.PendingOffset(); ok {
		t.Fatal("still pending")
	}
	// Without EOFIsEnd the unterminated line stays held.
	g.buf.WriteString("{\"log\":\"x\\n\"")
	if _, err := next(); !errors.Is(err, io.EOF) {
		t.Fatalf("held line: %v", err)
	}
}

func TestReaderEmptyAndNewlineOnly(t *testing.T) {
	for _, in := range []string{"", "\n", "\n\n\n", "\r\n"} {
		lines, _, _ := readAllLines(t, []byte(in), ReaderOptions{})
		if len(lines) != strings.Count(in, "\n") {
			t.Errorf("%q: %d lines", in, len(lines))
		}
	}
}

func TestReadFileAndIdentity(t *testing.T) {
	dir := t.TempDir()
	content := "Traceback (most recent call last):\n  File \"x.py\", line 1, in <module>\nValueError: boom\nINFO 01-01 00:00:00 [a.py:1] ok\n"
	path := filepath.Join(dir, "a.log")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	id, err := FileIdentity(path)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^\d+:\d+:[0-9a-f]{16}$`).MatchString(id) {
		t.Fatalf("identity %q", id)
	}
	// Stable across rename; the fingerprint is of the first line only.
	moved := filepath.Join(dir, "a.log.1")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(moved, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("more\n")
	f.Close()
	if id2, _ := FileIdentity(moved); id2 != id {
		t.Fatalf("identity changed: %q -> %q", id, id2)
	}
	var recs []Record
	if err := ReadFile(moved, Origin{Node: "n1"}, func(r Record) { recs = append(recs, r) }, nil); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0].Lines != 3 || recs[0].FileID != id || recs[0].File != moved ||
		recs[0].ID != RecordID("n1", id, 0) {
		t.Fatalf("records %+v", recs)
	}

	// Gzip-compressed rotations read transparently.
	gz := filepath.Join(dir, "b.log.2.gz")
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write([]byte(content))
	zw.Close()
	os.WriteFile(gz, buf.Bytes(), 0o644)
	recs = nil
	if err := ReadFile(gz, Origin{Node: "n1"}, func(r Record) { recs = append(recs, r) }, nil); err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Text != "INFO 01-01 00:00:00 [a.py:1] ok" {
		t.Fatalf("gz records %+v", recs)
	}

	if err := ReadFile(filepath.Join(dir, "missing"), Origin{}, func(Record) {}, nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	var warned []error
	broken := filepath.Join(dir, "c.log")
	os.WriteFile(broken, []byte(`{"log":"ok\n","stream":"stdout","time":"2019-01-01T11:11:11Z"}`+"\n{\"log\":\n"), 0o644)
	ReadFile(broken, Origin{}, func(Record) {}, func(err error) { warned = append(warned, err) })
	if len(warned) != 1 || !strings.HasPrefix(warned[0].Error(), broken+": line 2 (offset ") {
		t.Fatalf("warnings %v", warned)
	}
}

// FuzzReader: whatever the bytes and format, framing never panics and
// every input byte is in exactly one Line.
func FuzzReader(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/frame/*.log")
	for _, s := range seeds {
		b, _ := os.ReadFile(s)
		if len(b) > 4096 {
			b = b[:4096]
		}
		for fm := FormatAuto; fm <= FormatCRI; fm++ {
			f.Add(b, uint8(fm), uint16(0))
		}
	}
	f.Add([]byte(`{"log":"a","stream":"stdout","time":"x"}`+"\n"+`{"log":"b\n","stream":"stderr","time":"x"}`), uint8(FormatDockerJSON), uint16(3))
	f.Add([]byte("2016-10-06T00:17:09Z stdout P a\n2016-10-06T00:17:09Z stdout F b"), uint8(FormatCRI), uint16(2))
	// Tools' prefixes on plain lines (removed, a stamp kept as the time).
	f.Add([]byte("worker-1  | 2026-04-08T22:41:07.123456789Z a\n[pod/w-0/main] b\n2026-04-09T00:41:07.123456789+02:00 c\n"), uint8(FormatPlain), uint16(0))
	f.Fuzz(func(t *testing.T, data []byte, format uint8, maxLine uint16) {
		opts := ReaderOptions{Format: Format(format % 4), MaxLineBytes: int(maxLine)}
		lines, _, got := readAllLines(t, data, opts)
		for _, l := range lines {
			if !strings.Contains(l.Text, "…[truncated") && strings.ContainsAny(l.Text, "\n") {
				t.Fatalf("line text contains a newline: %q", l.Text)
			}
			if l.pasted > 0 && (got != FormatPlain || l.broken) {
				t.Fatalf("a %v line lost a tool's prefix: %+v", got, l)
			}
			if got == FormatPlain && !l.Time.IsZero() && l.pasted == 0 {
				t.Fatalf("a plain line has a time without a tool's stamp: %+v", l)
			}
		}
	})
}

// genLines builds n realistic ~180-byte lines of four interleaved writers
// (a Ray-forwarded vLLM worker, NCCL, the Ray driver, the vLLM API server).
// Times advance every few lines, as in real logs: lines with one vLLM header
// in the same second would be joined as one multi-line message.
func genLines(n int) []string {
	msgs := []string{
		"(RayWorkerWrapper pid=223, ip=192.168.141.7) INFO 10-23 03:%02d:%02d [parallel_state.py:1325] rank 1 in world size 2 is assigned as DP rank 0, PP rank 1, TP rank 0",
		"vm:600:600 [0] NCCL INFO Channel %02d/%02d : 0 1 via P2P/CUMEM/read for the benchmark of the framing and joining code path",
		"2024-04-01 10:%02d:%02d,995\tINFO worker.py:1567 -- Connecting to existing Ray cluster at address: 10.4.80.151:6379... and some padding",
		"INFO 06-21 19:%02d:%02d [api_server.py:1043] vLLM API server version 0.8.5 with a somewhat longer message to reach the usual line length",
	}
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf(msgs[i%len(msgs)], i/240%60, i/4%60) + fmt.Sprintf(" %d", i)
	}
	return out
}

func benchInput(b *testing.B, format Format, n int) []byte {
	var buf bytes.Buffer
	for _, l := range genLines(n) {
		if format == FormatDockerJSON {
			rec, _ := json.Marshal(map[string]string{"log": l + "\n"})
			buf.Write(rec[:len(rec)-1])
			buf.WriteString(`,"stream":"stdout","time":"2025-04-06T07:53:25.543119702Z"}` + "\n")
		} else {
			buf.WriteString(l + "\n")
		}
	}
	return buf.Bytes()
}

func benchReader(b *testing.B, format Format) {
	const n = 20000
	input := benchInput(b, format, n)
	b.SetBytes(int64(len(input)))
	b.ReportAllocs()
	b.ResetTimer()
	lines := 0
	for i := 0; i < b.N; i++ {
		r := NewReader(bytes.NewReader(input), ReaderOptions{Format: format, EOFIsEnd: true})
		for {
			_, err := r.Next()
			if err != nil {
				break
			}
			lines++
		}
	}
	b.ReportMetric(float64(lines)/b.Elapsed().Seconds(), "lines/s")
}

func BenchmarkReaderDockerJSON(b *testing.B) { benchReader(b, FormatDockerJSON) }
func BenchmarkReaderPlain(b *testing.B)      { benchReader(b, FormatPlain) }
