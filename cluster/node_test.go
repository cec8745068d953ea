package cluster

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/natstest"
	"github.com/faultline/faultline/internal/testutil"
)

func TestAssignBalancesAndMovesLittle(t *testing.T) {
	for _, tc := range []struct {
		parts   int
		members []string
	}{
		{12, []string{"analyzer-1", "analyzer-2", "analyzer-3"}},
		{6, []string{"a", "b", "c"}},
		{12, []string{"S-1", "S-2"}},
		{5, []string{"x", "y", "z", "w"}},
		{12, []string{"node-7f3a", "node-0c1d", "node-9e22"}},
	} {
		owners := Assign(tc.parts, tc.members)
		load := map[string]int{}
		for _, m := range owners {
			load[m]++
		}
		lo, hi := tc.parts/len(tc.members), (tc.parts+len(tc.members)-1)/len(tc.members)
		for _, m := range tc.members {
			if load[m] < lo || load[m] > hi {
				t.Errorf("%d partitions over %v: %s owns %d, want %d..%d (%v)", tc.parts, tc.members, m, load[m], lo, hi, owners)
			}
		}
		rev := slices.Clone(tc.members)
		slices.Reverse(rev)
		if again := Assign(tc.parts, rev); !slices.Equal(again, owners) {
			t.Errorf("the order of the member list changed the answer: %v, then %v", owners, again)
		}
		// A member leaving: the partitions it did not own mostly stay.
		left := tc.members[len(tc.members)-1]
		after := Assign(tc.parts, tc.members[:len(tc.members)-1])
		moved := 0
		for p := range tc.parts {
			if owners[p] != left && after[p] != owners[p] {
				moved++
			}
		}
		if moved > hi {
			t.Errorf("%d partitions over %v: %d partitions of members that stayed moved when %s left", tc.parts, tc.members, moved, left)
		}
	}
	if got := Assign(3, nil); !slices.Equal(got, []string{"", "", ""}) {
		t.Errorf("no members: %v", got)
	}
}

// holdings records who runs each partition, and fails the test if two
// members ever run one at once.
type holdings struct {
	t      *testing.T
	mu     sync.Mutex
	holder map[int]string
	starts int
	stops  []stop
}

// stop is a member's work on a partition ending.
type stop struct {
	p      int
	member string
	at     time.Time
}

// stopsSince lists the partitions whose work ended since t, and by whom.
func (h *holdings) stopsSince(t time.Time) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, s := range h.stops {
		if !s.at.Before(t) {
			out = append(out, fmt.Sprintf("p%d by %s at +%v", s.p, s.member, s.at.Sub(t).Round(10*time.Millisecond)))
		}
	}
	return out
}

func (h *holdings) own(member string) OwnFunc {
	return func(ctx context.Context, l *Lease) {
		h.mu.Lock()
		if other := h.holder[l.Partition]; other != "" {
			h.t.Errorf("partition %d run by %s while %s still runs it", l.Partition, member, other)
		}
		h.holder[l.Partition] = member
		h.starts++
		h.mu.Unlock()
		<-ctx.Done()
		h.mu.Lock()
		if h.holder[l.Partition] == member {
			delete(h.holder, l.Partition)
		}
		h.stops = append(h.stops, stop{l.Partition, member, time.Now()})
		h.mu.Unlock()
	}
}

// count is how many partitions are run now.
func (h *holdings) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.holder)
}

// owners returns partition -> member, and an error unless all parts are run.
func (h *holdings) owners(parts int) (map[int]string, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.holder) != parts {
		return nil, fmt.Errorf("%d of %d partitions run: %v", len(h.holder), parts, h.holder)
	}
	out := map[int]string{}
	for p, m := range h.holder {
		out[p] = m
	}
	return out, nil
}

type member struct {
	node   *Node
	nc     *nats.Conn
	cancel context.CancelFunc
	done   chan struct{}
}

func startMember(t *testing.T, url, name string, parts int, ttl time.Duration, h *holdings) *member {
	t.Helper()
	return startMemberWith(t, url, name, parts, ttl, h, nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
}

func startMemberWith(t *testing.T, url, name string, parts int, ttl time.Duration, h *holdings, opts ...nats.Option) *member {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	n, err := Join(ctx, js, Options{Member: name, Partitions: parts, Replicas: 1, TTL: ttl,
		Log: slog.New(slog.NewTextHandler(tlog{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	rctx, stop := context.WithCancel(context.Background())
	m := &member{node: n, nc: nc, cancel: stop, done: make(chan struct{})}
	go func() { defer close(m.done); n.Run(rctx, h.own(name)) }()
	t.Cleanup(func() { stop(); <-m.done })
	return m
}

func TestLeasesBalanceAndFailOver(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	const parts, ttl = 12, 2 * time.Second
	h := &holdings{t: t, holder: map[int]string{}}
	var ms []*member
	for i := range 3 {
		ms = append(ms, startMember(t, srv.ClientURL(), "m"+strconv.Itoa(i+1), parts, ttl, h))
	}
	// Balanced as rendezvous hashing says, once all three see each other.
	want := map[int]string{}
	for p := range parts {
		want[p] = Assign(parts, []string{"m1", "m2", "m3"})[p]
	}
	testutil.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		got, err := h.owners(parts)
		if err != nil {
			return err
		}
		for p := range parts {
			if got[p] != want[p] {
				return fmt.Errorf("partition %d run by %s, want %s", p, got[p], want[p])
			}
		}
		return nil
	})
	for _, m := range ms {
		if owned := m.node.Owned(); len(owned) == 0 {
			t.Errorf("%s owns nothing", m.node.ID())
		}
	}

	// m3 goes away cleanly: its partitions move at once.
	ms[2].cancel()
	<-ms[2].done
	start := time.Now()
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		got, err := h.owners(parts)
		if err != nil {
			return err
		}
		for p, m := range got {
			if m == "m3" || m != Assign(parts, []string{"m1", "m2"})[p] {
				return fmt.Errorf("partition %d run by %s", p, m)
			}
		}
		return nil
	})
	t.Logf("partitions of a member that left re-owned in %v", time.Since(start).Round(time.Millisecond))

	// m2 is cut off from NATS (as a frozen or partitioned process would
	// be): it stops its partitions before m1 can take them (holdings
	// fails the test on an overlap), and m1 takes them within ttl or so.
	owned2 := ms[1].node.Owned()
	ms[1].nc.Close()
	start = time.Now()
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		got, err := h.owners(parts)
		if err != nil {
			return err
		}
		for p, m := range got {
			if m != "m1" {
				return fmt.Errorf("partition %d still run by %s", p, m)
			}
		}
		return nil
	})
	took := time.Since(start)
	t.Logf("partitions %v of a member cut off re-owned in %v (lease TTL %v)", owned2, took.Round(time.Millisecond), ttl)
	if e := ms[0].node.Epochs(); len(e) != parts {
		t.Errorf("m1 epochs: %v", e)
	}
}

func TestLeaseEpochsGrow(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	h := &holdings{t: t, holder: map[int]string{}}
	a := startMember(t, srv.ClientURL(), "a", 1, 2*time.Second, h)
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error { _, err := h.owners(1); return err })
	e1 := a.node.Epochs()[0]
	a.cancel()
	<-a.done
	b := startMember(t, srv.ClientURL(), "b", 1, 2*time.Second, h)
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error { _, err := h.owners(1); return err })
	if e2 := b.node.Epochs()[0]; e2 <= e1 {
		t.Errorf("epoch of the second owner %d, not after the first's %d", e2, e1)
	}
	if got := b.node.Members(); !slices.ContainsFunc(got, func(m Member) bool { return m.ID == "b" }) || slices.ContainsFunc(got, func(m Member) bool { return m.ID == "a" }) {
		t.Errorf("members after a left: %+v", got)
	}
}

// A three-server cluster with one server stopped keeps leases moving.
func TestLeasesOnAClusterWithAServerDown(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	const parts = 6
	h := &holdings{t: t, holder: map[int]string{}}
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := Join(ctx, js, Options{Member: "setup", Partitions: parts, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	a := startMember(t, c.URLs(), "a", parts, 3*time.Second, h)
	startMember(t, c.URLs(), "b", parts, 3*time.Second, h)
	// The members asked for 1 replica; the buckets made with 3 keep 3.
	for _, b := range []string{LeasesBucket, ShardBucket(1), ShardBucket(2), FindingsBucket, StateBucket} {
		if r := existingReplicas(ctx, js, b, 0); r != 3 {
			t.Errorf("bucket %s has %d replicas, want the 3 it was made with", b, r)
		}
	}
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error { _, err := h.owners(parts); return err })
	c.Stop(0)
	a.cancel()
	<-a.done
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		got, err := h.owners(parts)
		if err != nil {
			return err
		}
		for p, m := range got {
			if m != "b" {
				return fmt.Errorf("partition %d run by %s", p, m)
			}
		}
		return nil
	})
}

// Members starting together on a replicated cluster all join: concurrent
// creates of one bucket can go unanswered, and Join must not wait on them.
func TestConcurrentJoin(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			nc, err := nats.Connect(c.URL(i))
			if err != nil {
				t.Error(err)
				return
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := Join(ctx, js, Options{Member: "m" + strconv.Itoa(i), Partitions: 3, Replicas: 3}); err != nil {
				t.Errorf("member %d: %v", i, err)
			}
		})
	}
	wg.Wait()
}

// tlog sends a node's log to t.Log (shown with -v or on failure).
type tlog struct{ t *testing.T }

func (w tlog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// A renewal answered after the lease's deadline passed (its work already
// cancelled) does not make it valid again: the lease would be held with
// nobody working on it.
func TestLateRenewalDoesNotRevive(t *testing.T) {
	n := &Node{start: time.Now(), tick: 20 * time.Millisecond, opts: Options{TTL: 100 * time.Millisecond}}
	ctx, cancel := context.WithCancel(context.Background())
	l := &Lease{n: n, cancel: cancel}
	for k := range quorum {
		l.extend(k, 1, time.Since(n.start))
	}
	if !l.Valid() {
		t.Fatal("a lease just extended is not valid")
	}
	select {
	case <-ctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the work was not cancelled at the deadline")
	}
	for k := range Shards {
		l.extend(k, 2, time.Since(n.start)) // the late answers
	}
	if l.Valid() {
		t.Error("a lease renewed after its deadline is valid again")
	}
}

// TestMissingMemberMovesNothing: a member missing from the heartbeats for
// less than a TTL while it still renews its leases (in CI, a member whose
// server was frozen, its connection moving to another) must not make the
// other two hand a partition between themselves and back when it
// reappears: each move stops the partition for a moment, and one came 10.9
// s after a freeze, past TestLeasesSurviveAFrozenServer's 2 x TTL.
func TestMissingMemberMovesNothing(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	const parts, ttl = 6, 2 * time.Second
	all, survivors := []string{"m0", "m1", "m2"}, []string{"m0", "m1"}
	// Without the keeping, m2 missing moves a partition from m0 to m1 or
	// back: with these names and parts it does.
	before, after := Assign(parts, all), Assign(parts, survivors)
	moved := 0
	for p := range parts {
		if before[p] != "m2" && before[p] != after[p] {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("Assign moves nothing between m0 and m1 when m2 is missing (%v -> %v): the test would not test", before, after)
	}
	h := &holdings{t: t, holder: map[int]string{}}
	for _, m := range all {
		startMember(t, srv.ClientURL(), m, parts, ttl, h)
	}
	testutil.CheckFor(t, 15*time.Second, 50*time.Millisecond, func() error {
		got, err := h.owners(parts)
		if err != nil {
			return err
		}
		for p := range parts {
			if got[p] != before[p] {
				return fmt.Errorf("partition %d run by %s, want %s", p, got[p], before[p])
			}
		}
		return nil
	})

	// m2's heartbeat deleted from every shard as soon as it is written,
	// for 0.75 x TTL: the others do not see it, its leases stay renewed.
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var kvs []jetstream.KeyValue
	for k := range Shards {
		kv, err := js.KeyValue(ctx, ShardBucket(k))
		if err != nil {
			t.Fatal(err)
		}
		kvs = append(kvs, kv)
	}
	start := time.Now()
	for time.Since(start) < ttl*3/4 {
		for _, kv := range kvs {
			_ = kv.Delete(ctx, memberKey("m2")) // none there yet: nothing to delete
		}
		time.Sleep(5 * time.Millisecond)
	}
	// m2 back: watch two more TTLs for a move.
	time.Sleep(2 * ttl)
	if stops := h.stopsSince(start); len(stops) > 0 {
		t.Errorf("partitions stopped while m2's heartbeat was missing for %v and after: %v", ttl*3/4, stops)
	}
	if got, err := h.owners(parts); err != nil {
		t.Error(err)
	} else {
		for p := range parts {
			if got[p] != before[p] {
				t.Errorf("partition %d run by %s, want %s", p, got[p], before[p])
			}
		}
	}
}
