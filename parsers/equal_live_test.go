package parsers

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A traceback whose lines come far apart, with the idle flush running
// between every two lines, is still one record: only its end (the
// exception line) lets the quiet time close it.
func TestJoinerSlowTracebackIsOneRecord(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []Record
	j := NewJoiner(Origin{}, JoinOptions{Now: func() time.Time { return now }}, func(r Record) { recs = append(recs, r) })
	text := "Traceback (most recent call last):\n" +
		"  File \"/app/main.py\", line 3, in <module>\n" +
		"    main()\n" +
		"ValueError: bad value\n"
	for _, l := range plainLines(text) {
		j.Add(l)
		now = now.Add(200 * time.Millisecond) // 4x the shipper's 50 ms quiet time
		j.FlushIdle(50 * time.Millisecond)
	}
	if len(recs) != 1 || recs[0].Lines != 4 || recs[0].Text != strings.TrimSuffix(text, "\n") {
		t.Fatalf("records: %+v", recs)
	}
}

// The offline Reader and a tailer that splits lines itself and keeps only
// the head of a long line (as the shipper does) get the same Line: one
// long-line policy, one truncation marker.
func TestLongLineSameLiveAndOffline(t *testing.T) {
	for _, tc := range []struct {
		name string
		line string
	}{
		{"plain", strings.Repeat("x", 3<<19)},
		{"cri", "2025-01-01T00:00:00.000000001Z stdout F " + strings.Repeat("y", 3<<19)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := "first line\n" + tc.line + "\nlast line\n"
			if tc.name == "cri" {
				data = "2025-01-01T00:00:00Z stdout F first line\n" + tc.line + "\n2025-01-01T00:00:01Z stdout F last line\n"
			}
			r := NewReader(strings.NewReader(data), ReaderOptions{EOFIsEnd: true})
			var offline []Line
			for {
				l, err := r.Next()
				if err != nil {
					break
				}
				offline = append(offline, l)
			}
			// The tailer: keeps LineLimit bytes of each line, counts the rest.
			d := NewDecoder(FormatAuto)
			d.Detect([]byte(data))
			var live []Line
			off := int64(0)
			for i, raw := range strings.SplitAfter(data, "\n") {
				if raw == "" {
					continue
				}
				head, dropped := []byte(raw), int64(0)
				if lim := d.LineLimit(); len(head)-1 > lim {
					dropped = int64(len(head) - 1 - lim)
					head = head[:lim]
				}
				l, ok, _ := d.DecodeCut(head, off, int64(len(raw)), i+1, dropped)
				if ok {
					live = append(live, l)
				}
				off += int64(len(raw))
			}
			if len(offline) != 3 || len(live) != 3 {
				t.Fatalf("lines: offline %d, live %d", len(offline), len(live))
			}
			for i := range live {
				if live[i] != offline[i] {
					t.Errorf("line %d differs: live %d bytes %q..., offline %d bytes %q...", i, len(live[i].Text), tail(live[i].Text), len(offline[i].Text), tail(offline[i].Text))
				}
			}
			if !strings.Contains(live[1].Text, " …[truncated ") || len(live[1].Text) > DefaultMaxLineBytes+40 {
				t.Errorf("long line not cut with a marker: %d bytes, ends %q", len(live[1].Text), tail(live[1].Text))
			}
		})
	}
}

func tail(s string) string { return s[max(0, len(s)-40):] }

// A gzip file is told by its content: without ".gz" in its name it is
// decompressed, and its identity fingerprints the decompressed first line
// (the shipper's key for a compressed rotation of a file it read).
func TestGzipByMagicAndIdentity(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "app.log")
	packed := filepath.Join(dir, "app.log.1")
	content := "2025-01-01 10:00:00,000 INFO first\nsecond\n"
	if err := os.WriteFile(plain, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(content))
	zw.Close()
	if err := os.WriteFile(packed, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var texts []string
	if err := ReadFile(packed, Origin{Node: "n"}, func(r Record) { texts = append(texts, r.Text) }, nil); err != nil {
		t.Fatal(err)
	}
	if strings.Join(texts, "|") != "2025-01-01 10:00:00,000 INFO first|second" {
		t.Fatalf("gzip without .gz read as %q", texts)
	}
	a, err := FileIdentity(plain)
	if err != nil {
		t.Fatal(err)
	}
	z, err := FileIdentity(packed)
	if err != nil {
		t.Fatal(err)
	}
	if fp := func(s string) string { return s[strings.LastIndexByte(s, ':')+1:] }; fp(a) != fp(z) {
		t.Errorf("fingerprints differ: %s (plain) vs %s (gzip)", a, z)
	}
}

// Records without a time of their own take the previous time of their
// process (stream and prefixes) in file order, whatever order they complete
// in, else the file's latest; with no time before them, with ReadTime (the
// shipper), the time their first line was read; records with a container
// time keep it.
func TestJoinerGivesEveryRecordATime(t *testing.T) {
	read := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var recs []Record
	j := NewJoiner(Origin{}, JoinOptions{Now: func() time.Time { return read }, ReadTime: true}, func(r Record) { recs = append(recs, r) })
	lines := plainLines("ip-10-0-0-1:77:77 [0] NCCL INFO Bootstrap : Using eth0\n" + // nothing before: read time
		"(RayWorkerWrapper pid=9) INFO 03-01 11:59:58 [worker.py:1] Loading\n" + // its own time; completes last
		"(RayWorkerWrapper pid=9) ip-10-0-0-1:9:9 [0] NCCL INFO Channel 00\n" + // that process's time
		"(RayWorkerWrapper pid=9) ip-10-0-0-1:9:9 [0] NCCL INFO Channel 01\n" + // (closes the one before)
		"(RayWorkerWrapper pid=8) print output\n") // another process: the file's latest
	withTime := Line{Offset: 1000, Num: 6, Text: "no time", Time: read.Add(-time.Hour)}
	for _, l := range append(lines, withTime) {
		j.Add(l)
	}
	j.Flush()
	own := time.Date(2026, 3, 1, 11, 59, 58, 0, time.UTC)
	// Record.Time: the filled time (line 2 has its own, which Parse finds).
	want := map[int]time.Time{1: read, 2: {}, 3: own, 4: own, 5: own, 6: read.Add(-time.Hour)}
	if len(recs) != len(want) {
		t.Fatalf("%d records: %+v", len(recs), recs)
	}
	for _, r := range recs {
		if !r.Time.Equal(want[r.Line]) {
			t.Errorf("line %d %q: time %v, want %v", r.Line, r.Text, r.Time, want[r.Line])
		}
		if ev := Parse(r); r.Line >= 2 && r.Line <= 4 && !ev.Time.Equal(own) {
			t.Errorf("line %d %q: Parse time %v, want %v", r.Line, r.Text, ev.Time, own)
		}
	}
}

// lineTime (the joiner's look at a header line) finds exactly the time
// Parse finds on that line, on every line of the real logs: a record is
// given its process's time only when Parse would find none of its own.
func TestLineTimeAgreesWithParse(t *testing.T) {
	n := 0
	filepath.WalkDir("../testdata/logs", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".json") || strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".go") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r := NewReader(bytes.NewReader(b), ReaderOptions{EOFIsEnd: true})
		for {
			l, err := r.Next()
			if err != nil {
				break
			}
			n++
			want := Parse(Record{Text: l.Text}).Time
			if got := lineTime(l.Text, time.Now); !got.Equal(want) {
				t.Errorf("%s:%d %q: lineTime %v, Parse %v", p, l.Num, l.Text, got, want)
			}
		}
		return nil
	})
	if n < 1000 {
		t.Fatalf("only %d lines looked at", n)
	}
}

// A blank line is never given the read time: serve --demo replays logs of
// 2026-04-08 as if written now, and the blank lines of ray/monitor.out took
// the replay's clock, so the timeline spanned months and the newest hits
// were blank rows. It is timing: a blank line that arrives after the writer
// paused (the shipper flushed what it held) is a record of its own. Every
// line of the seed's files, tailed so (flushed after each) with ReadTime and
// a clock years later, takes a time from its file (or none).
func TestJoinerNeverGivesBlankLinesTheReadTime(t *testing.T) {
	read := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC)
	n := 0
	for _, path := range []string{
		"../testdata/logs/seed/failed/spark-1/ray/monitor.out",
		"../testdata/logs/seed/failed/spark-1/ray/raylet.out",
		"../testdata/logs/seed/failed/spark-1/ray/gcs_server.out",
		"../testdata/logs/seed/failed/spark-1/ray/monitor.log",
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var recs []Record
		j := NewJoiner(Origin{Node: "spark-1"}, JoinOptions{Now: func() time.Time { return read }, ReadTime: true},
			func(r Record) { recs = append(recs, r) })
		for _, l := range plainLines(string(data)) {
			j.Add(l)
			j.Flush()
		}
		blank := 0
		for _, r := range recs {
			if strings.TrimSpace(r.Text) == "" {
				blank++
			}
			if r.Time.Equal(read) {
				t.Errorf("%s:%d %q took the read time", path, r.Line, r.Text)
			}
		}
		n += blank
	}
	if n == 0 {
		t.Fatal("no blank record in the seed's Ray logs: the test tests nothing")
	}
}
