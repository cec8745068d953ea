package fanout

import (
	"context"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/web"
)

// TestRemoteQueryValues: every field of a query reaches the server as
// web.ParseQuery reads it (times in any zone as the same instants), with
// local=1 only for a peer.
func TestRemoteQueryValues(t *testing.T) {
	zone := time.FixedZone("CEST", 2*3600)
	for _, q := range []index.Query{
		{},
		{Text: "error timeout", Size: 20},
		{Size: -1},
		{Text: "engine", Nodes: []string{"spark-1", "spark-2"}, Containers: []string{"vllm"}, Sources: []string{"ray"},
			Levels: []string{"error", "warning"}, Files: []string{"a,b.log"}, Since: t0, Until: t0.Add(time.Hour).In(zone),
			HistogramSince: t0.Add(-time.Minute), HistogramUntil: t0.Add(2 * time.Hour), From: 40, Size: 1000,
			Histogram: 60, Sort: "-time", Facets: true, Highlight: true},
		{Sort: "time", After: "opaque-cursor", Size: 7},
	} {
		for _, local := range []bool{false, true} {
			r := NewRemote("http://x", RemoteOptions{Local: local}).(*remote)
			v := r.values()
			addSearchValues(v, q)
			got, err := web.ParseQuery(v, t0)
			if err != nil {
				t.Fatalf("%v: %v", v, err)
			}
			want := q
			for _, p := range []*time.Time{&want.Since, &want.Until, &want.HistogramSince, &want.HistogramUntil} {
				if !p.IsZero() {
					*p = p.UTC()
				}
			}
			if !reflect.DeepEqual(got, want) || (v.Get("local") == "1") != local {
				t.Errorf("local %v: %+v sent as %v, read as %+v", local, q, v, got)
			}
		}
	}
}

// TestRemoteLocalOrCluster: through an analyzer of the cluster, a peer's
// Remote (local=1) gets that analyzer's partition only, NewRemote without
// Local the whole cluster's (the analyzer fans out), context of an event
// of another partition included; a missing or wrong token is
// ErrUnauthorized.
func TestRemoteLocalOrCluster(t *testing.T) {
	c := newCluster(t)
	ctx := context.Background()
	h, err := web.NewHandler(web.Config{Index: c.fan, Local: Restrict(c.local, owning(1), nil), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	other := ofPartition(c.evs, 3)[10].ID

	for _, tc := range []struct {
		name      string
		s         index.Searcher
		total     int
		otherSeen bool
	}{
		{"peer", Remote(ts.URL, token, nil), len(ofPartition(c.evs, 1)), false},
		{"client", NewRemote(ts.URL+"/", RemoteOptions{Token: token}), len(c.evs), true},
	} {
		res, err := tc.s.Search(ctx, index.Query{Size: -1})
		if err != nil || int(res.Total) != tc.total {
			t.Errorf("%s: total %d (%v), want %d", tc.name, res.Total, err, tc.total)
		}
		cx, err := tc.s.Context(ctx, other, 2)
		if tc.otherSeen && (err != nil || cx.Hit.ID != other || len(cx.Before) != 2) {
			t.Errorf("%s: context of %s: %+v, %v; want it with 2 before", tc.name, other, cx.Hit, err)
		}
		if !tc.otherSeen && !errors.Is(err, index.ErrNotFound) {
			t.Errorf("%s: context of %s (partition 3): %v, want ErrNotFound", tc.name, other, err)
		}
	}
	for _, tok := range []string{"", "wrong"} {
		_, err := NewRemote(ts.URL, RemoteOptions{Token: tok}).Search(ctx, index.Query{})
		if !errors.Is(err, ErrUnauthorized) || errors.Is(err, index.ErrNotFound) {
			t.Errorf("token %q: %v, want ErrUnauthorized", tok, err)
		}
	}
	if _, err := NewRemote(ts.URL, RemoteOptions{Token: token}).Search(ctx, index.Query{After: "garbage"}); err == nil ||
		errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), ts.URL+"/api/search: 400") || !strings.Contains(err.Error(), "cursor") {
		t.Errorf("bad cursor: %v, want the API's 400 and its reason", err)
	}
	if _, err := NewRemote(ts.URL, RemoteOptions{}).Search(ctx, index.Query{Partitions: []int{1}}); err == nil {
		t.Error("Query.Partitions sent over HTTP without an error")
	}
}
