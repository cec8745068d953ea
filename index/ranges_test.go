package index

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/search/query"

	"github.com/faultline/faultline/parsers"
)

// pieceMatches evaluates one piece of a time range query on a value.
func pieceMatches(t *testing.T, q query.Query, v int64) bool {
	t.Helper()
	level := func(field, term string) (uint, uint64) {
		if len(term) == 0 {
			t.Fatalf("empty term in %#v", q)
		}
		s := uint(term[0] - 0x20)
		if (field == FieldTimeSort) != (s == 0) || field != FieldTime && field != FieldTimeSort {
			t.Fatalf("term of shift %d in field %s", s, field)
		}
		var u uint64
		for _, c := range []byte(term[1:]) {
			u = u<<7 | uint64(c)
		}
		return s, u
	}
	u := sortable(v)
	switch q := q.(type) {
	case *query.TermQuery:
		s, b := level(q.FieldVal, q.Term)
		return u>>s == b
	case *query.TermRangeQuery:
		s, lo := level(q.FieldVal, q.Min)
		s2, hi := level(q.FieldVal, q.Max)
		if s != s2 || !*q.InclusiveMin || !*q.InclusiveMax || lo >= hi {
			t.Fatalf("bad range piece %#v", q)
		}
		return u>>s >= lo && u>>s <= hi
	case *query.MatchNoneQuery:
		return false
	case edgeFilter:
		// Buckets of the finest width around [lo, hi], cut to it exactly.
		var term string
		switch b := q.buckets.(type) {
		case *query.TermQuery:
			term = b.Term
		case *query.TermRangeQuery:
			term = b.Min
		}
		if s, _ := level(FieldTime, term); s != timeShifts[0] {
			t.Fatalf("edge filter over buckets of shift %d", s)
		}
		if !pieceMatches(t, q.buckets, int64(q.lo^1<<63)) || !pieceMatches(t, q.buckets, int64(q.hi^1<<63)) {
			t.Fatalf("edge filter's buckets %#v miss its range [%d, %d]", q.buckets, q.lo, q.hi)
		}
		return pieceMatches(t, q.buckets, v) && u >= q.lo && u <= q.hi
	}
	t.Fatalf("unexpected piece %T", q)
	return false
}

// TestTimeRangeSplit checks the decomposition of ranges into bucket and
// exact pieces against the range itself, near the bucket edges of every
// width and at the ends of int64.
func TestTimeRangeSplit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC).UnixNano()
	var points []int64
	for _, s := range append([]uint{0}, timeShifts...) {
		edge := base &^ (1<<s - 1)
		for _, d := range []int64{-2, -1, 0, 1, 2} {
			points = append(points, edge+d, edge+int64(1)<<s+d)
		}
	}
	for _, d := range []time.Duration{time.Millisecond, time.Second, time.Minute, time.Hour, 24 * time.Hour} {
		points = append(points, base+int64(d)-1, base+int64(d), base-int64(d))
	}
	points = append(points, math.MinInt64, math.MinInt64+1, math.MaxInt64, math.MaxInt64-1, -1, 0, 1)
	for range 40 {
		points = append(points, base+r.Int64N(int64(10*24*time.Hour))-int64(5*24*time.Hour))
	}
	check := func(lo, hi int64) {
		q := timeRangeInclusive(lo, hi)
		pieces := []query.Query{q}
		if a, ok := q.(anyOf); ok {
			pieces = a
		}
		if len(pieces) > 2*len(timeShifts)+2 {
			t.Errorf("[%d, %d]: %d pieces", lo, hi, len(pieces))
		}
		for _, v := range append(slices.Clone(points), lo-1, lo, lo+1, hi-1, hi, hi+1) {
			n := 0
			for _, p := range pieces {
				if pieceMatches(t, p, v) {
					n++
				}
			}
			want := v >= lo && v <= hi
			if n > 1 || (n == 1) != want {
				t.Fatalf("[%d, %d] matches %d in %d pieces, want %v", lo, hi, v, n, want)
			}
		}
	}
	for i, a := range points {
		for _, b := range points[i:] {
			check(min(a, b), max(a, b))
		}
	}
}

// TestTimeAndNumberRanges compares time and rank queries on an index with
// a brute-force filter of the events, with bounds on and beside the edges
// of nanoseconds, milliseconds, seconds, minutes, hours and days.
func TestTimeAndNumberRanges(t *testing.T) {
	x := openTest(t, Options{Shards: 2})
	day := time.Date(2026, 3, 14, 0, 0, 0, 0, time.UTC)
	var times []time.Time
	for _, d := range []time.Duration{time.Nanosecond, time.Microsecond, time.Millisecond, time.Second, time.Minute,
		time.Hour, 24 * time.Hour} {
		for _, k := range []int64{-1, 0, 1} {
			edge := day.Add(d)
			times = append(times, edge.Add(time.Duration(k)), day.Add(-d).Add(time.Duration(k)))
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for range 150 {
		times = append(times, day.Add(time.Duration(r.Int64N(int64(48*time.Hour)))-24*time.Hour))
	}
	for range 50 { // whole milliseconds, as most logs have
		times = append(times, day.Add(time.Duration(r.Int64N(int64(time.Hour)))-30*time.Minute).Truncate(time.Millisecond))
	}
	var evs []*parsers.Event
	for i, tm := range times {
		e := ev("spark-1", "r.log", i+1, 0, parsers.SourceNCCL, parsers.LevelInfo, "x")
		e.Time = tm
		e.Fields = map[string]string{"rank": strconv.Itoa(i%11 - 3)}
		evs = append(evs, e)
	}
	addAll(t, x, evs)
	ctx := context.Background()
	search := func(q Query) []int {
		q.Size = 10000
		res, err := x.Search(ctx, q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		var got []int
		for _, h := range res.Hits {
			got = append(got, h.Line)
		}
		slices.Sort(got)
		return got
	}
	brute := func(keep func(*parsers.Event) bool) []int {
		var want []int
		for _, e := range evs {
			if keep(e) {
				want = append(want, e.Line)
			}
		}
		return want
	}
	var bounds []time.Time
	for _, tm := range times[:42] {
		bounds = append(bounds, tm, tm.Add(-time.Nanosecond), tm.Add(time.Nanosecond))
	}
	for range 40 {
		bounds = append(bounds, times[r.IntN(len(times))])
	}
	for i, lo := range bounds {
		for _, hi := range bounds[i%7:][:1] {
			for _, q := range []Query{{Since: lo, Until: hi}, {Since: hi, Until: lo}, {Since: lo}, {Until: lo}} {
				want := brute(func(e *parsers.Event) bool {
					return (q.Since.IsZero() || !e.Time.Before(q.Since)) && (q.Until.IsZero() || e.Time.Before(q.Until))
				})
				if got := search(q); !slices.Equal(got, want) {
					t.Errorf("since %v until %v: %d hits, want %d", q.Since, q.Until, len(got), len(want))
				}
			}
		}
		ts := lo.Format(time.RFC3339Nano)
		for _, c := range []struct {
			op   string
			keep func(time.Time) bool
		}{
			{">", func(e time.Time) bool { return e.After(lo) }},
			{">=", func(e time.Time) bool { return !e.Before(lo) }},
			{"<", func(e time.Time) bool { return e.Before(lo) }},
			{"<=", func(e time.Time) bool { return !e.After(lo) }},
			{"", func(e time.Time) bool { return !e.Before(lo) && e.Before(lo.Add(time.Second)) }},
		} {
			want := brute(func(e *parsers.Event) bool { return c.keep(e.Time) })
			if got := search(Query{Text: "time:" + c.op + ts}); !slices.Equal(got, want) {
				t.Errorf("time:%s%s: %d hits, want %d", c.op, ts, len(got), len(want))
			}
		}
	}
	// Wider ranges: one to many of each bucket width.
	for _, w := range []time.Duration{time.Microsecond, time.Millisecond, 70 * time.Millisecond, time.Second, 5 * time.Second,
		time.Minute, 5 * time.Minute, time.Hour, 5 * time.Hour, 30 * time.Hour} {
		for range 5 {
			lo := day.Add(time.Duration(r.Int64N(int64(24*time.Hour))) - 12*time.Hour)
			q := Query{Since: lo, Until: lo.Add(w)}
			want := brute(func(e *parsers.Event) bool { return !e.Time.Before(q.Since) && e.Time.Before(q.Until) })
			if got := search(q); !slices.Equal(got, want) {
				t.Errorf("%v from %v: %d hits, want %d", w, lo, len(got), len(want))
			}
		}
	}
	rank := func(e *parsers.Event) float64 { n, _ := strconv.Atoi(e.Fields["rank"]); return float64(n) }
	for _, v := range []float64{-4, -3, -1, -0.5, 0, 0.5, 1, 2, 6.9, 7, 8} {
		for _, c := range []struct {
			op   string
			keep func(float64) bool
		}{
			{">", func(n float64) bool { return n > v }},
			{">=", func(n float64) bool { return n >= v }},
			{"<", func(n float64) bool { return n < v }},
			{"<=", func(n float64) bool { return n <= v }},
			{"", func(n float64) bool { return n == v }},
		} {
			q := fmt.Sprintf("rank:%s%g", c.op, v)
			want := brute(func(e *parsers.Event) bool { return c.keep(rank(e)) })
			if got := search(Query{Text: q}); !slices.Equal(got, want) {
				t.Errorf("%s: %v, want %v", q, got, want)
			}
		}
	}
}

// TestTimeSortedPages: pages of hits by time, in both orders, with
// events without a time sorting last, match a sort of the events.
func TestTimeSortedPages(t *testing.T) {
	x := openTest(t, Options{Shards: 2})
	var evs []*parsers.Event
	genEvents(5, 24000, nil, func(e *parsers.Event) { evs = append(evs, e) })
	for i, e := range evs {
		if i%10 == 0 {
			e.Time = time.Time{} // no time: sorts last
		}
	}
	addAll(t, x, evs)
	ctx := context.Background()
	for _, c := range []struct {
		text string
		keep func(*parsers.Event) bool
	}{
		{"", func(*parsers.Event) bool { return true }},
		{"source:vllm", func(e *parsers.Event) bool { return e.Source == parsers.SourceVLLM }},
	} {
		var timed []*parsers.Event
		n := 0
		for _, e := range evs {
			if c.keep(e) {
				n++
				if !e.Time.IsZero() {
					timed = append(timed, e)
				}
			}
		}
		for _, sort := range []string{"-time", "time"} {
			want := slices.Clone(timed)
			slices.SortFunc(want, func(a, b *parsers.Event) int { return a.Time.Compare(b.Time) })
			if sort == "-time" {
				slices.Reverse(want)
			}
			for _, p := range [][2]int{{0, 50}, {0, 1}, {700, 100}, {len(want) - 60, 50}, {len(want) - 20, 50}} {
				res, err := x.Search(ctx, Query{Text: c.text, Sort: sort, From: p[0], Size: p[1]})
				if err != nil {
					t.Fatal(err)
				}
				if res.Total != uint64(n) {
					t.Errorf("%q %s: total %d, want %d", c.text, sort, res.Total, n)
				}
				for i, h := range res.Hits {
					j := p[0] + i
					if j >= len(want) {
						if !h.Time.IsZero() {
							t.Errorf("%q %s page %v: hit %d has a time after all timed hits", c.text, sort, p, j)
						}
						continue
					}
					if h.ID != want[j].ID {
						t.Errorf("%q %s page %v: hit %d is %s at %v, want %s at %v", c.text, sort, p, j, h.ID, h.Time, want[j].ID, want[j].Time)
						break
					}
				}
				if wantN := min(p[1], n-p[0]); len(res.Hits) != wantN {
					t.Errorf("%q %s page %v: %d hits, want %d", c.text, sort, p, len(res.Hits), wantN)
				}
			}
		}
	}
}
