package index

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/parsers"
)

// limitsIndex holds 20,000 events whose messages carry two random hex words
// each: ~40,000 different words.
func limitsIndex(t *testing.T, opts Options) (*Index, []*parsers.Event) {
	t.Helper()
	x := openTest(t, opts)
	r := rand.New(rand.NewPCG(1, 2))
	var evs []*parsers.Event
	for i := range 20000 {
		msg := fmt.Sprintf("req %08x from worker %06x took %dms", r.Uint32(), r.Uint32()&0xffffff, i%500)
		evs = append(evs, ev(fmt.Sprintf("spark-%d", i%2+1), "w.log", i+1, i%3600, parsers.SourceVLLM, parsers.LevelInfo, msg))
	}
	addAll(t, x, evs)
	return x, evs
}

// A regexp or wildcard that stands for more words than MaxTermExpansion is
// refused at once with an error that says so (it took 20 s and 6 GB on
// 600k events); narrower ones still find exactly what they match.
func TestPatternExpansionIsBounded(t *testing.T) {
	x, evs := limitsIndex(t, Options{Shards: 2})
	ctx := context.Background()
	for _, q := range []string{"/.*/", "*?*", "/[0-9a-f]+/"} {
		start := time.Now()
		_, err := x.Search(ctx, Query{Text: q, Facets: true, Histogram: 60})
		if !errors.Is(err, ErrQueryTooBroad) || !IsBadQuery(err) || !strings.Contains(err.Error(), q) {
			t.Errorf("%s: err %v, want ErrQueryTooBroad naming the pattern", q, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%s: refused after %v", q, d)
		}
	}
	for _, c := range []struct {
		q    string
		keep func(w string) bool
	}{
		{"/ab.*/", func(w string) bool { return strings.HasPrefix(w, "ab") }},
		{"ab?d*", func(w string) bool { return len(w) >= 4 && w[:2] == "ab" && w[3] == 'd' }},
		{"req*", func(w string) bool { return strings.HasPrefix(w, "req") }},
	} {
		want := 0
		for _, e := range evs {
			for _, w := range strings.Fields(e.Message) {
				if c.keep(w) {
					want++
					break
				}
			}
		}
		res, err := x.Search(ctx, Query{Text: c.q, Size: -1})
		if err != nil {
			t.Fatalf("%s: %v", c.q, err)
		}
		if res.Total != uint64(want) || want == 0 {
			t.Errorf("%s: %d hits, want %d", c.q, res.Total, want)
		}
	}
}

// Every search has a deadline; at it, the search stops with an error that
// says so. A search whose client went away stops too.
func TestSearchDeadlineAndCancel(t *testing.T) {
	x, _ := limitsIndex(t, Options{Shards: 2, SearchTimeout: time.Microsecond})
	// A pattern that matches no word walks the whole dictionary.
	_, err := x.Search(context.Background(), Query{Text: "/zz.*qq/"})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("search past its deadline: err %v", err)
	}
	if _, err := x.Context(context.Background(), "any", 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("context past its deadline: err %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	y, _ := limitsIndex(t, Options{Shards: 2})
	if _, err := y.Search(ctx, Query{Text: "/zz.*qq/"}); !errors.Is(err, context.Canceled) {
		t.Errorf("search of a client that went away: err %v", err)
	}
}

// Pages deeper than MaxResultWindow are refused (from=599000 took 9.5 s):
// the query is narrowed instead.
func TestDeepPageIsRefused(t *testing.T) {
	x, _ := limitsIndex(t, Options{Shards: 2})
	for _, sort := range []string{"", "time", "score"} {
		_, err := x.Search(context.Background(), Query{From: 599000, Sort: sort})
		if !errors.Is(err, ErrTooDeep) || !IsBadQuery(err) {
			t.Errorf("sort %q from 599000: err %v, want ErrTooDeep", sort, err)
		}
	}
	res, err := x.Search(context.Background(), Query{From: 19990, Size: 50})
	if err != nil || len(res.Hits) != 10 {
		t.Errorf("last page: %d hits, err %v; want 10", len(res.Hits), err)
	}
}

// TestPagesAtTheDeadline: a search that meets its deadline fails saying
// so, whatever it was doing (counting, checking records against a
// pattern, ordering a page after a cursor), and never answers a shorter
// page or one without its next cursor as if it were complete (issue 27:
// the cursor path once ignored the shards that stopped at the deadline, and
// a walk ended silently); under a running ingest the deadline still holds.
func TestPagesAtTheDeadline(t *testing.T) {
	x, evs := limitsIndex(t, Options{Shards: 2, FlushInterval: 10 * time.Millisecond})
	ctx := context.Background()
	queries := []Query{{Text: "req", Size: 500}, {Text: "/ab.*/", Size: 20}, {Text: "worker -7ms", Size: 1000, Sort: "time"}}
	// Cursors into the middle of each query's hits, found without deadline.
	for i := range queries {
		res, err := x.Search(ctx, queries[i])
		if err != nil || res.Next == "" {
			t.Fatalf("%+v: %v, next %q", queries[i], err, res.Next)
		}
		queries[i].After = res.Next
	}
	want := map[int]Result{}
	for i, q := range queries {
		res, err := x.Search(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = res
	}
	// Keep indexing meanwhile: other events, on another node.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			e := ev("spark-9", "load.log", i+1, i%3600, parsers.SourceVLLM, parsers.LevelInfo, fmt.Sprintf("load %d of the ingest", i))
			if err := x.Add(e); err != nil {
				t.Error(err)
				return
			}
		}
	})
	defer func() { close(stop); wg.Wait() }()
	var slowest time.Duration
	errs, full := 0, 0
	for _, timeout := range []time.Duration{time.Microsecond, 50 * time.Microsecond, 200 * time.Microsecond, time.Millisecond,
		3 * time.Millisecond, 10 * time.Millisecond, 30 * time.Millisecond, 100 * time.Millisecond, time.Second} {
		x.opts.SearchTimeout = timeout
		for i, q := range queries {
			start := time.Now()
			res, err := x.Search(ctx, q)
			took := time.Since(start)
			slowest = max(slowest, took-timeout)
			if took > timeout+time.Second {
				t.Errorf("%+v with a %v deadline: answered after %v", q, timeout, took)
			}
			if err != nil {
				if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "deadline") {
					t.Errorf("%+v with a %v deadline: err %v, want the deadline's", q, timeout, err)
				}
				errs++
				continue
			}
			// Events of spark-9 do not match: the page is the one without
			// a deadline, whole, with its next cursor.
			w := want[i]
			if !slices.Equal(ids(res.Hits, false), ids(w.Hits, false)) || res.Next != w.Next || res.Total != w.Total {
				t.Errorf("%+v with a %v deadline: a page of %d hits (next %q, total %d), want %d (next %q, total %d)",
					q, timeout, len(res.Hits), res.Next, res.Total, len(w.Hits), w.Next, w.Total)
			}
			full++
		}
	}
	if errs == 0 || full == 0 {
		t.Errorf("%d searches stopped at their deadline, %d answered: want some of each", errs, full)
	}
	t.Logf("under ingest: %d searches stopped at the deadline, %d answered; the latest answer came %v after its deadline (%d events)",
		errs, full, slowest, len(evs))
}
