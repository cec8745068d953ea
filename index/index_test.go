package index

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	bindex "github.com/blevesearch/bleve_index_api"
	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
)

var t0 = time.Date(2026, 3, 14, 9, 26, 0, 0, time.UTC)

// ev builds an event the way the parsers would, with a record ID derived
// from node, file and offset.
func ev(node, file string, line int, sec int, source, level, msg string) *parsers.Event {
	off := int64(line * 100)
	return &parsers.Event{
		Record: parsers.Record{
			ID: parsers.RecordID(node, file, off), Cluster: "spark", Node: node, Container: "vllm",
			File: file, FileID: file, Offset: off, Line: line, Text: msg,
		},
		Time: t0.Add(time.Duration(sec) * time.Second), Source: source, Level: level, Message: msg,
	}
}

// seedEvents resemble the seed scenario: two DGX Spark nodes, the head
// registered under its management IP, vLLM asking for node:192.168.200.12.
func seedEvents() []*parsers.Event {
	evs := []*parsers.Event{
		ev("spark-1", "ray.log", 1, 0, parsers.SourceRay, parsers.LevelInfo, "Starting Ray head at 10.1.230.180:6379"),
		ev("spark-1", "ray.log", 2, 1, parsers.SourceRay, parsers.LevelInfo, "VLLM_HOST_IP=192.168.200.12 set for this node"),
		ev("spark-1", "ray.log", 3, 5, parsers.SourceVLLM, parsers.LevelError,
			"Error: No available node types can fulfill resource request {'node:192.168.200.12': 0.001, 'GPU': 1.0}. Add suitable node types to this cluster to resolve this issue."),
		ev("spark-1", "ray.log", 4, 6, parsers.SourcePython, parsers.LevelError,
			"ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task."),
		ev("spark-1", "ray.log", 5, 7, parsers.SourceVLLM, parsers.LevelWarning,
			"ray_utils.py:212 Waiting for creating a placement group of specs for 10 seconds."),
		ev("spark-1", "ray.log", 6, 8, parsers.SourceOther, parsers.LevelInfo, "<script>alert(1)</script>"),
		ev("spark-2", "worker.log", 1, 2, parsers.SourceRay, parsers.LevelInfo, "Connecting to GCS at 192.168.200.12:6379"),
		ev("spark-2", "worker.log", 2, 3, parsers.SourceNCCL, parsers.LevelInfo,
			"NCCL INFO NET/Socket : Using [0]enp1s0f0np0:192.168.200.13<0>"),
		ev("spark-2", "worker.log", 3, 4, parsers.SourceNCCL, parsers.LevelWarning,
			"NCCL WARN Bootstrap : no socket interface found, NCCL_SOCKET_IFNAME=enp1s0f0np0"),
		ev("spark-2", "worker.log", 4, 9, parsers.SourceRay, parsers.LevelInfo, "the node 192.168.200.120 joined"),
	}
	evs[1].PID, evs[1].Process = 4242, "RayWorkerWrapper"
	evs[1].IP = "192.168.200.12"
	evs[7].Fields = map[string]string{"rank": "1", "interface": "enp1s0f0np0"}
	return evs
}

func openTest(t testing.TB, opts Options) *Index {
	t.Helper()
	x, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// reopenReadOnly closes x, which must persist everything, and opens its
// directory again read-only, closed at the end of the test.
func reopenReadOnly(t testing.TB, x *Index, dir string) *Index {
	t.Helper()
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	x, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

func addAll(t testing.TB, x *Index, evs []*parsers.Event) {
	t.Helper()
	for _, e := range evs {
		if err := x.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func lines(hs []Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, fmt.Sprintf("%s:%d", h.Node, h.Line))
	}
	slices.Sort(out)
	return out
}

// TestMappingTokens is the acceptance test of the mapping: every kind of
// log token is found by a query as a user types it, and the near misses
// that Bleve's defaults produce are gone.
func TestMappingTokens(t *testing.T) {
	x := openTest(t, Options{Shards: 3})
	addAll(t, x, seedEvents())
	cases := []struct {
		q    string
		want []string
	}{
		// An IP as written: the exact address only, not .120 or .13,
		// plus the event whose Ray prefix carries it (ip field).
		{"192.168.200.12", []string{"spark-1:2", "spark-1:3", "spark-2:1"}},
		// A prefix of an IP by its parts.
		{"192.168", []string{"spark-1:2", "spark-1:3", "spark-2:1", "spark-2:2", "spark-2:4"}},
		{"192.168.200.*", []string{"spark-1:2", "spark-1:3", "spark-2:1", "spark-2:2", "spark-2:4"}},
		// node:<ip> is text, not the node field.
		{"node:192.168.200.12", []string{"spark-1:3"}},
		{"'node:192.168.200.12'", []string{"spark-1:3"}},
		// A file name and its stem.
		{"ray_utils.py", []string{"spark-1:5"}},
		{"ray_utils", []string{"spark-1:5"}},
		{"ray_utils.py:212", []string{"spark-1:5"}},
		// An NCCL interface, alone and inside name=value.
		{"enp1s0f0np0", []string{"spark-2:2", "spark-2:3"}},
		{"NCCL_SOCKET_IFNAME=enp1s0f0np0", []string{"spark-2:3"}},
		{"NCCL_SOCKET_IFNAME", []string{"spark-2:3"}},
		// The class name inside a dotted exception path, in any case.
		{"RayActorError", []string{"spark-1:4"}},
		{"rayactorerror", []string{"spark-1:4"}},
		{"ray.exceptions.RayActorError", []string{"spark-1:4"}},
		{"exceptions.RayActorError", []string{"spark-1:4"}},
		// Stop words are kept.
		{`"to this cluster"`, []string{"spark-1:3"}},
		{"the", []string{"spark-1:4", "spark-2:4"}},
		// AND by default, OR, NOT.
		{"placement group", []string{"spark-1:5"}},
		{"192.168.200.12 -GCS", []string{"spark-1:2", "spark-1:3"}},
		{"RayActorError OR enp1s0f0np0", []string{"spark-1:4", "spark-2:2", "spark-2:3"}},
		// Field filters.
		{"node:spark-2 192.168.200.12", []string{"spark-2:1"}},
		{"level:ERROR", []string{"spark-1:3", "spark-1:4"}},
		{"source:nccl level:warning", []string{"spark-2:3"}},
		{"pid:4242", []string{"spark-1:2"}},
		{"process:RayWorkerWrapper", []string{"spark-1:2"}},
		{"rank:>=1", []string{"spark-2:2"}},
		{"node:spark-2 line:<=2", []string{"spark-2:1", "spark-2:2"}},
		{"node:spark-2 line:3", []string{"spark-2:3"}},
		{"fields:interface=enp1s0f0np0", []string{"spark-2:2"}},
		{"ip:192.168.200.12", []string{"spark-1:2"}},
		{"time:>=2026-03-14T09:26:08Z", []string{"spark-1:6", "spark-2:4"}},
		// A quoted field expression is text.
		{`"level:error"`, nil},
		{"<script>", []string{"spark-1:6"}},
		{"", []string{"spark-1:1", "spark-1:2", "spark-1:3", "spark-1:4", "spark-1:5", "spark-1:6",
			"spark-2:1", "spark-2:2", "spark-2:3", "spark-2:4"}},
	}
	for _, c := range cases {
		res, err := x.Search(context.Background(), Query{Text: c.q, Size: 100})
		if err != nil {
			t.Errorf("%q: %v", c.q, err)
			continue
		}
		if got := lines(res.Hits); !slices.Equal(got, c.want) {
			t.Errorf("search %q = %v, want %v", c.q, got, c.want)
		}
	}
}

func TestHighlightsMarkTheMatch(t *testing.T) {
	x := openTest(t, Options{Shards: 2})
	addAll(t, x, seedEvents())
	for _, c := range []struct{ q, want string }{
		{"RayActorError", "RayActorError"},
		{"192.168.200.12", "192.168.200.12"},
		{"ray_utils.py", "ray_utils.py"},
		{"enp1s0f0np0", "enp1s0f0np0"},
	} {
		res, err := x.Search(context.Background(), Query{Text: c.q, Highlight: true, Size: 10})
		if err != nil || len(res.Hits) == 0 {
			t.Fatalf("%q: %v hits, err %v", c.q, len(res.Hits), err)
		}
		for _, h := range res.Hits {
			if h.IP != "" && !strings.Contains(h.Message, c.want) {
				continue // matched by the ip field only
			}
			if len(h.Highlights) == 0 {
				t.Errorf("%q: no highlights on %q", c.q, h.Message)
				continue
			}
			var marked []string
			for _, r := range h.Highlights {
				marked = append(marked, h.Message[r[0]:r[1]])
			}
			if !slices.Contains(marked, c.want) && !strings.Contains(strings.Join(marked, ""), strings.ReplaceAll(c.want, ".", "")) {
				t.Errorf("%q: marked %q in %q", c.q, marked, h.Message)
			}
		}
	}
}

func TestReindexDoesNotDuplicate(t *testing.T) {
	dir := t.TempDir()
	x, err := Open(dir, Options{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, x, seedEvents())
	addAll(t, x, seedEvents())
	if err := x.PutFindings([]finding.Finding{{ID: "f1", Title: "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	// Reopen with another shard option: the stored count must win, or IDs
	// would land in other shards and duplicate.
	x, err = Open(dir, Options{Shards: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	addAll(t, x, seedEvents())
	if err := x.PutFindings([]finding.Finding{{ID: "f1", Title: "b"}, {ID: "f2"}}); err != nil {
		t.Fatal(err)
	}
	n, err := x.DocCount()
	if err != nil {
		t.Fatal(err)
	}
	if n != uint64(len(seedEvents())) {
		t.Errorf("doc count %d after indexing the same events 3 times, want %d", n, len(seedEvents()))
	}
	if st := x.Stats(); st.Shards != 2 {
		t.Errorf("shards %d, want the 2 it was created with", st.Shards)
	}
	fs := x.Findings()
	if len(fs) != 2 || fs[0].Title != "b" && fs[1].Title != "b" {
		t.Errorf("findings after upsert: %+v", fs)
	}
}

func TestSearchFiltersFacetsHistogram(t *testing.T) {
	x := openTest(t, Options{Shards: 2})
	addAll(t, x, seedEvents())
	ctx := context.Background()
	res, err := x.Search(ctx, Query{Text: "192.168.200.12", Facets: true, Histogram: 10})
	if err != nil {
		t.Fatal(err)
	}
	nodes := res.Facets[FieldNode]
	if len(nodes) != 2 {
		t.Fatalf("node facet %v, want both nodes", nodes)
	}
	var sum int
	for _, b := range res.Histogram {
		sum += b.Count
	}
	if sum != int(res.Total) || len(res.Histogram) == 0 {
		t.Errorf("histogram %v sums to %d, want %d", res.Histogram, sum, res.Total)
	}
	// Newest first by default.
	if !slices.IsSortedFunc(res.Hits, func(a, b Hit) int { return b.Time.Compare(a.Time) }) {
		t.Errorf("hits not newest first: %v", lines(res.Hits))
	}
	res, err = x.Search(ctx, Query{Text: "192.168.200.12", Nodes: []string{"spark-2"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := lines(res.Hits); !slices.Equal(got, []string{"spark-2:1"}) {
		t.Errorf("node filter: %v", got)
	}
	res, err = x.Search(ctx, Query{Since: t0.Add(5 * time.Second), Until: t0.Add(7 * time.Second), Sort: "time"})
	if err != nil {
		t.Fatal(err)
	}
	if got := lines(res.Hits); !slices.Equal(got, []string{"spark-1:3", "spark-1:4"}) {
		t.Errorf("time range [5s,7s): %v", got)
	}
	res, err = x.Search(ctx, Query{Levels: []string{"ERROR"}, Sources: []string{"python"}})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Line != 4 {
		t.Errorf("level+source filter: %v %v", lines(res.Hits), err)
	}
	// Paging.
	p1, _ := x.Search(ctx, Query{Size: 3, Sort: "time"})
	p2, _ := x.Search(ctx, Query{Size: 3, From: 3, Sort: "time"})
	if len(p1.Hits) != 3 || len(p2.Hits) != 3 || p1.Hits[2].Time.After(p2.Hits[0].Time) || p1.Total != 10 {
		t.Errorf("paging: %v / %v", lines(p1.Hits), lines(p2.Hits))
	}
}

func TestHitFields(t *testing.T) {
	x := openTest(t, Options{})
	evs := seedEvents()
	addAll(t, x, evs)
	h, ok, err := x.Get(context.Background(), evs[7].ID)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	want := evs[7]
	if h.Node != want.Node || h.File != want.File || h.Line != want.Line || !h.Time.Equal(want.Time) ||
		h.Message != want.Message || h.Source != want.Source || h.Level != want.Level || h.Offset != want.Offset ||
		h.Rank == nil || *h.Rank != 1 || h.Fields["interface"] != "enp1s0f0np0" || h.Container != "vllm" {
		t.Errorf("hit %+v\nwant event %+v", h, want)
	}
}

func TestContext(t *testing.T) {
	x := openTest(t, Options{Shards: 3})
	evs := seedEvents()
	addAll(t, x, evs)
	c, err := x.Context(context.Background(), evs[3].ID, 2) // spark-1 ray.log line 4
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	for _, h := range c.Before {
		got = append(got, h.Line)
	}
	got = append(got, -c.Hit.Line)
	for _, h := range c.After {
		got = append(got, h.Line)
	}
	if !slices.Equal(got, []int{2, 3, -4, 5, 6}) {
		t.Errorf("context lines %v, want 2 3 [4] 5 6 from the same file", got)
	}
	if _, err := x.Context(context.Background(), "nope", 2); err == nil {
		t.Error("context of an unknown ID: no error")
	}
}

func TestParseQueryErrors(t *testing.T) {
	for _, q := range []string{"pid:abc", "time:>yesterday-ish", "pid:>100"} {
		if _, err := ParseQuery(q); err == nil {
			t.Errorf("ParseQuery(%q): no error", q)
		}
	}
}

func TestFlushByTime(t *testing.T) {
	x := openTest(t, Options{Shards: 2, BatchSize: 1000, FlushInterval: 50 * time.Millisecond})
	for _, e := range seedEvents() {
		if err := x.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, _ := x.DocCount()
		if n == uint64(len(seedEvents())) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d docs searchable 5s after Add without Flush", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestLogTokenizer(t *testing.T) {
	var got []string
	for _, tok := range (logTokenizer{}).Tokenize([]byte(`{'node:192.168.200.12': 0.001} failed.`)) {
		got = append(got, fmt.Sprintf("%s@%d", tok.Term, tok.Position))
	}
	want := []string{"node:192.168.200.12@1", "192.168.200.12@2", "node@1", "192@2", "168@3", "200@4", "12@5",
		"0.001@6", "0@6", "001@7", "failed@8"}
	if !slices.Equal(got, want) {
		t.Errorf("tokens\n got %v\nwant %v", got, want)
	}
}

// TestCloseIsDurable: with unsafe batches, scorch's Close alone drops what
// the persister has not written yet.
func TestCloseIsDurable(t *testing.T) {
	dir := t.TempDir()
	x, err := Open(dir, Options{Shards: 2, BatchSize: 500})
	if err != nil {
		t.Fatal(err)
	}
	const n = 5000
	genEvents(3, n, nil, func(e *parsers.Event) {
		if err := x.Add(e); err != nil {
			t.Fatal(err)
		}
	})
	x = reopenReadOnly(t, x, dir)
	if c, err := x.DocCount(); err != nil || c != n {
		t.Errorf("after reopen: %d docs (err %v), want %d", c, err, n)
	}
}

func TestBounds(t *testing.T) {
	dir := t.TempDir()
	x, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, x, seedEvents())
	want := [2]time.Time{t0, t0.Add(9 * time.Second)}
	lo, hi, err := x.Bounds(context.Background())
	if err != nil || !lo.Equal(want[0]) || !hi.Equal(want[1]) {
		t.Errorf("bounds while writing: %v %v %v", lo, hi, err)
	}
	x = reopenReadOnly(t, x, dir)
	lo, hi, err = x.Bounds(context.Background())
	if err != nil || !lo.Equal(want[0]) || !hi.Equal(want[1]) {
		t.Errorf("bounds after reopening: %v %v %v", lo, hi, err)
	}
}

// TestCharClasses: the ASCII table of the tokenizer agrees with decoding
// runes, on every position of mixed text with invalid UTF-8.
func TestCharClasses(t *testing.T) {
	s := []byte("a Z_0.9:=/@ \t\n\"'`()[]{}<>,;|!?*&^~$\\-+%#Ümlaut ß İstanbul 日本語 \xff\xc3 \u00a0\u2003x")
	for i := range s {
		r, w := utf8.DecodeRune(s[i:])
		if c, cw := classAt(s, i); c != runeClass(r) || cw != w {
			t.Errorf("classAt %q: %d/%d, want %d/%d", s[i:], c, cw, runeClass(r), w)
		}
		r, w = utf8.DecodeLastRune(s[:i+1])
		if c, cw := classBefore(s[:i+1]); c != runeClass(r) || cw != w {
			t.Errorf("classBefore %q: %d/%d, want %d/%d", s[:i+1], c, cw, runeClass(r), w)
		}
	}
}

// TestOpenRefusesOldVersion: an index of another layout is not searched
// wrongly; the error says what to do.
func TestOpenRefusesOldVersion(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "index"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index", "meta.json"), []byte(`{"shards": 2, "version": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{false, true} {
		if _, err := Open(dir, Options{ReadOnly: ro}); err == nil || !strings.Contains(err.Error(), "re-ingest") {
			t.Errorf("read-only %v: open of a version 1 index: %v, want an error saying re-ingest", ro, err)
		}
	}
}

// TestMigratesVersion3: an index of version 3 (each event a Bleve
// document whose stored field "event" is its blob) is migrated when a
// writer opens it, saying so, and then finds what it held; a reader is
// refused with a message naming the way.
func TestMigratesVersion3(t *testing.T) {
	dir := t.TempDir()
	evs := seedEvents()
	for i := range 300 {
		evs = append(evs, ev("spark-3", "old.log", i+1, i, parsers.SourceVLLM, parsers.LevelInfo, fmt.Sprintf("old event %d", i)))
	}
	for sh := range 2 {
		path := filepath.Join(dir, "index", fmt.Sprintf("shard-%02d", sh))
		bl, err := bleve.NewUsing(path, bleve.NewIndexMapping(), bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, nil)
		if err != nil {
			t.Fatal(err)
		}
		b := bl.NewBatch()
		for i, e := range evs {
			if i%2 != sh {
				continue
			}
			h := HitFromEvent(e)
			doc := document.NewDocument(e.ID)
			doc.AddField(document.NewTextFieldWithIndexingOptions("event", nil, encodeHit(nil, &h), bindex.StoreField))
			if err := b.IndexAdvanced(doc); err != nil {
				t.Fatal(err)
			}
		}
		if err := bl.Batch(b); err != nil {
			t.Fatal(err)
		}
		if err := bl.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "index", "meta.json"), []byte(`{"shards": 2, "version": 3}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "migrates it") {
		t.Errorf("read-only open of a version 3 index: %v, want an error saying how it migrates", err)
	}
	var logs testutil.Buffer
	x, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if !strings.Contains(logs.String(), "migrating") || !strings.Contains(logs.String(), "migrated") {
		t.Errorf("migration not logged: %s", logs.String())
	}
	if n, _ := x.DocCount(); n != uint64(len(evs)) {
		t.Errorf("%d events after the migration, want %d", n, len(evs))
	}
	res, err := x.Search(context.Background(), Query{Text: "node:192.168.200.12", Size: 10})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Message != evs[2].Message {
		t.Errorf("search after the migration: %+v %v", res.Hits, err)
	}
	h, ok, err := x.Get(context.Background(), evs[7].ID)
	if err != nil || !ok || h.Fields["interface"] != "enp1s0f0np0" || h.Line != evs[7].Line {
		t.Errorf("get after the migration: %+v %v %v", h, ok, err)
	}
	for _, old := range []string{"index.v3", "index.migrating"} {
		if _, err := os.Stat(filepath.Join(dir, old)); err == nil {
			t.Errorf("%s left behind", old)
		}
	}
}

// TestBleveRebuiltFromTheChunkStore: the chunk store is what holds the
// records; a shard whose Bleve index lost batches (a crash before they
// were persisted: here, all of them) is indexed again from it at the next
// open, and finds everything by its terms again.
func TestBleveRebuiltFromTheChunkStore(t *testing.T) {
	dir := t.TempDir()
	x, err := Open(dir, Options{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	var evs []*parsers.Event
	genEvents(21, 5000, nil, func(e *parsers.Event) { evs = append(evs, e) })
	addAll(t, x, evs)
	want, err := x.Search(context.Background(), Query{Text: "RayActorError OR enp1s0f0np0", Size: -1, Facets: true})
	if err != nil || want.Total == 0 {
		t.Fatalf("%+v %v", want, err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "index", "shard-01", "bleve")); err != nil {
		t.Fatal(err)
	}
	var logs testutil.Buffer
	x, err = Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if !strings.Contains(logs.String(), "indexing again") {
		t.Errorf("no word of the blocks indexed again: %s", logs.String())
	}
	got, err := x.Search(context.Background(), Query{Text: "RayActorError OR enp1s0f0np0", Size: -1, Facets: true})
	if err != nil || got.Total != want.Total || !slices.Equal(got.Facets[FieldNode], want.Facets[FieldNode]) {
		t.Errorf("after the rebuild: %d hits %v, want %d %v (err %v)", got.Total, got.Facets[FieldNode], want.Total, want.Facets[FieldNode], err)
	}
}

// TestMigratesVersion4: an index of version 4 (a Bleve document per block;
// testdata/v4 holds its chunk stores) is migrated when a writer opens it,
// saying so: it finds what it held, a record replaced in it once.
func TestMigratesVersion4(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/v4")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "README.md"))
	if _, err := Open(dir, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "migrates it") {
		t.Errorf("read-only open of a version 4 index: %v, want an error saying how it migrates", err)
	}
	var logs testutil.Buffer
	x, err := Open(dir, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if !strings.Contains(logs.String(), "version 4); migrating it to version 5") || !strings.Contains(logs.String(), "migrated") {
		t.Errorf("migration not logged: %s", logs.String())
	}
	evs := seedEvents()
	if n, _ := x.DocCount(); n != uint64(len(evs)+300) {
		t.Errorf("%d events after the migration, want %d", n, len(evs)+300)
	}
	res, err := x.Search(context.Background(), Query{Text: "node:192.168.200.12", Size: 10})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Message != evs[2].Message {
		t.Errorf("search after the migration: %+v %v", res.Hits, err)
	}
	res, err = x.Search(context.Background(), Query{Text: `"old event 5"`, Size: 10})
	if err != nil || len(res.Hits) != 1 || res.Hits[0].Message != "old event 5, parsed anew" {
		t.Errorf("the replaced record after the migration: %+v %v", res.Hits, err)
	}
	h, ok, err := x.Get(context.Background(), evs[7].ID)
	if err != nil || !ok || h.Fields["interface"] != "enp1s0f0np0" || h.Line != evs[7].Line {
		t.Errorf("get after the migration: %+v %v %v", h, ok, err)
	}
	for _, old := range []string{"index.v4", "index.migrating"} {
		if _, err := os.Stat(filepath.Join(dir, old)); err == nil {
			t.Errorf("%s left behind", old)
		}
	}
}

// TestStoreLosesAWrite: a write whose frames reached the store only in
// part (its blocks without all their groups' term tables, or a block cut
// short) is cut off at the next open, and the Bleve documents Bleve kept
// of it (it synced, the store's page cache was lost) are deleted: what
// is searched is the writes before it, then what is indexed again.
func TestStoreLosesAWrite(t *testing.T) {
	var first, second []*parsers.Event
	genEvents(31, 12000, nil, func(e *parsers.Event) {
		if len(first) < 2000 {
			first = append(first, e)
		} else {
			second = append(second, e)
		}
	})
	const q = "RayActorError OR enp1s0f0np0 OR throughput"
	fresh, err := Open(t.TempDir(), Options{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, fresh, first)
	want1, err := fresh.Search(context.Background(), Query{Text: q, Size: -1, Facets: true})
	if err != nil {
		t.Fatal(err)
	}
	addAll(t, fresh, second)
	want, err := fresh.Search(context.Background(), Query{Text: q, Size: -1, Facets: true})
	fresh.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		cut  func(size1, size2 int64) int64
	}{
		{"a block frame cut short", func(size1, _ int64) int64 { return size1 + 100 }},
		{"the last table cut short", func(_, size2 int64) int64 { return size2 - 10 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			store := filepath.Join(dir, "index", "shard-00", storeFile)
			size := func() int64 {
				fi, err := os.Stat(store)
				if err != nil {
					t.Fatal(err)
				}
				return fi.Size()
			}
			x, err := Open(dir, Options{Shards: 1})
			if err != nil {
				t.Fatal(err)
			}
			addAll(t, x, first)
			x.Close()
			size1 := size()
			if x, err = Open(dir, Options{}); err != nil {
				t.Fatal(err)
			}
			addAll(t, x, second) // one write: its 10,000 records in 3 groups
			x.Close()
			if err := os.Truncate(store, tc.cut(size1, size())); err != nil {
				t.Fatal(err)
			}
			if x, err = Open(dir, Options{}); err != nil {
				t.Fatal(err)
			}
			defer func() { x.Close() }()
			if n, _ := x.DocCount(); n != uint64(len(first)) {
				t.Errorf("%d records after the cut, want the first write's %d", n, len(first))
			}
			got, err := x.Search(context.Background(), Query{Text: q, Size: -1, Facets: true})
			if err != nil || got.Total != want1.Total {
				t.Errorf("after the cut: %d hits (err %v), want %d", got.Total, err, want1.Total)
			}
			s := x.shards[0]
			v, err := s.view()
			if err != nil {
				t.Fatal(err)
			}
			for _, sv := range v.segs {
				for num, seq := range sv.seqs {
					if seq > uint64(len(v.blocks)) && (sv.del == nil || !sv.del.Contains(uint32(num))) {
						t.Errorf("Bleve kept the document of block %d, beyond the store's %d", seq, len(v.blocks))
					}
				}
			}
			v.close()
			addAll(t, x, second)
			got, err = x.Search(context.Background(), Query{Text: q, Size: -1, Facets: true})
			if err != nil || got.Total != want.Total || !slices.Equal(got.Facets[FieldNode], want.Facets[FieldNode]) {
				t.Errorf("indexed again: %d hits %v (err %v), want %d %v", got.Total, got.Facets[FieldNode], err, want.Total, want.Facets[FieldNode])
			}
		})
	}
}

// TestMigratesVersion4Pruned: what a version 4 index's pruned.json says
// was dropped stays dropped after the migration.
func TestMigratesVersion4Pruned(t *testing.T) {
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/v4")); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "README.md"))
	c, err := newCodec()
	if err != nil {
		t.Fatal(err)
	}
	dead, err := deadV4(filepath.Join(dir, "index"), 2)
	if err != nil {
		t.Fatal(err)
	}
	shard0 := 0
	if err := readV4Shard(filepath.Join(dir, "index", "shard-00"), 0, c, dead, pruned{}, func(Hit, string) error {
		shard0++
		return nil
	}); err != nil || shard0 == 0 {
		t.Fatalf("shard 0 of the fixture: %d records, %v", shard0, err)
	}
	// Every block of shard 0 dropped by PruneTo.
	if err := os.WriteFile(filepath.Join(dir, "index", prunedFile), []byte(`{"partitions": {}, "keep": [0, 0], "upto": [1000, 0]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if n, _ := x.DocCount(); n != uint64(len(seedEvents())+300-shard0) {
		t.Errorf("%d events after the migration, want %d (shard 0's %d pruned)", n, len(seedEvents())+300-shard0, shard0)
	}
}
