package parsers

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

type goldenRecord struct {
	Offset int64     `json:"offset"`
	Size   int64     `json:"size"`
	Line   int       `json:"line"`
	Lines  int       `json:"lines"`
	Stream string    `json:"stream,omitempty"`
	Time   time.Time `json:"time,omitzero"`
	Text   []string  `json:"text"` // one entry per line, long lines abbreviated
}

// joinAll frames and joins input, checking that every byte is in exactly
// one record and that offsets are distinct.
func joinAll(t testing.TB, input []byte, opts JoinOptions) []Record {
	t.Helper()
	lines, _, _ := readAllLines(t, input, ReaderOptions{})
	return joinLines(t, lines, int64(len(input)), opts)
}

func joinLines(t testing.TB, lines []Line, n int64, opts JoinOptions) []Record {
	t.Helper()
	var recs []Record
	j := NewJoiner(Origin{Node: "node-a", FileID: "1:2:abc"}, opts, func(r Record) { recs = append(recs, r) })
	for i, l := range lines {
		j.Add(l)
		if i%7 == 0 || i == len(lines)-1 {
			checkPendingOffset(t, j)
		}
	}
	j.Flush()
	if _, ok := j.PendingOffset(); ok {
		t.Fatal("records pending after Flush")
	}
	checkRecords(t, lines, recs, n)
	return recs
}

// checkPendingOffset compares PendingOffset with a walk over every active record.
func checkPendingOffset(t testing.TB, j *Joiner) {
	t.Helper()
	var want int64
	wantOK := false
	for p := j.head; p != nil; p = p.next {
		if !wantOK || p.lineOff < want {
			want, wantOK = p.lineOff, true
		}
	}
	if got, ok := j.PendingOffset(); got != want || ok != wantOK {
		t.Fatalf("PendingOffset = %d, %v; the pending records say %d, %v", got, ok, want, wantOK)
	}
}

// checkRecords: sizes sum to the input, line counts to the lines, every
// record starts at a line, no offset twice, IDs match offsets, and records
// of one writer come out in the order their lines came in (file order,
// except that a reassembled json-file/CRI line arrives when it completes).
func checkRecords(t testing.TB, lines []Line, recs []Record, n int64) {
	t.Helper()
	starts := map[int64]Line{}
	index := map[int64]int{}
	for i, l := range lines {
		starts[l.Offset] = l
		index[l.Offset] = i
	}
	var size int64
	nlines := 0
	seen := map[int64]bool{}
	lastByKey := map[string]int{}
	for _, r := range recs {
		size += r.Size
		nlines += r.Lines
		if seen[r.Offset] {
			t.Fatalf("offset %d in two records", r.Offset)
		}
		seen[r.Offset] = true
		l, ok := starts[r.Offset]
		if !ok {
			// An entry of a squashed paste starts inside its line.
			i := sort.Search(len(lines), func(i int) bool { return lines[i].Offset > r.Offset }) - 1
			if i < 0 || r.Offset >= lines[i].Offset+lines[i].Size || squashCuts(lines[i].Text, nil) == nil {
				t.Fatalf("record at %d does not start at a line", r.Offset)
			}
			if r.Line != lines[i].Num || r.Stream != lines[i].Stream || r.ID != RecordID(r.Node, r.FileID, r.Offset) || r.Lines < 1 {
				t.Fatalf("record %+v does not match the line it is an entry of %+v", r, lines[i])
			}
			continue
		}
		// (a record whose first line has no time may take its process's
		// previous time)
		if r.Line != l.Num || r.Stream != l.Stream || (!r.Time.Equal(l.Time) && !l.Time.IsZero()) || r.Lines < 1 {
			t.Fatalf("record %+v does not match its first line %+v", r, l)
		}
		if r.ID != RecordID(r.Node, r.FileID, r.Offset) {
			t.Fatalf("record ID %s", r.ID)
		}
		// (a wrapped line is joined back without a newline, so the record's
		// first line may be longer than the physical one)
		if first := strings.SplitN(r.Text, "\n", 2)[0]; !strings.HasPrefix(l.Text, first) && !strings.HasPrefix(first, l.Text) {
			t.Fatalf("record text %q does not start with its first line %q", r.Text, l.Text)
		}
		prefix, rest := (&Joiner{}).splitPrefix(l.Text)
		if blankLine(rest) {
			continue
		}
		key := r.Stream + "|" + prefix + "|" + ncclWriterKey(rest)
		if last, ok := lastByKey[key]; ok && last >= index[r.Offset] {
			t.Fatalf("records of %q out of order: line #%d after #%d", key, index[r.Offset], last)
		}
		lastByKey[key] = index[r.Offset]
	}
	if size != n {
		t.Fatalf("record sizes sum to %d, input has %d bytes", size, n)
	}
	// (each entry of a squashed paste counts its line once)
	want := len(lines)
	for _, l := range lines {
		if len(l.Text) >= squashMinBytes && l.Stream == "" && int64(len(l.Text)) < l.Size {
			want += len(squashCuts(l.Text, nil))
		}
	}
	if nlines != want {
		t.Fatalf("records hold %d lines, input has %d (and entries of squashed pastes)", nlines, want)
	}
}

func TestJoinGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/join/*.log")
	if err != nil || len(files) == 0 {
		t.Fatalf("no inputs: %v", err)
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) {
			input, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			g := []goldenRecord{}
			// A fixed clock: it gives partial line times their year.
			clock := func() time.Time { return time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC) }
			for _, r := range joinAll(t, input, JoinOptions{Now: clock}) {
				var text []string
				for _, l := range strings.Split(r.Text, "\n") {
					text = append(text, goldenText(l))
				}
				g = append(g, goldenRecord{r.Offset, r.Size, r.Line, r.Lines, r.Stream, r.Time, text})
			}
			checkGolden(t, path, g)
		})
	}
}

// TestJoinCorpus runs over every real log in testdata/logs: the byte
// accounting must hold everywhere, and a few known shapes must join.
func TestJoinCorpus(t *testing.T) {
	root := "../testdata/logs"
	var files []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".log") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) < 40 {
		t.Fatalf("found %d logs under %s, want the real corpus", len(files), root)
	}
	want := map[string]func(t *testing.T, recs []Record){
		"nccl-runs/bad-ifname.log": func(t *testing.T, recs []Record) {
			tb := findRecord(t, recs, "Traceback (most recent call last):")
			if tb.Lines != 17 || !strings.HasSuffix(tb.Text, "Last error:\nBootstrap : no socket interface found") {
				t.Errorf("first traceback: %d lines, text %q", tb.Lines, tb.Text)
			}
			dump := findRecord(t, recs, "[W1129 20:00:53.323226801 TCPStore.cpp:138]")
			if dump.Lines != 25 || !strings.Contains(dump.Text, "\nframe #21: _start + 0x25") || strings.Contains(dump.Text, "Traceback") {
				t.Errorf("frame dump: %d lines", dump.Lines)
			}
			warn := findRecord(t, recs, "[2026-11-29 20:00:53] vm:691:691 [0] bootstrap.cc:114 NCCL WARN")
			if warn.Lines != 3 || !strings.HasSuffix(warn.Text, "init.cc:160 -> 5") {
				t.Errorf("NCCL WARN block: %d lines", warn.Lines)
			}
			tb2 := findRecord(t, recs, "Traceback (most recent call last):\n  File \"<string>\", line 9, in <module>\n  File \"/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/c10d_logger.py\", line 83, in wrapper\n    return func(*args, **kwargs)\n           ^^^^^^^^^^^^^^^^^^^^^\n  File \"/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/c10d_logger.py\", line 97, in wrapper\n    func_return = func(*args, **kwargs)\n                  ^^^^^^^^^^^^^^^^^^^^^\n  File \"/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py\", line 1838, in init_process_group\n    default_pg, _ = _new_process_group_helper(\n                    ^^^^^^^^^^^^^^^^^^^^^^^^^^\n  File \"/opt/torch/.venv/lib/python3.12/site-packages/torch/distributed/distributed_c10d.py\", line 2253, in _new_process_group_helper\n    eager_backend.eager_connect_single_device(device_id)\ntorch.distributed.DistBackendError: [1]")
			if !strings.Contains(tb2.Text, "frame #21") || !strings.Contains(tb2.Text, ". This may indicate a possible application crash") {
				t.Errorf("second traceback lacks its C++ frames or message tail")
			}
			if len(recs) != 10 {
				t.Errorf("%d records, want 10", len(recs))
			}
		},
		"nccl-runs/healthy.log": func(t *testing.T, recs []Record) {
			if len(recs) != 144 { // one record per line: nothing to join
				t.Errorf("%d records, want 144", len(recs))
			}
		},
		"real/18-cuda-oom-pp-stage-weights/vllm.log": func(t *testing.T, recs []Record) {
			if len(recs) != 1 || recs[0].Lines != 12 {
				t.Errorf("[rank0]: traceback: %d records", len(recs))
			}
		},
		"real/08-ray-version-mismatch-ray-and-python/driver.log": func(t *testing.T, recs []Record) {
			if len(recs) != 1 {
				t.Errorf("multi-line RuntimeError message: %d records, want 1", len(recs))
			}
		},
		"real/03-nccl-shm-docker-64mb-xgboost/nccl.log": func(t *testing.T, recs []Record) {
			if len(recs) != 5 {
				t.Errorf("%d records, want 5 (two WARN blocks with their -> traces)", len(recs))
			}
		},
		"real/34-gpu-not-visible-docker-no-gpus-flag/container.log": func(t *testing.T, recs []Record) {
			tb := findRecord(t, recs, "Traceback (most recent call last):")
			if tb.Lines != 12 {
				t.Errorf("traceback: %d lines, want 12", tb.Lines)
			}
		},
		"real/14-sglang-multinode-ipv6-store-timeout/store-timeouts.log": func(t *testing.T, recs []Record) {
			tb := findRecord(t, recs, "[2025-06-23 15:37:01 TP1] Scheduler hit an exception: Traceback")
			if tb.Lines != 7 || len(recs) != 5 {
				t.Errorf("traceback: %d lines, %d records", tb.Lines, len(recs))
			}
		},
	}
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) {
			input, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			recs := joinAll(t, input, JoinOptions{})
			if check := want[filepath.ToSlash(rel)]; check != nil {
				check(t, recs)
			}
		})
	}
}

func findRecord(t *testing.T, recs []Record, prefix string) Record {
	t.Helper()
	for _, r := range recs {
		if strings.HasPrefix(r.Text, prefix) {
			return r
		}
	}
	t.Fatalf("no record starts with %q", prefix)
	return Record{}
}

func plainLines(text string) []Line {
	var lines []Line
	var off int64
	for i, s := range strings.SplitAfter(text, "\n") {
		if s == "" {
			continue
		}
		lines = append(lines, Line{Offset: off, Size: int64(len(s)), Num: i + 1, Text: strings.TrimSuffix(s, "\n")})
		off += int64(len(s))
	}
	return lines
}

func TestJoinerRecordID(t *testing.T) {
	for _, o := range []Origin{{}, {Node: "n1", FileID: "64769:1234:0123456789abcdef"}, {Node: "a\x00b", FileID: "ü"}} {
		j := NewJoiner(o, JoinOptions{}, func(Record) {})
		for _, off := range []int64{0, 1, 1 << 40, -1} {
			if got, want := j.recordID(off), RecordID(o.Node, o.FileID, off); got != want {
				t.Errorf("recordID(%+v, %d) = %s, RecordID = %s", o, off, got, want)
			}
		}
	}
}

func TestJoinerFlushIdleAndPending(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var recs []Record
	j := NewJoiner(Origin{}, JoinOptions{Now: func() time.Time { return now }}, func(r Record) { recs = append(recs, r) })
	lines := plainLines("(A pid=1) Traceback (most recent call last):\n(B pid=2) hello\n(A pid=1)   File \"x\", line 1\n")
	j.Add(lines[0])
	now = now.Add(time.Second)
	j.Add(lines[1])
	if off, ok := j.PendingOffset(); !ok || off != 0 {
		t.Fatalf("PendingOffset = %d, %v", off, ok)
	}
	now = now.Add(time.Second)
	j.Add(lines[2]) // A's record goes on: its idle clock restarts
	now = now.Add(1500 * time.Millisecond)
	j.FlushIdle(2 * time.Second) // B idle 2.5 s, A 1.5 s
	if len(recs) != 1 || recs[0].Text != "(B pid=2) hello" {
		t.Fatalf("after FlushIdle: %+v", recs)
	}
	if off, ok := j.PendingOffset(); !ok || off != 0 {
		t.Fatalf("PendingOffset = %d, %v", off, ok)
	}
	now = now.Add(time.Second)
	j.FlushIdle(2 * time.Second)
	if len(recs) != 1 {
		// A's traceback has a frame and no exception line yet: more must come.
		t.Fatalf("a traceback waiting for its next line was flushed after 2.5 s quiet: %+v", recs)
	}
	now = now.Add(DefaultHoldOpen)
	j.FlushIdle(2 * time.Second)
	if len(recs) != 2 || recs[1].Lines != 2 {
		t.Fatalf("after HoldOpen: %+v", recs)
	}
	if _, ok := j.PendingOffset(); ok {
		t.Fatal("still pending")
	}
}

func TestJoinerCaps(t *testing.T) {
	var b strings.Builder
	b.WriteString("Traceback (most recent call last):\n")
	for i := 0; i < 25; i++ {
		fmt.Fprintf(&b, "  File \"f%d.py\", line %d, in g\n", i, i)
	}
	lines := plainLines(b.String())
	recs := joinLines(t, lines, int64(b.Len()), JoinOptions{MaxRecordLines: 10})
	if len(recs) != 3 || recs[0].Lines != 10 || recs[2].Lines != 6 {
		t.Fatalf("line cap: %d records", len(recs))
	}
	recs = joinLines(t, lines, int64(b.Len()), JoinOptions{MaxRecordBytes: 100})
	for _, r := range recs {
		if len(r.Text) > 100 {
			t.Fatalf("record of %d bytes", len(r.Text))
		}
	}
}

func TestJoinerBoundedPending(t *testing.T) {
	// Thousands of writers that each say one thing: the Joiner must not
	// hold them all until Flush.
	var b strings.Builder
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(&b, "host:1:%d [0] NCCL INFO thread %d\n", i, i)
	}
	var recs []Record
	j := NewJoiner(Origin{}, JoinOptions{}, func(r Record) { recs = append(recs, r) })
	for _, l := range plainLines(b.String()) {
		j.Add(l)
	}
	if n := j.pending.n; n > staleLines+2*sweepInterval {
		t.Fatalf("%d pending entries", n)
	}
	if len(recs) < 20000-staleLines-sweepInterval {
		t.Fatalf("only %d records emitted before Flush", len(recs))
	}
}

func TestJoinerContinuations(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []int // lines per record, in emission order
	}{
		{"indented paste", "a long line\n  wrapped by the reporter\nnext\n", []int{2, 1}},
		{"exception message lines", "ValueError: long\nsecond line of the message\nINFO 01-01 00:00:00 [a.py:1] x\n", []int{2, 1}},
		{"python warning", "/x.py:3: UserWarning: careful\n  warnings.warn(\nINFO 01-01 00:00:00 [a.py:1] x\n", []int{2, 1}},
		{"no join across prefixes", "(A pid=1) a\n(B pid=2)   b\n", []int{1, 1}},
		{"vllm header group", "INFO 01-01 00:00:00 [a.py:1] x\r\nINFO 01-01 00:00:00 [a.py:1] y\nINFO 01-01 00:00:00 [a.py:2] z\n", []int{2, 1}},
		{"old vllm header group", "INFO 01-01 00:00:00 a.py:1] x\nINFO 01-01 00:00:00 a.py:1] y\n", []int{2}},
		{"blank lines stay with the record", "a\n\n\nb\n", []int{3, 1}},
		{"leading blank", "\nINFO x\n", []int{1, 1}},
		{"exception then log", "Traceback (most recent call last):\n  File \"a\", line 1\nKeyError: 'x'\n[2025-06-23 15:07:01 TP6] next\n", []int{3, 1}},
		{"traceback then traceback", "Traceback (most recent call last):\n  File \"a\"\nE: 1\nTraceback (most recent call last):\n  File \"b\"\nE: 2\n", []int{3, 3}},
		{"nccl trace needs the warn", "h:1:1 [0] NCCL INFO x\nh:1:1 [0] NCCL INFO init.cc:1 -> 5\n", []int{1, 1}},
		{"frames alone", "Exception raised from f at a.cpp:1 (most recent call first):\nframe #0: x\nframe #1: y\nnext\n", []int{3, 1}},
		{"sglang traceback with the header on every line", "[2026-02-26 15:56:59] ERROR: Traceback (most recent call last):\n[2026-02-26 15:56:59] ERROR:   File \"a\", line 1\n[2026-02-26 15:56:59] ERROR: KeyError: 'x'\n[2026-02-26 15:56:59] ERROR: \n[2026-02-26 15:57:00] next\n", []int{4, 1}},
		{"sglang tagged header", "[2026-02-26 15:56:59 TP0] ERROR: Traceback (most recent call last):\n[2026-02-26 15:56:59 TP0] ERROR:   File \"a\", line 1\n[2026-02-26 15:56:59 TP1] ERROR: other rank\n", []int{2, 1}},
		{"sglang errors of two seconds", "[2026-02-26 15:56:59] ERROR: one\n[2026-02-26 15:57:00] ERROR: two\n", []int{1, 1}},
		{"sglang info lines of one second", "[2026-02-26 15:56:59] INFO:     Started server process [1]\n[2026-02-26 15:56:59] INFO:     Waiting for application startup.\n", []int{1, 1}},
		{"doubled prefix", "(W pid=5) (W pid=5) INFO 01-01 00:00:00 [a.py:1] x\n(W pid=5)   indented\n", []int{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := plainLines(tt.in)
			recs := joinLines(t, lines, int64(len(tt.in)), JoinOptions{})
			var got []int
			for _, r := range recs {
				got = append(got, r.Lines)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("records of %v lines, want %v", got, tt.want)
			}
		})
	}
}

// FuzzJoiner: whatever the input, every byte ends up in exactly one record.
func FuzzJoiner(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/join/*.log")
	for _, s := range seeds {
		b, _ := os.ReadFile(s)
		if len(b) > 8192 {
			b = b[:8192]
		}
		f.Add(b, uint8(0), uint8(0))
	}
	f.Add([]byte("Traceback (most recent call last):\n  File \"a\"\nE: x\n\nDuring handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\nE: y\n"), uint8(0), uint8(3))
	// A paste hard-wrapped at 100 columns (wrapped lines are joined back).
	f.Add([]byte("(raylet) "+strings.Repeat("Workers killed due to memory pres", 3)+"\nsure (OOM) at node\n"+strings.Repeat("x", 100)+"\ny \nz\n"), uint8(0), uint8(0))
	// Pastes: an indented wrap, tools' prefixes, a squashed paste.
	f.Add([]byte("(RayWorkerWrapper pid=1394) [E ProcessGroupNCCL.cpp:475] [Rank 3] Watchdog caught collective operation \n    timeout: WorkNCCL(SeqNum=4967570) ran for 1800542 \n    milliseconds.\n"), uint8(FormatPlain), uint8(0))
	f.Add([]byte("worker-1  | a\n[pod/w-0/main] 2026-04-08T22:41:07.123456789Z   File \"x\", line 3, in f\nworker-1 | 2026-04-08T22:41:07.123456789Z b\n"), uint8(0), uint8(0))
	f.Add([]byte("2024-04-01 10:49:31,995\tINFO a 2024-04-01 10:49:32,995\tINFO b (W pid=1) INFO 01-01 00:00:00 [a.py:1] c ERROR 01-01 00:00:00 [a.py:1] d Traceback (most recent call last):   File \"a\", line 1, in f     g()     ^^^ E: e "+strings.Repeat("x", 200)+"\n"), uint8(0), uint8(0))
	f.Add([]byte(`{"log":"a\n","stream":"stdout","time":"2024-01-01T00:00:00Z"}`+"\n  broken\n"+`{"log":"b\n","stream":"stdout","time":"2024-01-01T00:00:00Z"}`+"\n  broken\n"), uint8(FormatDockerJSON), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, format uint8, maxLines uint8) {
		lines, _, _ := readAllLines(t, data, ReaderOptions{Format: Format(format % 4)})
		// Feed in file order of the line's first byte, as a tailer would
		// see them complete (the Reader already does this).
		recs := joinLines(t, lines, int64(len(data)), JoinOptions{MaxRecordLines: int(maxLines), MaxRecordBytes: 4096})
		for _, r := range recs {
			if len(r.Text) > 4096 && r.Lines > 1 {
				t.Fatalf("record of %d bytes over the cap", len(r.Text))
			}
		}
	})
}

func BenchmarkJoiner(b *testing.B) {
	const n = 20000
	input := benchInput(b, FormatPlain, n)
	r := NewReader(bytes.NewReader(input), ReaderOptions{Format: FormatPlain, EOFIsEnd: true})
	var lines []Line
	for {
		l, err := r.Next()
		if err != nil {
			break
		}
		lines = append(lines, l)
	}
	b.ReportAllocs()
	b.ResetTimer()
	recs := 0
	for i := 0; i < b.N; i++ {
		j := NewJoiner(Origin{Node: "n", FileID: "1:2:x"}, JoinOptions{}, func(Record) { recs++ })
		for _, l := range lines {
			j.Add(l)
		}
		j.Flush()
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "lines/s")
}

// BenchmarkReadAndJoin is framing plus joining of a json-file, the whole
// per-line cost before source parsing.
func BenchmarkReadAndJoin(b *testing.B) {
	const n = 20000
	benchReadJoin(b, benchInput(b, FormatDockerJSON, n), n, false)
}

// TestJoinerStartsBounded: the offset-ordered list behind PendingOffset
// stays small whether or not PendingOffset is asked (shipper or offline).
func TestJoinerStartsBounded(t *testing.T) {
	for _, every := range []int{0, 1, 100} {
		j := NewJoiner(Origin{Node: "n", FileID: "f"}, JoinOptions{}, func(Record) {})
		var off int64
		for i := 0; i < 200000; i++ {
			text := fmt.Sprintf("(W%d pid=%d) line %d", i%50, i%50, i)
			j.Add(Line{Offset: off, Size: int64(len(text) + 1), Num: i + 1, Text: text})
			off += int64(len(text) + 1)
			if every > 0 && i%every == 0 {
				checkPendingOffset(t, j)
			}
		}
		if c := cap(j.starts); c > 20000 {
			t.Errorf("PendingOffset every %d lines: starts holds room for %d entries", every, c)
		}
	}
}

// A line hard-wrapped by a terminal or a paste is joined back onto the line
// it was cut from, without a newline; lines that start entries of their own
// never are.
func TestJoinWrappedLines(t *testing.T) {
	long := "(raylet) node_manager.cc:3007: 2 Workers (tasks / actors) killed due to memory pres"
	tests := []struct {
		name  string
		input string
		want  []string // record texts
	}{
		{"cut mid-word", long + "\nsure (OOM), 0 Workers crashed\n",
			[]string{long + "sure (OOM), 0 Workers crashed"}},
		{"cut after a space", "INFO 01-01 10:00:00 [a.py:1] Watchdog caught collective operation timeout while waiting \ntimeout: WorkNCCL(SeqNum=1)\n",
			[]string{"INFO 01-01 10:00:00 [a.py:1] Watchdog caught collective operation timeout while waiting timeout: WorkNCCL(SeqNum=1)"}},
		{"the learned width joins later cuts", strings.Repeat("a", 99) + "b\nc" + strings.Repeat("d", 98) + ".\n-e.\n",
			[]string{strings.Repeat("a", 99) + "bc" + strings.Repeat("d", 98) + ".-e."}},
		{"short lines are not wrapped", "INFO 01-01 10:00:00 [a.py:1] short\nplain text\n",
			[]string{"INFO 01-01 10:00:00 [a.py:1] short", "plain text"}},
		{"a host prefix starts a line", strings.Repeat("x", 90) + "r\ntrainer-2: File x\n",
			[]string{strings.Repeat("x", 90) + "r", "trainer-2: File x"}},
		{"an NCCL line starts a line", strings.Repeat("x", 90) + "e\n7635c25c81cd:41585:41836 [0] NCCL INFO include/shm.h:41 -> 2\n",
			[]string{strings.Repeat("x", 90) + "e", "7635c25c81cd:41585:41836 [0] NCCL INFO include/shm.h:41 -> 2"}},
		{"an exception starts a line", strings.Repeat("x", 90) + "9\nRuntimeError: boom\n",
			[]string{strings.Repeat("x", 90) + "9", "RuntimeError: boom"}},
		{"a digit starts a line (tqdm)", strings.Repeat("x", 90) + "9\n100%|##| 2/2\n",
			[]string{strings.Repeat("x", 90) + "9", "100%|##| 2/2"}},
		{"binary is not wrapped text", "\xff" + strings.Repeat("x", 90) + "\nafter binary\n",
			[]string{"\uFFFD" + strings.Repeat("x", 90), "after binary"}},
		{"no terminal is 600 columns wide", strings.Repeat("x", 600) + "\nafter\n",
			[]string{strings.Repeat("x", 600), "after"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			recs := joinAll(t, []byte(tt.input), JoinOptions{})
			var got []string
			for _, r := range recs {
				got = append(got, r.Text)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") {
				t.Errorf("records\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

// tqdm and other plain lines that follow a long log line start with a capital
// and are lines of their own, not the wrapped rest of it.
func TestJoinDoesNotWrapCapitalisedLines(t *testing.T) {
	long := `(APIServer pid=329) INFO:     10.1.31.241:47236 - "POST /v1/responses HTTP/1.1" 200 OK`
	recs := joinAll(t, []byte(long+"\nCapturing CUDA graphs (mixed prefill-decode, PIECEWISE): 61%|███████   | 40/67\n"), JoinOptions{})
	if len(recs) != 2 {
		t.Fatalf("got %d records: %+v", len(recs), recs)
	}
}

// An NCCL line of a host named by a Docker container ID (digits first)
// starts an entry: it does not continue an exception message.
func TestNCCLLineOfNumericHostStartsEntry(t *testing.T) {
	recs := joinAll(t, []byte("RuntimeError: NCCL error in: init.cc:1, unhandled system error\n7635c25c81cd:41585:41836 [0] NCCL INFO include/shm.h:41 -> 2\n"), JoinOptions{})
	if len(recs) != 2 {
		t.Fatalf("got %d records: %+v", len(recs), recs)
	}
}

// A broken json-file or CRI line is a record of its own, whatever follows
// it: broken lines have no stream, and one 50 lines after another (an
// indented one, say) continued it as one writer's record. Each is reported
// with its line.
func TestBrokenLinesAreRecordsOfTheirOwn(t *testing.T) {
	for _, tc := range []struct {
		name, broken string
		good         func(i int) string
	}{
		{"json-file", "  {\"log\":\"cut off by a full disk", func(i int) string {
			return fmt.Sprintf(`{"log":"line %d\n","stream":"stdout","time":"2024-01-01T00:00:%02dZ"}`, i, i%60)
		}},
		{"CRI", "  not a CRI line", func(i int) string {
			return fmt.Sprintf("2024-01-01T00:00:%02dZ stdout F line %d", i%60, i)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			for i := 1; i <= 100; i++ {
				if i == 10 || i == 60 || i == 61 {
					b.WriteString(tc.broken + "\n")
					continue
				}
				b.WriteString(tc.good(i) + "\n")
			}
			lines, warns, _ := readAllLines(t, []byte(b.String()), ReaderOptions{})
			recs := joinLines(t, lines, int64(b.Len()), JoinOptions{})
			var broken []Record
			for _, r := range recs {
				if strings.Contains(r.Text, strings.TrimSpace(tc.broken)) {
					broken = append(broken, r)
				}
			}
			if len(broken) != 3 || broken[0].Line != 10 || broken[1].Line != 60 || broken[2].Line != 61 {
				t.Fatalf("broken lines became %d records: %+v", len(broken), broken)
			}
			for _, r := range broken {
				if r.Lines != 1 || r.Text != tc.broken {
					t.Errorf("record %+v: want the broken line alone", r)
				}
			}
			if len(warns) != 3 || !strings.Contains(warns[0].Error(), "line 10 ") || !strings.Contains(warns[2].Error(), "line 61 ") {
				t.Errorf("warnings %v: want one naming each broken line", warns)
			}
		})
	}
}
