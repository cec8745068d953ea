package server

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/transport"
)

// batchOf is n filler records of clusters, under tag (their IDs).
func batchOf(tag string, clusters []string, n int) []parsers.Record {
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var out []parsers.Record
	for i := range n {
		c := clusters[i/100%len(clusters)]
		out = append(out, parsers.Record{ID: fmt.Sprintf("%s-%s-%d", tag, c, i), Cluster: c, Node: "worker-" + strconv.Itoa(i%3),
			File: "/var/log/" + tag + ".log", Offset: int64(i) * 64, Line: i + 1, Time: base.Add(time.Duration(i) * time.Millisecond),
			Text: fmt.Sprintf("INFO %s worker %d step %d heartbeat ok", tag, i%3, i)})
	}
	return out
}

// wantCount waits until a search of everything on httpAddr counts n with
// partial empty.
func wantCount(t *testing.T, httpAddr string, n int, within time.Duration, what string) {
	t.Helper()
	testutil.CheckFor(t, within, 100*time.Millisecond, func() error {
		res, err := searchResult(httpAddr)
		if err != nil {
			return err
		}
		if res.Total != uint64(n) || len(res.Partial) > 0 {
			return fmt.Errorf("%s: %d records found (partial %v), want %d", what, res.Total, res.Partial, n)
		}
		return nil
	})
}

// pushOut publishes batch B, 100 records a message, until the stream no
// longer holds the messages up to lastA (its byte limit), and returns B.
func pushOut(t *testing.T, js jetstream.JetStream, clusters []string, lastA uint64) []parsers.Record {
	t.Helper()
	var batchB []parsers.Record
	var firstB uint64
	st, err := js.Stream(t.Context(), transport.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		if i > 200 {
			t.Fatal("the stream keeps batch A")
		}
		recs := batchOf("b"+strconv.Itoa(i), clusters[i%len(clusters):i%len(clusters)+1], 100)
		pl := publishBatches(t, js, recs, 100, func(x, y *parsers.Record) bool { return true })
		if firstB == 0 {
			firstB = pl[0].seq
		}
		batchB = append(batchB, recs...)
		info, err := st.Info(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if info.State.FirstSeq > lastA {
			if info.State.FirstSeq > firstB {
				t.Fatalf("the stream dropped batch B's first messages too (first sequence %d, B from %d)", info.State.FirstSeq, firstB)
			}
			return batchB
		}
	}
}

// TestIndexKeepsWhatTheStreamKeeps (issue 22 item 5), on one machine: the
// stream (byte-limited) drops batch A as batch B comes in, and A leaves
// the index too. Before, the index kept A for good.
func TestIndexKeepsWhatTheStreamKeeps(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	a := startServer(t, Config{NATS: transport.NATSOptions{URL: srv.ClientURL()}, Durable: "analyzer", PruneEvery: 200 * time.Millisecond,
		Stream: transport.StreamOptions{MaxBytes: 512 << 10}})
	nc := connectRetrying(t, srv.ClientURL())
	js, _ := jetstream.New(nc)
	clusters := []string{"c1", "c2", "c3"}
	batchA := batchOf("a", clusters, 1200)
	placedA := publishBatches(t, js, batchA, 100, func(x, y *parsers.Record) bool { return x.Cluster == y.Cluster })
	wantCount(t, a.addrs.HTTP, len(batchA), 60*time.Second, "batch A")
	// The indexes mark what they hold with the stream's last sequence
	// every PruneEvery: a mark taken once B is coming holds A's last
	// blocks until B's first messages go too.
	time.Sleep(time.Second)
	batchB := pushOut(t, js, clusters, placedA[len(placedA)-1].seq)
	wantCount(t, a.addrs.HTTP, len(batchB), 30*time.Second, "batch A gone from the stream, B in it")
	if n := metricValue(t, a.addrs.HTTP, "faultline_index_pruned_records_total"); n != float64(len(batchA)) {
		t.Errorf("faultline_index_pruned_records_total %v, want %d", n, len(batchA))
	}
}

// TestClusterIndexKeepsWhatTheStreamKeeps (issue 22 item 5): the stream
// (byte-limited) drops batch A as batch B comes in; A leaves every
// member's index too, so a search counts B alone before a partition moves
// and after (its new owner indexes it from the stream). Before, the
// indexes kept A for good: a search counted A and B while the owners
// stayed, and lost the A records of each partition that moved.
func TestClusterIndexKeepsWhatTheStreamKeeps(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	const parts = 4
	cfg := func(member string) Config {
		return Config{NATS: transport.NATSOptions{URL: srv.ClientURL()}, Durable: "analyzer", PruneEvery: 200 * time.Millisecond,
			Stream:  transport.StreamOptions{MaxBytes: 512 << 10},
			Cluster: ClusterConfig{Partitions: parts, Member: member, LeaseTTL: 2 * time.Second}}
	}
	a := startServer(t, cfg("a"))
	b := startServer(t, cfg("b"))
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if na, nb := ownedOf(t, a.addrs.HTTP), ownedOf(t, b.addrs.HTTP); na+nb != parts || na == 0 || nb == 0 {
			return fmt.Errorf("a owns %d, b %d of %d partitions", na, nb, parts)
		}
		return nil
	})
	nc := connectRetrying(t, srv.ClientURL())
	js, _ := jetstream.New(nc)
	clusters := []string{"c1", "c2", "c3", "c4", "c5", "c6"}
	batchA := batchOf("a", clusters, 1200)
	placedA := publishBatches(t, js, batchA, 100, func(x, y *parsers.Record) bool { return x.Cluster == y.Cluster })
	wantCount(t, a.addrs.HTTP, len(batchA), 60*time.Second, "batch A")
	// The indexes mark what they hold with the stream's last sequence
	// every PruneEvery: a mark taken once B is coming holds A's last
	// blocks until B's first messages go too.
	time.Sleep(time.Second)
	lastA := placedA[len(placedA)-1].seq

	batchB := pushOut(t, js, clusters, lastA)
	wantCount(t, a.addrs.HTTP, len(batchB), 30*time.Second, "batch A gone from the stream, B in it, on a")
	wantCount(t, b.addrs.HTTP, len(batchB), 30*time.Second, "on b")

	// b leaves: a takes its partitions and indexes them from the stream.
	b.stop()
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if n := ownedOf(t, a.addrs.HTTP); n != parts {
			return fmt.Errorf("a owns %d of %d", n, parts)
		}
		return nil
	})
	wantCount(t, a.addrs.HTTP, len(batchB), 30*time.Second, "after b's partitions moved to a")
}

// TestClusterDropsMovedCopies (issue 22 item 5): a owns every partition
// and indexes all records; b joins and takes its share; once b holds its
// partitions in full, a drops its copies (its index keeps a's partitions'
// records alone). When b leaves, a indexes them again from the stream:
// every record found once. Before, a kept every copy for good (1.21-1.67x
// the records on disk across a cluster).
func TestClusterDropsMovedCopies(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	const parts = 4
	cfg := func(member string) Config {
		return Config{NATS: transport.NATSOptions{URL: srv.ClientURL()}, Durable: "analyzer", PruneEvery: 200 * time.Millisecond,
			Cluster: ClusterConfig{Partitions: parts, Member: member, LeaseTTL: 2 * time.Second}}
	}
	a := startServer(t, cfg("a"))
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if n := ownedOf(t, a.addrs.HTTP); n != parts {
			return fmt.Errorf("a owns %d of %d", n, parts)
		}
		return nil
	})
	nc := connectRetrying(t, srv.ClientURL())
	js, _ := jetstream.New(nc)
	recs := batchOf("m", []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"}, 2400)
	publishRecords(t, js, recs, 100)
	wantCount(t, a.addrs.HTTP, len(recs), 60*time.Second, "a alone")
	if n := metricValue(t, a.addrs.HTTP, "faultline_index_records"); n != float64(len(recs)) {
		t.Fatalf("a's faultline_index_records %v, want %d", n, len(recs))
	}

	b := startServer(t, cfg("b"))
	per := make([]int, parts)
	for _, r := range recs {
		per[transport.PartitionOf(r.Cluster, parts)]++
	}
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		st, err := getStatus(a.addrs.HTTP)
		if err != nil {
			return err
		}
		mine := 0
		for _, l := range st.Leases {
			if l.Owner == "a" {
				mine += per[l.Partition]
			}
		}
		if ownedOf(t, b.addrs.HTTP) == 0 {
			return fmt.Errorf("b owns nothing yet")
		}
		if n := metricValue(t, a.addrs.HTTP, "faultline_index_records"); n != float64(mine) {
			return fmt.Errorf("a's index holds %v records, want its own partitions' %d", n, mine)
		}
		return nil
	})
	wantCount(t, a.addrs.HTTP, len(recs), 30*time.Second, "a and b")
	if n := metricValue(t, a.addrs.HTTP, "faultline_index_pruned_records_total"); n <= 0 {
		t.Errorf("a's faultline_index_pruned_records_total %v", n)
	}

	b.stop()
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if n := ownedOf(t, a.addrs.HTTP); n != parts {
			return fmt.Errorf("a owns %d of %d", n, parts)
		}
		return nil
	})
	wantCount(t, a.addrs.HTTP, len(recs), 60*time.Second, "b gone, its partitions back with a")
	if n := metricValue(t, a.addrs.HTTP, "faultline_index_records"); n != float64(len(recs)) {
		t.Errorf("a's faultline_index_records %v, want %d", n, len(recs))
	}
}
