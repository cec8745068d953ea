package index

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/parsers"
)

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

// TestSmallBatchesReadBack indexes events in many small batches, so that
// many blocks, segments and merges are made, then reads every event back:
// each stored hit must be its own event's, and each event's unique actor
// ID (a hex ID, which the index buckets) must find that event and no
// other.
func TestSmallBatchesReadBack(t *testing.T) {
	var evs []*parsers.Event
	genEvents(11, 4000, nil, func(e *parsers.Event) { evs = append(evs, e) })
	x := openTest(t, Options{Shards: 2, BatchSize: 64})
	addAll(t, x, evs)
	byID := map[string]*parsers.Event{}
	for _, e := range evs {
		byID[e.ID] = e
	}
	seen := 0
	after := ""
	for {
		res, err := x.Search(context.Background(), Query{Size: 1000, Sort: "time", After: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			e := byID[h.ID]
			if e == nil {
				t.Fatalf("hit %s is no event", h.ID)
			}
			if h.Message != e.Message || h.Node != e.Node || h.Line != e.Line || !h.Time.Equal(e.Time) ||
				h.Component != e.Component || h.PID != e.PID || !reflect.DeepEqual(h.Fields, e.Fields) {
				t.Fatalf("hit %s reads %+v, the event was %+v", h.ID, h, e)
			}
			seen++
		}
		if res.Next == "" {
			break
		}
		after = res.Next
	}
	if seen != len(evs) {
		t.Fatalf("read back %d events of %d", seen, len(evs))
	}
	checked := 0
	for _, e := range evs {
		_, actor, ok := strings.Cut(e.Message, "actor_id: ")
		if !ok {
			continue
		}
		actor, _, _ = strings.Cut(actor, " ")
		res, err := x.Search(context.Background(), Query{Text: actor})
		if err != nil {
			t.Fatal(err)
		}
		if res.Total != 1 || res.Hits[0].ID != e.ID {
			t.Fatalf("%s finds %d hits %v, want only %s", actor, res.Total, ids(res.Hits, false), e.ID)
		}
		if checked++; checked == 150 {
			break
		}
	}
	if checked < 150 {
		t.Fatalf("only %d events with an actor ID", checked)
	}
}
