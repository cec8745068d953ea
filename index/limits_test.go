package index

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
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
