package transport

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/faultline/faultline/parsers"
)

func TestToken(t *testing.T) {
	tests := []struct{ in, want string }{
		{"spark-1", "spark-1"},
		{"192.168.200.12", "192_168_200_12"},
		{"a*b>c d", "a_b_c_d"},
		{"", "_"},
		{"tab\there", "tab_here"},
		{"node.example.com", "node_example_com"},
	}
	for _, tt := range tests {
		if got := Token(tt.in); got != tt.want {
			t.Errorf("Token(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSubjects(t *testing.T) {
	if got, want := LogsSubject("dgx", "10.1.230.180"), "faultline.logs.dgx.10_1_230_180"; got != want {
		t.Errorf("LogsSubject = %q, want %q", got, want)
	}
	if got := LogsSubject("a.b", "c"); strings.Count(got, ".") != 3 {
		t.Errorf("LogsSubject(a.b, c) = %q: must have exactly 4 tokens", got)
	}
	if got, want := FindingsSubject("c1", "critical"), "faultline.findings.c1.critical"; got != want {
		t.Errorf("FindingsSubject = %q, want %q", got, want)
	}
	if got, want := MsgID("abc", 12), "abc-12"; got != want {
		t.Errorf("MsgID = %q, want %q", got, want)
	}
}

// TestAppendRecordMatchesEncodingJSON proves the hand-written encoder emits
// what encoding/json would, byte for byte, and that it round-trips.
func TestAppendRecordMatchesEncodingJSON(t *testing.T) {
	ts := time.Date(2025, 10, 23, 3, 54, 46, 123456789, time.UTC)
	tests := []parsers.Record{
		{ID: "x", Cluster: "c", Node: "n", File: "/f", Offset: 0, Line: 1, Text: "plain"},
		{ID: "id1", Cluster: "dgx", Node: "spark-1", Container: "node-1", File: "/var/log/x.log", FileID: "1:2:ab",
			Offset: 12345, Size: 99, Line: 7, Lines: 3, Time: ts, Stream: "stderr",
			Text: "Traceback (most recent call last):\n  File \"x.py\", line 1\r\n\tKeyError: <a> & 'b' \\ \x1b[31mred\x00"},
		{ID: "u", Text: "invalid \xff\xfe utf8 \u2028 sep \u2029 é 漢字 \U0001F600"},
		{ID: "t", Time: time.Date(2025, 1, 1, 0, 0, 0, 0, time.FixedZone("x", 3600))},
	}
	for i, r := range tests {
		want, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		got := AppendRecord(nil, &r)
		if string(got) != string(want)+"\n" {
			t.Errorf("case %d:\n got %s\nwant %s", i, got, want)
		}
		recs, err := Decode(got)
		if err != nil || len(recs) != 1 {
			t.Fatalf("case %d: Decode = %v, %v", i, recs, err)
		}
		if utf8.ValidString(r.Text) && !reflect.DeepEqual(normalize(recs[0]), normalize(r)) {
			t.Errorf("case %d: round trip %+v != %+v", i, recs[0], r)
		}
	}
}

func normalize(r parsers.Record) parsers.Record {
	r.Time = r.Time.UTC()
	return r
}

func TestDecodeNDJSON(t *testing.T) {
	var body []byte
	for i := 0; i < 3; i++ {
		body = AppendRecord(body, &parsers.Record{ID: string(rune('a' + i)), Offset: int64(i)})
	}
	recs, err := Decode(append(body, '\n'))
	if err != nil || len(recs) != 3 || recs[2].ID != "c" || recs[2].Offset != 2 {
		t.Fatalf("Decode = %+v, %v", recs, err)
	}
	if _, err := Decode([]byte("{\"id\":\"a\"}\nnot json\n")); err == nil || !strings.Contains(err.Error(), "record 2") {
		t.Fatalf("Decode(bad) error = %v, want one naming record 2", err)
	}
}

func TestFitText(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		limit int
		cut   bool
	}{
		{"fits", "short", 100, false},
		{"ascii", strings.Repeat("a", 1000), 200, true},
		{"escapes", strings.Repeat("<\x01", 500), 200, true},
		{"multibyte", strings.Repeat("漢", 500), 200, true},
		{"invalid", strings.Repeat("\xff", 500), 200, true},
	}
	for _, tt := range tests {
		got, cut := FitText(tt.text, 50, tt.limit)
		if cut != tt.cut {
			t.Errorf("%s: cut = %v, want %v", tt.name, cut, tt.cut)
		}
		if cut && !strings.HasSuffix(got, TruncateMarker) {
			t.Errorf("%s: no marker", tt.name)
		}
		r := parsers.Record{Text: got}
		enc := appendString(nil, r.Text)
		if 50+len(enc) > tt.limit {
			t.Errorf("%s: encoded %d bytes + 50 > limit %d", tt.name, len(enc), tt.limit)
		}
		if !utf8.ValidString(strings.TrimSuffix(got, TruncateMarker)) && utf8.ValidString(tt.text) {
			t.Errorf("%s: cut inside a rune", tt.name)
		}
	}
}

func BenchmarkAppendRecord(b *testing.B) {
	r := parsers.Record{ID: "0123456789abcdef01234567", Cluster: "dgx", Node: "spark-1", File: "/var/lib/docker/containers/abc/abc-json.log",
		FileID: "2049:1234:deadbeef", Offset: 123456789, Size: 180, Line: 12345, Time: time.Now(), Stream: "stdout",
		Text: "(RayWorkerWrapper pid=223, ip=192.168.141.7) INFO 10-23 03:54:46 [parallel_state.py:1325] rank 1 in world size 2 is assigned as DP rank 0"}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRecord(buf[:0], &r)
	}
}

// TestEncoderRoundTrip: what the Encoder writes (format 2: origin lines,
// compact IDs, implied offsets and lines) decodes to the records it was
// given, field for field, across origin changes, time zones, odd times and
// texts, IDs that are not 24 hex digits, and records out of file order.
func TestEncoderRoundTrip(t *testing.T) {
	base := time.Date(2025, 10, 23, 3, 54, 46, 0, time.UTC)
	times := []time.Time{{}, base, base.Add(123456789), base.Add(100), base.Add(time.Second + 5e8),
		base.Add(time.Second + 120000), base.Add(-time.Hour), time.Date(1969, 12, 31, 23, 59, 59, 999999999, time.UTC),
		base.In(time.FixedZone("x", 3600)), base.Add(7)}
	origins := []parsers.Record{
		{Cluster: "dgx", Node: "spark-1", File: "/var/log/x.log", FileID: "1:2:ab"},
		{Cluster: "dgx", Node: "spark-2", Container: "node-1", File: "/tmp/ray/session_latest/logs/w.out"},
		{Cluster: "c<&>", Node: "n\"\\", File: "é\u2028"},
	}
	texts := []string{"", "plain", "(RayWorkerWrapper pid=223) INFO 10-23 03:54:46 [x.py:1] rank 1 <a> & \"b\" \\ \t\x01\x7f é 漢字 \U0001F600 \u2028\u2029 end",
		strings.Repeat("abcdefg<", 5)}
	ids := []string{"", "0123456789abcdef01234567", "0123456789ABCDEF01234567", "stdin~3", "0123456789abcdef0123456"}
	var e Encoder
	var body []byte
	var want []parsers.Record
	n := 0
	var off int64
	line := 1
	for _, o := range origins {
		for _, ts := range times {
			for _, tx := range texts {
				r := o
				size := int64(n % 3 * 40)
				lines := n % 4
				if n%7 == 3 { // out of order: a joined record emitted late
					off, line = off-500, line-9
				}
				r.ID, r.Offset, r.Size, r.Line, r.Lines, r.Time, r.Stream, r.Text = ids[n%len(ids)], off, size, line, lines, ts, []string{"", "stdout"}[n%2], tx
				if n%5 == 0 {
					r.ID = parsers.RecordID(r.Node, r.FileID, r.Offset)
				}
				off, line = off+size, line+max(lines, 1)
				n++
				body = e.Append(body, &r)
				want = append(want, r)
			}
		}
	}
	var f Framer
	got, err := Decode(f.Append(nil, body))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d records decoded, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(normalize(got[i]), normalize(want[i])) {
			t.Fatalf("record %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// TestEncoderBodiesStandAlone follows the shipper's batching (shipper/tail.go
// emit): a body is closed at a soft limit, and a record that takes it past
// the hard limit is cut out and starts the next body alone. Every body must
// decode on its own to exactly its records, origin included: a record
// moved alone to a body would otherwise have no origin line before it.
func TestEncoderBodiesStandAlone(t *testing.T) {
	const soft, hard, bodyCap = 600, 900, 750 // the shipper's bodyCap is min(soft+soft/4, hard)
	var e Encoder
	body := make([]byte, 0, bodyCap)
	var inBody []parsers.Record
	var bodies [][]byte
	var groups [][]parsers.Record
	closeBody := func() {
		if len(inBody) == 0 {
			return
		}
		bodies, groups = append(bodies, body), append(groups, inBody)
		body, inBody = make([]byte, 0, bodyCap), nil
	}
	var off int64
	for i := 0; i < 400; i++ {
		text := strings.Repeat("x", 20+(i*37)%120)
		if i%23 == 5 {
			text = strings.Repeat("y", 500+(i%3)*150) // a record past the hard limit with most bodies
		}
		r := parsers.Record{Cluster: "dgx", Node: "spark-1", File: "/var/log/a.log", FileID: "9:9:ff",
			Offset: off, Size: int64(len(text) + 1), Line: i + 1, Text: text}
		r.ID = parsers.RecordID(r.Node, r.FileID, r.Offset)
		off += r.Size
		start := len(body)
		body = e.Append(body, &r)
		if n := len(body) - start; start > 0 && start+n > hard {
			rec := append([]byte(nil), body[start:]...)
			body = body[:start]
			closeBody()
			body = append(body, rec...)
		}
		inBody = append(inBody, r)
		if len(body) >= soft {
			closeBody()
		}
	}
	closeBody()
	var f Framer
	alone := 0
	for i, b := range bodies {
		got, err := Decode(f.Append(nil, b))
		if err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, groups[i]) {
			t.Fatalf("body %d decodes to\n%+v\nwant\n%+v", i, got, groups[i])
		}
		if len(groups[i]) == 1 {
			alone++
		}
	}
	if alone == 0 {
		t.Fatal("no record was sent alone: the test does not cover the move")
	}
}

// FuzzAppendString: the word-at-a-time escaping writes what encoding/json
// writes (HTML-safe, \u2028/\u2029 escaped, invalid UTF-8 as \ufffd), except
// that \b and \f keep the \u00XX spelling moby's json-file uses; and it
// decodes back to s with invalid UTF-8 replaced.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain ascii text of some length", "<>&\"\\\x00\x1f\x7f\x80\b\f", "é漢字\U0001F600\u2028\u2029\xff", "12345678<12345678"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendString(nil, s)
		std, _ := json.Marshal(s)
		if want := mobyEscapes(std); string(got) != want {
			t.Fatalf("appendString(%q) = %s, want %s", s, got, want)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != string([]rune(s)) {
			t.Fatalf("appendString(%q) = %s decodes to %q, %v", s, got, back, err)
		}
	})
}

// mobyEscapes respells encoding/json's \b and \f as \u0008 and \u000c.
func mobyEscapes(js []byte) string {
	var b strings.Builder
	for i := 0; i < len(js); i++ {
		if js[i] != '\\' || i+1 == len(js) {
			b.WriteByte(js[i])
			continue
		}
		i++
		switch js[i] {
		case 'b':
			b.WriteString(`\u0008`)
		case 'f':
			b.WriteString(`\u000c`)
		default:
			b.WriteByte('\\')
			b.WriteByte(js[i])
		}
	}
	return b.String()
}

// BenchmarkEncoder is the shipper's encoding per record: consecutive
// records of one file into 768 KiB bodies.
func BenchmarkEncoder(b *testing.B) {
	r := parsers.Record{ID: "0123456789abcdef01234567", Cluster: "dgx", Node: "spark-1", File: "/var/lib/docker/containers/abc/abc-json.log",
		FileID: "2049:1234:deadbeef", Offset: 123456789, Size: 180, Line: 12345, Time: time.Now().UTC(), Stream: "stdout",
		Text: "(RayWorkerWrapper pid=223, ip=192.168.141.7) INFO 10-23 03:54:46 [parallel_state.py:1325] rank 1 in world size 2 is assigned as DP rank 0"}
	buf := make([]byte, 0, 800<<10)
	var e Encoder
	b.ReportAllocs()
	for b.Loop() {
		if len(buf) >= 768<<10 {
			buf = buf[:0]
		}
		buf = e.Append(buf, &r)
		r.Offset += r.Size
		r.Line++
	}
}

func TestAppendInt(t *testing.T) {
	for _, v := range []int64{0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 12345, 123456789, 1<<63 - 1, -1, -10, -1 << 63} {
		if got, want := string(appendInt(nil, v)), strconv.FormatInt(v, 10); got != want {
			t.Errorf("appendInt(%d) = %s", v, got)
		}
	}
	for ns := 0; ns < 1e9; ns += 999_983 {
		for _, x := range []int{ns, ns / 1000 * 1000, ns / 1e6 * 1e6, ns / 10 * 10} {
			want := time.Date(2025, 1, 1, 0, 0, 0, x, time.UTC).Format(time.RFC3339Nano)[19:]
			if got := string(appendFracZ(nil, x)); got != want {
				t.Fatalf("appendFracZ(%d) = %s, want %s", x, got, want)
			}
		}
	}
}
