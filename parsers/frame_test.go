package parsers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The -update flag regenerates golden files. It is registered only if no
// other test file of the package did so first.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files")
	}
}

func goldenUpdate() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// goldenText keeps golden files reviewable: long texts are shown as head,
// length and hash, tail.
func goldenText(s string) string {
	if len(s) <= 400 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%s…[%d bytes, sha256 %s]…%s", s[:120], len(s), hex.EncodeToString(sum[:6]), s[len(s)-80:])
}

// checkGolden compares got (marshalled as indented JSON) with path.golden.
func checkGolden(t *testing.T, path string, got any) {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(got); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	golden := path + ".golden"
	if goldenUpdate() {
		if err := os.WriteFile(golden, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(b, want) {
		t.Errorf("%s differs from golden (run go test -update and review the diff):\n%s", path, firstDiff(string(want), string(b)))
	}
}

func firstDiff(want, got string) string {
	wl, gl := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(wl) || i < len(gl); i++ {
		var w, g string
		if i < len(wl) {
			w = wl[i]
		}
		if i < len(gl) {
			g = gl[i]
		}
		if w != g {
			return fmt.Sprintf("line %d:\nwant %s\ngot  %s", i+1, w, g)
		}
	}
	return ""
}

type goldenLine struct {
	Offset int64     `json:"offset"`
	Size   int64     `json:"size"`
	Num    int       `json:"num"`
	Stream string    `json:"stream,omitempty"`
	Time   time.Time `json:"time,omitzero"`
	Text   string    `json:"text"`
}

type goldenFrame struct {
	Format   string       `json:"format"`
	Lines    []goldenLine `json:"lines"`
	Warnings []string     `json:"warnings,omitempty"`
}

// readAllLines frames input completely and checks the Line invariant on
// the way: every byte is in exactly one Line.
func readAllLines(t testing.TB, input []byte, opts ReaderOptions) ([]Line, []error, Format) {
	t.Helper()
	var warns []error
	opts.Warn = func(err error) { warns = append(warns, err) }
	opts.EOFIsEnd = true
	r := NewReader(bytes.NewReader(input), opts)
	var lines []Line
	for {
		l, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	checkCoverage(t, lines, int64(len(input)))
	return lines, warns, r.Format()
}

// checkCoverage asserts that the lines tile [0, n) exactly.
func checkCoverage(t testing.TB, lines []Line, n int64) {
	t.Helper()
	type span struct{ off, size int64 }
	spans := make([]span, 0, len(lines))
	nums := map[int]bool{}
	for _, l := range lines {
		if l.Size <= 0 {
			t.Fatalf("line %d at %d has size %d", l.Num, l.Offset, l.Size)
		}
		if nums[l.Num] {
			t.Fatalf("line number %d twice", l.Num)
		}
		nums[l.Num] = true
		spans = append(spans, span{l.Offset, l.Size})
	}
	// Partials are emitted when their line completes, so sort by offset.
	for i := 1; i < len(spans); i++ {
		for k := i; k > 0 && spans[k].off < spans[k-1].off; k-- {
			spans[k], spans[k-1] = spans[k-1], spans[k]
		}
	}
	var sum int64
	for _, s := range spans {
		sum += s.size
	}
	if sum != n {
		t.Fatalf("line sizes sum to %d, input has %d bytes", sum, n)
	}
	// Partial records interleave, so spans of different lines can overlap
	// in range but never start at the same offset.
	for i := 1; i < len(spans); i++ {
		if spans[i].off == spans[i-1].off {
			t.Fatalf("two lines start at offset %d", spans[i].off)
		}
	}
}

func TestFrameGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/frame/*.log")
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			input, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lines, warns, f := readAllLines(t, input, ReaderOptions{})
			g := goldenFrame{Format: f.String(), Lines: []goldenLine{}}
			for _, l := range lines {
				g.Lines = append(g.Lines, goldenLine{l.Offset, l.Size, l.Num, l.Stream, l.Time, goldenText(l.Text)})
			}
			for _, w := range warns {
				g.Warnings = append(g.Warnings, w.Error())
			}
			checkGolden(t, path, g)
		})
	}
}

func TestFrameDetectFormat(t *testing.T) {
	tests := []struct {
		head string
		want Format
	}{
		{"", FormatPlain},
		{"INFO 02-07 11:03:45 config.py:549] x\n", FormatPlain},
		{`{"log":"hi\n","stream":"stdout","time":"2019-01-01T11:11:11.111111111Z"}` + "\n", FormatDockerJSON},
		{"\n\n" + `{"log":"partial only`, FormatDockerJSON},
		{`{"stream":"stdout","log":"x\n","time":"2019-01-01T11:11:11Z"}`, FormatDockerJSON},
		{`{"msg":"structured app log"}`, FormatPlain},
		{"2016-10-06T00:17:09.669794202Z stdout P log content 1\n", FormatCRI},
		{"2016-10-06T00:17:09.669794202Z stderr F:x log\n", FormatCRI},
		{"2016-10-06T00:17:09+02:00 stdout F\n", FormatCRI},
		// docker logs -t: a timestamp but no stream/tag.
		{"2025-04-06T07:53:25.543119702Z DEBUG 04-06 00:53:25 [__init__.py:28] No plugins\n", FormatPlain},
		{"2016-10-06T00:17:09Z stdout X text\n", FormatPlain},
	}
	for _, tt := range tests {
		if got := DetectFormat([]byte(tt.head)); got != tt.want {
			t.Errorf("DetectFormat(%q) = %v, want %v", tt.head, got, tt.want)
		}
	}
}

func TestFrameFinishText(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"plain", "hello", "hello"},
		{"crlf", "hello\r\n", "hello"},
		{"many trailing", "hello\r\r\n\n", "hello"},
		{"tqdm", "a 10%\ra 50%\ra 100%", "a 100%"},
		{"tqdm trailing cr", "a 10%\ra 100%\r", "a 100%"},
		{"sgr", "\x1b[32mINFO\x1b[0m x", "INFO x"},
		{"csi cursor", "\x1b[2K\x1b[1Ax", "x"},
		{"osc", "\x1b]0;title\x07x", "x"},
		{"osc st", "\x1b]0;title\x1b\\x", "x"},
		{"two-byte", "\x1b7x\x1b8", "x"},
		{"esc at end", "x\x1b", "x"},
		{"caret", "^[[1;36m(W pid=1)^[[0;0m x", "(W pid=1) x"},
		{"syslog", "#033[33m(raylet)#033[0m x", "(raylet) x"},
		{"bare", "[1;36m(W pid=1)[0;0m x [0m", "(W pid=1) x "},
		{"bare lookalikes kept", "timeout [5m] list [0] a[1] [;1m", "timeout [5m] list [0] a[1] [;1m"},
		{"invalid utf8", "a\xffb", "a\uFFFDb"},
		{"valid utf8", "é ✓ 🚀", "é ✓ 🚀"},
		{"nul kept", "a\x00b", "a\x00b"},
	}
	d := NewDecoder(FormatPlain)
	for _, tt := range tests {
		if got := d.finish([]byte(tt.in), 0); got != tt.want {
			t.Errorf("%s: finish(%q) = %q, want %q", tt.name, tt.in, got, tt.want)
		}
	}
	if got := d.finish([]byte("ab\xe2\x9c"), 7); got != "ab …[truncated 9 bytes]" {
		t.Errorf("truncated cut rune: got %q", got)
	}
}

// TestFrameFastJSONMatchesEncodingJSON checks the hand-rolled decoder against
// encoding/json on the shapes moby writes.
func TestFrameFastJSONMatchesEncodingJSON(t *testing.T) {
	logs := []string{
		"", "\n", "plain\n", "tab\tquote\"back\\slash/\n", "\x1b[0m\u0001\b\f\r\n",
		"<html> & </html>\n", "é ✓ 🚀\n", "\ufffd\n", strings.Repeat("z", 16384),
	}
	for _, l := range logs {
		for _, stream := range []string{"stdout", "stderr", "other"} {
			raw, _ := json.Marshal(map[string]string{"log": l})
			raw = append(raw[:len(raw)-1], []byte(`,"stream":"`+stream+`","time":"2019-01-01T11:11:11.111111111Z"}`)...)
			d := NewDecoder(FormatDockerJSON)
			text, s, ts, ok := d.fastJSON(raw)
			if !ok {
				t.Errorf("fast path refused %s", raw)
				continue
			}
			var rec dockerJSONRecord
			if err := json.Unmarshal(raw, &rec); err != nil {
				t.Fatal(err)
			}
			if string(text) != *rec.Log || s != rec.Stream || string(ts) != rec.Time {
				t.Errorf("fast path %q %q %q, encoding/json %q %q %q", text, s, ts, *rec.Log, rec.Stream, rec.Time)
			}
		}
	}
}

func TestFrameParseLogTime(t *testing.T) {
	for _, s := range []string{
		"2019-01-01T11:11:11.111111111Z", "2019-01-01T11:11:11Z", "2019-01-01T11:11:11.5Z",
		"2024-02-29T23:59:59.000000001Z", "2016-10-06T02:17:09.1+02:00",
	} {
		want, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		if got := parseLogTime(s); !got.Equal(want) {
			t.Errorf("parseLogTime(%q) = %v, want %v", s, got, want)
		}
	}
	for _, s := range []string{"", "2023-02-30T00:00:00Z", "2019-13-01T11:11:11Z", "not a time", "2019-01-01T11:11:11.Z"} {
		if got := parseLogTime(s); !got.IsZero() {
			t.Errorf("parseLogTime(%q) = %v, want zero", s, got)
		}
	}
}

func TestFrameDecoderStandalone(t *testing.T) {
	// The shipper splits lines itself and feeds the Decoder.
	d := NewDecoder(FormatAuto)
	recs := []string{
		`{"log":"part one ","stream":"stdout","time":"2019-01-01T11:11:11Z"}`,
		`{"log":"err\n","stream":"stderr","time":"2019-01-01T11:11:12Z"}`,
		`{"log":"part two","stream":"stdout","time":"2019-01-01T11:11:13Z"}`,
	}
	var off int64
	var got []Line
	for i, r := range recs {
		l, ok, err := d.Decode([]byte(r+"\n"), off, int64(len(r)+1), i+1)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			got = append(got, l)
		}
		if po, held := d.PendingOffset(); !held || po != 0 {
			t.Fatalf("after record %d: PendingOffset = %d, %v; want 0, true", i+1, po, held)
		}
		off += int64(len(r) + 1)
	}
	if d.Format() != FormatDockerJSON {
		t.Fatalf("format %v", d.Format())
	}
	l, ok := d.Flush()
	if !ok {
		t.Fatal("Flush: no pending partial")
	}
	got = append(got, l)
	if _, ok := d.Flush(); ok {
		t.Fatal("second Flush returned a line")
	}
	if len(got) != 2 || got[0].Text != "err" || got[1].Text != "part one part two" || got[1].Offset != 0 ||
		got[1].Size != int64(len(recs[0])+len(recs[2])+2) || got[1].Num != 1 {
		t.Fatalf("got %+v", got)
	}
}

func TestFrameBrokenJSONWarning(t *testing.T) {
	input := "{\"log\":\"ok\\n\",\"stream\":\"stdout\",\"time\":\"2019-01-01T11:11:11Z\"}\n{\"log\":\"cut\n"
	lines, warns, _ := readAllLines(t, []byte(input), ReaderOptions{})
	if len(lines) != 2 || lines[1].Text != `{"log":"cut` {
		t.Fatalf("lines %+v", lines)
	}
	if len(warns) != 1 || !strings.HasPrefix(warns[0].Error(), "line 2 (offset 63): broken json-file record: ") {
		t.Fatalf("warnings %v", warns)
	}
	var se *json.SyntaxError
	if !errors.As(warns[0], &se) {
		t.Errorf("warning does not wrap the json error: %v", warns[0])
	}
}

func TestFrameBinaryWarnsOnce(t *testing.T) {
	input := []byte("ELF\x00\x01\x02\nmore\x00\nstill\x00binary\n")
	lines, warns, f := readAllLines(t, input, ReaderOptions{})
	if f != FormatPlain || len(lines) != 3 {
		t.Fatalf("format %v, %d lines", f, len(lines))
	}
	if len(warns) != 1 || !strings.Contains(warns[0].Error(), "binary") {
		t.Fatalf("warnings %v", warns)
	}
}

// TestDecoderLogTimeCache: the Decoder's per-second time cache gives what
// parseLogTime gives, whatever came before.
func TestDecoderLogTimeCache(t *testing.T) {
	times := []string{
		"2026-04-08T22:00:00.000660888Z", "2026-04-08T22:00:00.00413531Z", "2026-04-08T22:00:00Z",
		"2026-04-08T22:00:00.5Z", "2026-04-08T22:00:00.Z", "2026-04-08T22:00:00.1234567891Z",
		"2026-04-08T22:00:00.12x4Z", "2026-04-08T22:00:00.123", "2026-04-08T22:00:01.999999999Z",
		"2026-04-08T22:00:01+02:00", "2026-04-08T22:00:01.5+02:00", "2026-02-30T22:00:01.5Z",
		"2026-04-08T22:00:01.000000001Z", "2026-04-08T22:00:0", "", "2026-04-08T22:00:01.000000001Z",
	}
	d := NewDecoder(FormatDockerJSON)
	for _, s := range times {
		got, want := d.logTime([]byte(s)), parseLogTime(s)
		if got != want {
			t.Errorf("%q: cached %v, parseLogTime %v", s, got, want)
		}
	}
}
