package fanout

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/web"
)

var t0 = time.Date(2026, 3, 14, 9, 26, 0, 0, time.UTC)

const token = "peer-secret"

// events are one launch of six nodes in three clusters; the cluster is the
// partition (1-3), as serve's partitioned stream makes it. Ten events a
// second per node tie their times within and across nodes; the clusters'
// spans overlap but differ (so do the members' histogram ranges); some
// events have no time.
func events() []*parsers.Event {
	var evs []*parsers.Event
	levels := []string{parsers.LevelInfo, parsers.LevelInfo, parsers.LevelWarning, parsers.LevelError}
	sources := []string{parsers.SourceVLLM, parsers.SourceRay, parsers.SourceNCCL}
	for n := range 6 {
		node := fmt.Sprintf("spark-%d", n+1)
		for i := range 150 {
			file := []string{"vllm.log", "nccl.log"}[i%2]
			off := int64(i * 100)
			msg := fmt.Sprintf("engine step %d", i)
			if i%4 == 3 {
				msg += " error timeout"
			}
			e := &parsers.Event{
				Record: parsers.Record{ID: parsers.RecordID(node, file, off), Cluster: fmt.Sprintf("c%d", n/2+1), Node: node,
					Container: "vllm", File: file, FileID: file, Offset: off, Line: i + 1, Text: msg},
				Time: t0.Add(time.Duration(n/2*7+i/10) * time.Second), Source: sources[i%3], Level: levels[i%4], Message: msg,
				Partition: n/2 + 1,
			}
			if i%13 == 0 {
				e.Time = time.Time{}
			}
			evs = append(evs, e)
		}
	}
	return evs
}

func openIndex(t testing.TB, evs []*parsers.Event) *index.Index {
	t.Helper()
	x, err := index.Open(t.TempDir(), index.Options{Shards: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	for _, e := range evs {
		if err := x.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := x.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return x
}

// serve runs the web handler of a peer whose own part is local; its
// Index is an empty index, so an answer without local=1 would miss it.
func serve(t testing.TB, local index.Searcher) string {
	t.Helper()
	h, err := web.NewHandler(web.Config{Index: openIndex(t, nil), Local: local, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return ts.URL
}

func owning(ps ...int) func() []int { return func() []int { return ps } }

func ofPartition(evs []*parsers.Event, p int) []*parsers.Event {
	return slices.DeleteFunc(slices.Clone(evs), func(e *parsers.Event) bool { return e.Partition != p })
}

// cluster is the single index of all events and a fan-out over three
// analyzers holding a partition each: the local one (restricted to its
// partition, its index also holding a stale copy of partition 3), and two
// peers reached over HTTP (one restricted, one not).
type cluster struct {
	evs    []*parsers.Event
	single *index.Index
	local  *index.Index // partition 1 and a stale partition 3
	peers  []Peer
	fan    *Searcher
}

func newCluster(t testing.TB) *cluster {
	evs := events()
	c := &cluster{evs: evs, single: openIndex(t, evs)}
	c.local = openIndex(t, append(ofPartition(evs, 1), ofPartition(evs, 3)[:40]...))
	p2 := openIndex(t, ofPartition(evs, 2))
	p3 := openIndex(t, ofPartition(evs, 3))
	c.peers = []Peer{
		{Name: "peer-2", Searcher: Remote(serve(t, Restrict(p2, owning(2), nil)), token, nil)},
		{Name: "peer-3", Searcher: Remote(serve(t, p3), token, nil)},
	}
	c.fan = New(Restrict(c.local, owning(1), nil), func() []Peer { return c.peers }, Options{})
	return c
}

func hitIDs(hs []index.Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

var timeQueries = []index.Query{
	{},
	{Sort: "time"},
	{Text: "error", Sort: "-time"},
	{Text: "engine", Nodes: []string{"spark-2", "spark-5"}, Sort: "time"},
	{Levels: []string{"warning", "error"}, Since: t0.Add(3 * time.Second), Until: t0.Add(11 * time.Second)},
}

// TestFanOutPagesAsOneIndex: in time order, the fan-out over three
// analyzers (two over HTTP) returns, page by page, the hits the single
// index of all their events returns, in the same order, with the same
// cursors, by cursor and by From, every event once; its first page has the
// single index's total, facets and histogram. Members are asked in chunks
// of 1000 hits, and in chunks of 4 (continued by their cursors).
func TestFanOutPagesAsOneIndex(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	for _, run := range []struct {
		chunk     int
		queries   []index.Query
		sizes     []int
		fromEvery int // pages by From checked
	}{
		{maxChunk, timeQueries, []int{64}, 1},
		{maxChunk, timeQueries[2:], []int{9}, 2},
		// Members continued by their cursors, several times a page.
		{4, timeQueries[2:4], []int{23}, 5},
	} {
		c.fan.chunk = run.chunk
		for _, base := range run.queries {
			for _, size := range run.sizes {
				name := fmt.Sprintf("chunk %d %+v size %d", run.chunk, base, size)
				q := base
				q.Size, q.Facets, q.Histogram = size, true, 30
				seen := map[string]bool{}
				for page := 0; ; page++ {
					want, err := c.single.Search(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					got, err := c.fan.Search(ctx, q)
					if err != nil {
						t.Fatalf("%s page %d: %v", name, page, err)
					}
					if len(got.Partial) > 0 {
						t.Fatalf("%s page %d: partial %v", name, page, got.Partial)
					}
					if !slices.Equal(hitIDs(got.Hits), hitIDs(want.Hits)) || got.Next != want.Next {
						t.Fatalf("%s page %d: hits %v next %q, want %v next %q", name, page, hitIDs(got.Hits), got.Next, hitIDs(want.Hits), want.Next)
					}
					if page == 0 {
						sameCounts(t, name, got, want)
					}
					if page%run.fromEvery == 0 {
						fq := base
						fq.Size, fq.From = size, page*size
						fgot, err := c.fan.Search(ctx, fq)
						if err != nil {
							t.Fatal(err)
						}
						if !slices.Equal(hitIDs(fgot.Hits), hitIDs(want.Hits)) {
							t.Fatalf("%s from %d: hits %v, want %v", name, fq.From, hitIDs(fgot.Hits), hitIDs(want.Hits))
						}
					}
					for _, h := range got.Hits {
						if seen[h.ID] {
							t.Fatalf("%s page %d: %s again", name, page, h.ID)
						}
						seen[h.ID] = true
					}
					if got.Next == "" {
						break
					}
					q.After, q.Facets, q.Histogram = got.Next, false, 0
				}
				if len(seen) != int(mustTotal(t, c.single, base)) {
					t.Fatalf("%s: %d events paged, want %d", name, len(seen), mustTotal(t, c.single, base))
				}
			}
		}
	}
}

func mustTotal(t *testing.T, s index.Searcher, q index.Query) uint64 {
	t.Helper()
	q.Size = -1
	res, err := s.Search(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return res.Total
}

func sameCounts(t *testing.T, name string, got, want index.Result) {
	t.Helper()
	if got.Total != want.Total {
		t.Errorf("%s: total %d, want %d", name, got.Total, want.Total)
	}
	if fmt.Sprint(got.Facets) != fmt.Sprint(want.Facets) {
		t.Errorf("%s: facets %v, want %v", name, got.Facets, want.Facets)
	}
	if len(got.Histogram) == 0 || len(got.Histogram) != len(want.Histogram) {
		t.Fatalf("%s: %d buckets, want %d", name, len(got.Histogram), len(want.Histogram))
	}
	for i, b := range got.Histogram {
		if w := want.Histogram[i]; !b.Start.Equal(w.Start) || !b.End.Equal(w.End) || b.Count != w.Count {
			t.Errorf("%s: bucket %d %v, want %v", name, i, b, w)
		}
	}
}

// TestFanOutByScore: paged by score, every hit comes once, in the merged
// order (scores are each index's own, so the order is not the single
// index's).
func TestFanOutByScore(t *testing.T) {
	c := newCluster(t)
	c.fan.chunk = 4
	q := index.Query{Text: "error timeout", Sort: "score", Size: 9}
	seen := map[string]bool{}
	var all []index.Hit
	for {
		res, err := c.fan.Search(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			if seen[h.ID] {
				t.Fatalf("%s again", h.ID)
			}
			seen[h.ID] = true
		}
		all = append(all, res.Hits...)
		if res.Next == "" {
			break
		}
		q.After = res.Next
	}
	if want := mustTotal(t, c.single, q); len(seen) != int(want) || !slices.IsSortedFunc(all, index.Order(q)) {
		t.Errorf("%d hits (in order: %v), want %d", len(seen), slices.IsSortedFunc(all, index.Order(q)), want)
	}
}

// TestFanOutContextBoundsTimeline: the context of an event comes from the
// member that owns it (not from a stale copy), as the single index gives
// it; an unknown event is not found; bounds (a restricted index's of its
// partitions only), the web timeline and the count are the single
// index's.
func TestFanOutContextBoundsTimeline(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	for _, e := range []*parsers.Event{c.evs[5], ofPartition(c.evs, 2)[77], ofPartition(c.evs, 3)[10]} {
		got, err := c.fan.Context(ctx, e.ID, 4)
		if err != nil {
			t.Fatal(err)
		}
		want, err := c.single.Context(ctx, e.ID, 4)
		if err != nil {
			t.Fatal(err)
		}
		if got.Hit.ID != e.ID || got.Hit.Partition != e.Partition || !slices.Equal(hitIDs(got.Before), hitIDs(want.Before)) ||
			!slices.Equal(hitIDs(got.After), hitIDs(want.After)) {
			t.Errorf("context of %s: %v / %v, want %v / %v", e.ID, hitIDs(got.Before), hitIDs(got.After), hitIDs(want.Before), hitIDs(want.After))
		}
	}
	if _, err := c.fan.Context(ctx, "no-such-event", 3); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("unknown event: %v, want ErrNotFound", err)
	}
	stale := ofPartition(c.evs, 3)[0].ID // in the local index too, partition 3 not owned there
	if _, err := Restrict(c.local, owning(1), nil).Context(ctx, stale, 1); !errors.Is(err, index.ErrNotFound) {
		t.Errorf("stale event through Restrict: %v, want ErrNotFound", err)
	}
	// The local index's newest events are its stale copies of partition 3.
	_, staleHi, _ := c.local.Bounds(ctx)
	if lo, hi, err := Restrict(c.local, owning(1), nil).Bounds(ctx); err != nil || !lo.Equal(t0) || !hi.Equal(t0.Add(14*time.Second)) || !staleHi.After(hi) {
		t.Errorf("bounds of partition 1: %v %v (%v), want %v %v (the index's newest: %v)", lo, hi, err, t0, t0.Add(14*time.Second), staleHi)
	}
	lo, hi, err := c.fan.Bounds(ctx)
	wlo, whi, werr := c.single.Bounds(ctx)
	if err != nil || werr != nil || !lo.Equal(wlo) || !hi.Equal(whi) {
		t.Errorf("bounds %v %v (%v), want %v %v (%v)", lo, hi, err, wlo, whi, werr)
	}
	got, err := web.BuildTimeline(ctx, c.fan, index.Query{Text: "engine"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := web.BuildTimeline(ctx, c.single, index.Query{Text: "engine"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Lanes) != 6 || fmt.Sprint(laneView(got)) != fmt.Sprint(laneView(want)) {
		t.Errorf("timeline %v, want %v", laneView(got), laneView(want))
	}
	if n, err := c.fan.DocCount(); err != nil || n != uint64(len(c.evs)) {
		t.Errorf("doc count %d (%v), want %d", n, err, len(c.evs))
	}
}

func laneView(tl web.Timeline) []string {
	var out []string
	for _, l := range tl.Lanes {
		var counts []int
		for _, b := range l.Buckets {
			counts = append(counts, b.Count)
		}
		out = append(out, fmt.Sprintf("%s %v %v", l.Node, counts, hitIDs(l.Errors)))
	}
	return out
}

// TestFanOutDuplicatesAndDeadPeer: an event held by two members (the local
// index unrestricted keeps its stale copy of partition 3) is shown once,
// paging every event once; a member that does not answer makes the result
// partial, naming it, with the others' hits; when none answers the search
// fails.
func TestFanOutDuplicatesAndDeadPeer(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	dup := New(c.local, func() []Peer { return c.peers }, Options{})
	dup.chunk = 5
	q := index.Query{Size: 11}
	seen := map[string]bool{}
	for {
		res, err := dup.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			if seen[h.ID] {
				t.Fatalf("%s shown twice", h.ID)
			}
			seen[h.ID] = true
		}
		if res.Next == "" {
			break
		}
		q.After = res.Next
	}
	if len(seen) != len(c.evs) {
		t.Errorf("%d events, want %d", len(seen), len(c.evs))
	}

	dead := httptest.NewServer(nil)
	dead.Close()
	withDead := New(Restrict(c.local, owning(1), nil), func() []Peer {
		return append(slices.Clone(c.peers), Peer{Name: "peer-dead", Searcher: Remote(dead.URL, token, nil)})
	}, Options{})
	res, err := withDead.Search(ctx, index.Query{Size: 20, Facets: true, Histogram: 10})
	if err != nil {
		t.Fatal(err)
	}
	want, err := c.fan.Search(ctx, index.Query{Size: 20, Facets: true, Histogram: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Partial) != 1 || !strings.HasPrefix(res.Partial[0], "peer-dead: ") ||
		!slices.Equal(hitIDs(res.Hits), hitIDs(want.Hits)) || res.Total != want.Total {
		t.Errorf("with a dead peer: partial %v, %d hits of %d, want the others' %d of %d", res.Partial, len(res.Hits), res.Total, len(want.Hits), want.Total)
	}
	wrongToken := New(Remote(c.peers[0].Searcher.(*remote).base, "wrong", nil), func() []Peer {
		return []Peer{{Name: "peer-dead", Searcher: Remote(dead.URL, token, nil)}}
	}, Options{})
	if _, err := wrongToken.Search(ctx, index.Query{}); err == nil || !strings.Contains(err.Error(), "401") {
		t.Errorf("no member answering: %v, want an error naming the refusal", err)
	}
}

// TestFanOutBadQuery: a query the local index refuses is an error of the
// query, whatever the peers say; so are a deep From and From with a
// cursor.
func TestFanOutBadQuery(t *testing.T) {
	c := newCluster(t)
	for _, q := range []index.Query{
		{After: "garbage"},
		{From: 10, After: "x"},
		{From: index.MaxResultWindow, Size: 10},
	} {
		if _, err := c.fan.Search(context.Background(), q); !index.IsBadQuery(err) {
			t.Errorf("%+v: %v, want a bad query", q, err)
		}
	}
	// A negative From is the first page, as the index reads it.
	got, err := c.fan.Search(context.Background(), index.Query{From: -5, Size: 3})
	want, werr := c.single.Search(context.Background(), index.Query{Size: 3})
	if err != nil || werr != nil || !slices.Equal(hitIDs(got.Hits), hitIDs(want.Hits)) {
		t.Errorf("from -5: %v (%v), want %v (%v)", hitIDs(got.Hits), err, hitIDs(want.Hits), werr)
	}
}

// BenchmarkFanOutPage: a first page, with facets and histogram (which
// first asks every member for its time bounds) and without, from the
// single index and from the fan-out over three members (two over HTTP).
func BenchmarkFanOutPage(b *testing.B) {
	c := newCluster(b)
	for _, q := range []index.Query{
		{Text: "engine", Size: 50, Facets: true, Histogram: 60},
		{Text: "engine", Size: 50},
	} {
		for _, s := range []struct {
			name string
			s    index.Searcher
		}{{"single", c.single}, {"fanout", c.fan}} {
			b.Run(fmt.Sprintf("%s/histogram=%d", s.name, q.Histogram), func(b *testing.B) {
				for b.Loop() {
					if _, err := s.s.Search(b.Context(), q); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
