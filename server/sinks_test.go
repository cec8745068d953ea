package server

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/sink"
)

// Every sink of serve gets every finding of the seed: the store
// (/api/findings), NATS, the web UI's live stream (SSE), a sink the caller
// added (Config.Sinks, a JSON-lines writer) and the terminal, which shows
// each finding in full once.
func TestLiveSinksGetEveryFinding(t *testing.T) {
	var jsonl testutil.Buffer
	srv := startServer(t, Config{Sinks: []sink.Sink{sink.NewJSON(&jsonl, nil)}})
	sub := subscribeFindings(t, srv.addrs.NATS)

	// The live stream, read from before the records are published.
	resp, err := http.Get("http://" + srv.addrs.HTTP + "/api/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sseMu sync.Mutex
	sse := map[string]bool{}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		inFinding := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "event: finding":
				inFinding = true
			case inFinding && strings.HasPrefix(line, "data: "):
				var f finding.Finding
				if json.Unmarshal([]byte(line[len("data: "):]), &f) == nil {
					sseMu.Lock()
					sse[f.ID] = true
					sseMu.Unlock()
				}
				inFinding = false
			}
		}
	}()

	nc, err := nats.Connect(srv.addrs.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	publishRecords(t, js, seedRecords(t), 50)

	var want []string
	for _, f := range diagnose(t) {
		want = append(want, f.ID)
	}
	slices.Sort(want)
	idsOf := func(fs []finding.Finding) []string {
		set := map[string]bool{}
		for _, f := range fs {
			set[f.ID] = true
		}
		var out []string
		for id := range set {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		var lines []finding.Finding
		for _, l := range strings.Split(strings.TrimSpace(jsonl.String()), "\n") {
			var f finding.Finding
			if json.Unmarshal([]byte(l), &f) == nil {
				lines = append(lines, f)
			}
		}
		sseMu.Lock()
		var live []finding.Finding
		for id := range sse {
			live = append(live, finding.Finding{ID: id})
		}
		sseMu.Unlock()
		sub.mu.Lock()
		published := slices.Clone(sub.got)
		sub.mu.Unlock()
		for name, got := range map[string][]string{
			"store": idsOf(getFindings(t, srv.addrs.HTTP)), "nats": idsOf(published),
			"sse": idsOf(live), "Config.Sinks": idsOf(lines),
		} {
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s has %v, want %v", name, got, want)
			}
		}
		return nil
	})
	out := srv.stdout.String()
	for _, f := range diagnose(t) {
		if n := strings.Count(out, "] "+f.Rule+" — "); n != 1 {
			t.Errorf("terminal shows %s in full %d times, want once:\n%s", f.Rule, n, out)
		}
	}
}

// flakySink fails every delivery while down, and keeps what it took.
type flakySink struct {
	mu     sync.Mutex
	down   bool
	failed int
	got    []finding.Finding
}

func (f *flakySink) Announce(_ context.Context, fs []finding.Finding) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.down {
		f.failed++
		return errors.New("sink down")
	}
	f.got = append(f.got, fs...)
	return nil
}

func (f *flakySink) Close() error { return nil }

func (f *flakySink) state() (failed int, got []finding.Finding) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed, slices.Clone(f.got)
}

// Issue 22 item 6, in both modes: a version counts as announced only once
// every sink took it. While one sink fails, the others get the findings,
// but /api/findings (the stored, announced versions) does not show them,
// and the failing sink is given them again until it takes them, under the
// revision they were first delivered with. Fails where a version is stored
// (or, on a cluster, claimed in KV) as announced before a later sink took
// it.
func TestAnnouncedOnceEverySinkTookIt(t *testing.T) {
	for _, mode := range []string{"single", "cluster"} {
		t.Run(mode, func(t *testing.T) {
			flaky := &flakySink{down: true}
			cfg := Config{Sinks: []sink.Sink{flaky}}
			if mode == "cluster" {
				srv := testutil.RunJetStreamServer(t)
				cfg.NATS.URL = srv.ClientURL()
				cfg.Cluster = ClusterConfig{Partitions: 2, Member: "a", LeaseTTL: 2 * time.Second}
			}
			r := startServer(t, cfg)
			sub := subscribeFindings(t, r.addrs.NATS)
			nc := connectRetrying(t, r.addrs.NATS)
			js, _ := jetstream.New(nc)
			if mode == "cluster" {
				testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
					if n := ownedOf(t, r.addrs.HTTP); n != 2 {
						return fmt.Errorf("%d of 2 partitions owned", n)
					}
					return nil
				})
			}
			publishRecords(t, js, seedRecords(t), 50)
			var want []string
			for _, f := range diagnose(t) {
				want = append(want, f.ID)
			}
			slices.Sort(want)
			idsOf := func(fs []finding.Finding) []string {
				set := map[string]bool{}
				for _, f := range fs {
					set[f.ID] = true
				}
				return slices.Sorted(maps.Keys(set))
			}
			// The other sinks took them; the failing one is retried.
			testutil.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
				if failed, _ := flaky.state(); failed < 3 {
					return fmt.Errorf("the failing sink was tried %d times", failed)
				}
				if got := idsOf(sub.all()); !slices.Equal(got, want) {
					return fmt.Errorf("NATS has %v, want %v", got, want)
				}
				return nil
			})
			if got := getFindings(t, r.addrs.HTTP); len(got) != 0 {
				t.Errorf("/api/findings shows %d findings as announced while a sink had not taken them", len(got))
			}
			flaky.mu.Lock()
			flaky.down = false
			flaky.mu.Unlock()
			testutil.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
				_, got := flaky.state()
				if ids := idsOf(got); !slices.Equal(ids, want) {
					return fmt.Errorf("the sink that failed has %v, want %v", ids, want)
				}
				if ids := idsOf(getFindings(t, r.addrs.HTTP)); !slices.Equal(ids, want) {
					return fmt.Errorf("/api/findings has %v, want %v", ids, want)
				}
				return nil
			})
			// Delivered again, not anew: one content per (id, revision).
			byRev := map[string]finding.Finding{}
			_, got := flaky.state()
			for _, f := range append(sub.all(), got...) {
				k := fmt.Sprintf("%s@%d", f.ID, f.Revision)
				if old, ok := byRev[k]; ok && (old.Updates != f.Updates || old.Summary != f.Summary) {
					t.Errorf("%s delivered as two versions (updates %d and %d)", k, old.Updates, f.Updates)
				}
				byRev[k] = f
			}
		})
	}
}

// blockingSink takes nothing: it waits until its context ends.
type blockingSink struct{ calls atomic.Int64 }

func (b *blockingSink) Announce(ctx context.Context, _ []finding.Finding) error {
	b.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

func (b *blockingSink) Close() error { return nil }

// Issue 22 item 6: a sink that hangs holds neither the lane (the records
// after the finding are still indexed) nor the shutdown (its delivery is
// cancelled). Fails where findings are announced on the lane under
// context.Background().
func TestSlowSinkHoldsNothing(t *testing.T) {
	slow := &blockingSink{}
	r := startServer(t, Config{Sinks: []sink.Sink{slow}})
	nc := connectRetrying(t, r.addrs.NATS)
	js, _ := jetstream.New(nc)
	recs := seedRecords(t)
	publishRecords(t, js, recs, 50)
	testutil.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if slow.calls.Load() == 0 {
			return errors.New("the sink was not called yet")
		}
		return nil
	})
	testutil.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if n := int(metricValue(t, r.addrs.HTTP, "faultline_records_consumed_total")); n != len(recs) {
			return fmt.Errorf("%d of %d records consumed while a sink hangs", n, len(recs))
		}
		return nil
	})
	done := make(chan error, 1)
	start := time.Now()
	go func() { done <- r.stop() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
		t.Logf("stopped in %v with a sink that hangs", time.Since(start))
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop within 20 s: a hanging sink holds the shutdown")
	}
}
