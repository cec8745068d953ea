package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
)

func joinTest(t testing.TB, url, name string) *Node {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	n, err := Join(ctx, js, Options{Member: name, Partitions: 1, Replicas: 1})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Two members re-derive the same versions of a finding at the same time,
// and a third replays them later: each version is reserved (and confirmed)
// once, with revisions 1, 2, 3 and no gap.
func TestClaimsAnnounceEachVersionOnce(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	a, b, c := joinTest(t, srv.ClientURL(), "a"), joinTest(t, srv.ClientURL(), "b"), joinTest(t, srv.ClientURL(), "c")
	versions := []finding.Finding{
		{ID: "f1", Status: "active", Updates: 0},
		{ID: "f1", Status: "active", Updates: 1},
		{ID: "f1", Status: "active", Updates: 1, ExplainedBy: "root"},
		{ID: "f1", Status: "resolved", Updates: 2, ExplainedBy: "root"},
	}
	ctx := context.Background()
	var mu sync.Mutex
	var won []finding.Finding
	var wg sync.WaitGroup
	for _, n := range []*Node{a, b} {
		wg.Go(func() {
			for _, v := range versions {
				f, ok, err := n.Reserve(ctx, v)
				if errors.Is(err, ErrReservedElsewhere) {
					continue // the other is delivering it
				}
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					won = append(won, f)
					mu.Unlock()
					if err := n.Confirm(ctx, f); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	// A replay elsewhere, from the start: nothing is news.
	for _, v := range versions {
		if _, ok, err := c.Reserve(ctx, v); ok || err != nil {
			t.Errorf("replayed version %+v claimed again (err %v)", v, err)
		}
	}
	seen := map[int]bool{}
	for _, f := range won {
		if seen[f.Revision] {
			t.Errorf("revision %d announced twice", f.Revision)
		}
		seen[f.Revision] = true
	}
	for r := 1; r <= len(seen); r++ {
		if !seen[r] {
			t.Errorf("revision %d skipped: %v", r, seen)
		}
	}
	// Interleaving decides how many versions were news by the time each
	// was tried, but the last is always announced, and stored last.
	stored, ok, err := c.Stored(ctx, "f1")
	if err != nil || !ok || stored.Status != "resolved" || stored.Revision != len(seen) {
		t.Errorf("stored %+v, %v, %v; want resolved at revision %d", stored, ok, err, len(seen))
	}
	if err := c.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if fs := c.Findings(); len(fs) != 1 || fs[0].Status != "resolved" {
			return fmt.Errorf("findings view: %+v", fs)
		}
		return nil
	})
}

// Issue 22 item 6: a version a member reserved and never confirmed (it
// died between its reservation and its sinks) is not announced; the member
// that derives it next delivers it again under the same revision, once the
// grace left to the first has passed, and a replay of a confirmed version
// delivers nothing. Fails where a claim marks a version announced before
// the sinks took it.
func TestClaimsRedeliverAnUnconfirmedVersion(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	a, b := joinTest(t, srv.ClientURL(), "a"), joinTest(t, srv.ClientURL(), "b")
	b.grace = 200 * time.Millisecond
	ctx := context.Background()
	v := finding.Finding{ID: "f1", Status: "active", Updates: 3, Title: "t"}
	got, ok, err := a.Reserve(ctx, v)
	if err != nil || !ok || got.Revision != 1 {
		t.Fatalf("a reserved %+v %v %v", got, ok, err)
	}
	// a dies here. b, deriving the same version at once, is told to wait.
	if _, ok, err := b.Reserve(ctx, v); ok || !errors.Is(err, ErrReservedElsewhere) {
		t.Errorf("b reserved a's fresh reservation: %v %v", ok, err)
	}
	if err := b.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok := b.Announced("f1"); ok {
		t.Error("a reserved version counts as announced")
	}
	time.Sleep(300 * time.Millisecond)
	got, ok, err = b.Reserve(ctx, v)
	if err != nil || !ok || got.Revision != 1 {
		t.Fatalf("b after the grace: %+v %v %v; want revision 1 to deliver again", got, ok, err)
	}
	if err := b.Confirm(ctx, got); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if f, ok := b.Announced("f1"); !ok || f.Revision != 1 {
			return fmt.Errorf("announced %+v %v", f, ok)
		}
		return nil
	})
	if _, ok, err := a.Reserve(ctx, v); ok || err != nil {
		t.Errorf("a confirmed version reserved again: %v %v", ok, err)
	}
	// The next version is revision 2.
	v.Updates++
	if got, ok, err := a.Reserve(ctx, v); err != nil || !ok || got.Revision != 2 {
		t.Errorf("next version %+v %v %v; want revision 2", got, ok, err)
	}
}

// TestClaimsNeverSkipARevision: a member reserves revision 2 and dies
// before delivering it; the partition's new owner derives a newer version.
// It waits while the grace lasts (the member may still deliver), then
// delivers the dead member's revision 2 as it was, and the newer version
// as revision 3: no revision is skipped (TestClusterKillAndFreeze saw
// "revision 3 never announced" when the newer version took revision 4).
func TestClaimsNeverSkipARevision(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	a, b := joinTest(t, srv.ClientURL(), "a"), joinTest(t, srv.ClientURL(), "b")
	b.grace = 200 * time.Millisecond
	ctx := context.Background()
	v := finding.Finding{ID: "f1", Status: "active", Updates: 1, Title: "t1"}
	got, ok, err := a.Reserve(ctx, v)
	if err != nil || !ok || got.Revision != 1 {
		t.Fatalf("a reserved %+v %v %v", got, ok, err)
	}
	if err := a.Confirm(ctx, got); err != nil {
		t.Fatal(err)
	}
	v.Updates, v.Title = 2, "t2"
	if got, ok, err = a.Reserve(ctx, v); err != nil || !ok || got.Revision != 2 {
		t.Fatalf("a reserved %+v %v %v", got, ok, err)
	}
	// a dies here, revision 2 reserved and not delivered. b, the new owner,
	// derives a newer version.
	newer := v
	newer.Updates, newer.Title = 3, "t3"
	if _, ok, err := b.Reserve(ctx, newer); ok || !errors.Is(err, ErrReservedElsewhere) {
		t.Errorf("b reserved a newer version over a's fresh reservation of revision 2: %v %v", ok, err)
	}
	time.Sleep(300 * time.Millisecond)
	got, ok, err = b.Reserve(ctx, newer)
	if err != nil || !ok || got.Revision != 2 || got.Title != "t2" {
		t.Fatalf("b after the grace: %+v %v %v; want a's revision 2 (t2) to deliver first", got, ok, err)
	}
	if err := b.Confirm(ctx, got); err != nil {
		t.Fatal(err)
	}
	got, ok, err = b.Reserve(ctx, newer)
	if err != nil || !ok || got.Revision != 3 || got.Title != "t3" {
		t.Fatalf("b's newer version: %+v %v %v; want revision 3 (t3)", got, ok, err)
	}
}
