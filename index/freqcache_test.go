package index

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/blevesearch/bleve/v2/numeric"

	"github.com/faultline/faultline/parsers"
)

// TestSharedFrequenciesIndexAlike indexes the same events twice, once with
// the token frequencies of repeated keywords and time buckets shared
// between documents (freqCache) and once built afresh per document, over
// many small batches so that segments are built and merged from shared
// maps, and asks both the queries the UI and CLI make: field filters,
// facets, the histogram, time ranges, sorting, context. Every answer must
// be the same.
func TestSharedFrequenciesIndexAlike(t *testing.T) {
	var evs []*parsers.Event
	genEvents(7, 6000, nil, func(e *parsers.Event) { evs = append(evs, e) })
	shared := openTest(t, Options{Shards: 2, BatchSize: 300})
	fresh := openTest(t, Options{Shards: 2, BatchSize: 300})
	fresh.builder.freqs.limit = 0 // every keyword built per document
	addAll(t, shared, evs)
	for _, e := range evs {
		fresh.builder.freqs.time.Store(nil) // every time bucket built per document
		if err := fresh.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := fresh.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(shared.builder.freqs.kw); n == 0 || n > 100 {
		t.Fatalf("%d cached keywords, want a few dozen", n)
	}
	if n := len(fresh.builder.freqs.kw); n != 0 {
		t.Fatalf("the fresh index cached %d keywords", n)
	}
	mid := evs[len(evs)/2].Time
	queries := []Query{
		{Text: "node:spark-2", Facets: true, Histogram: 30},
		{Text: "level:warning source:ray", Sort: "time", Size: 50},
		{Text: "cluster:bench container:vllm", Size: 0, Facets: true},
		{Text: "component:raylet OR component:gcs_server", Sort: "-time", Size: 20},
		{Text: "file:/logs/spark-3/bench.log", Sort: "time", Size: 20},
		{Text: "192.168.200.11", Since: mid.Add(-3 * time.Second), Until: mid.Add(5 * time.Second), Facets: true, Histogram: 8, Sort: "time", Size: 100},
		{Text: "RayActorError", Since: mid, Sort: "time", Size: 10},
		{Text: "rank:3 NCCL", Facets: true, Sort: "score", Size: 30},
	}
	for _, q := range queries {
		a, err := shared.Search(context.Background(), q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		b, err := fresh.Search(context.Background(), q)
		if err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		if a.Total == 0 {
			t.Errorf("%+v: no hits", q)
		}
		if a.Total != b.Total || !reflect.DeepEqual(hitIDs(a.Hits), hitIDs(b.Hits)) ||
			!reflect.DeepEqual(a.Facets, b.Facets) || !reflect.DeepEqual(a.Histogram, b.Histogram) {
			t.Errorf("%+v: shared frequencies answer %d hits %v facets %v histogram %v, fresh ones %d %v %v %v",
				q, a.Total, hitIDs(a.Hits), a.Facets, a.Histogram, b.Total, hitIDs(b.Hits), b.Facets, b.Histogram)
		}
	}
	id := evs[4000].ID
	ca, err := shared.Context(context.Background(), id, 3)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := fresh.Context(context.Background(), id, 3)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(hitIDs(ca.Before), hitIDs(ca.After)) != fmt.Sprint(hitIDs(cb.Before), hitIDs(cb.After)) || len(ca.Before) != 3 {
		t.Errorf("context: %v %v, fresh %v %v", hitIDs(ca.Before), hitIDs(ca.After), hitIDs(cb.Before), hitIDs(cb.After))
	}
}

func hitIDs(hs []Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

// TestTimeBucketTerms: the shared time terms are the prefix codes of the
// event's time at every bucket width, also for the event after a cached
// bucket and across a bucket edge.
func TestTimeBucketTerms(t *testing.T) {
	c := newFreqCache()
	edge := int64(1) << timeShifts[0] * 411_000
	for _, ns := range []int64{edge - 1, edge, edge + 5, edge - 7, -edge, 0} {
		got := c.buckets(ns)
		if len(got) != len(timeShifts) {
			t.Fatalf("%d: %d terms", ns, len(got))
		}
		for _, s := range timeShifts {
			term := string(numeric.MustNewPrefixCodedInt64(ns, s))
			if tf, ok := got[term]; !ok || string(tf.Term) != term || tf.Frequency() != 1 {
				t.Errorf("%d: no term of shift %d in %v", ns, s, got)
			}
		}
	}
}

// TestSmallBatchesReadBack indexes events in many small batches, so that
// many segments are built and merged from documents whose frequencies are
// shared (freqCache), then reads every event back: each stored hit must be
// its own event's, and each event's unique actor ID (a message term) must
// find that event and no other.
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
			t.Fatalf("%s finds %d hits %v, want only %s", actor, res.Total, hitIDs(res.Hits), e.ID)
		}
		if checked++; checked == 150 {
			break
		}
	}
	if checked < 150 {
		t.Fatalf("only %d events with an actor ID", checked)
	}
}
