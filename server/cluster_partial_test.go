package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/natstest"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/transport"
)

// searchResult is one search of everything on httpAddr, as the API gives it.
func searchResult(httpAddr string) (index.Result, error) {
	var res index.Result
	resp, err := http.Get("http://" + httpAddr + "/api/search?size=-1")
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return res, fmt.Errorf("search: %s", resp.Status)
	}
	return res, json.NewDecoder(resp.Body).Decode(&res)
}

// TestClusterSearchSaysWhatIsMissing (issue 22 item 1): analyzer b's link
// to NATS freezes; its leases lapse, analyzer a takes its partitions over
// and indexes them. Throughout, a search on a either counts every record
// or names the partitions it lacks (unowned, then re-indexing) with the
// share of the stream they hold, and counts at least every record of the
// others: never a short count with partial empty.
func TestClusterSearchSaysWhatIsMissing(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	proxy := natstest.StartProxy(t, srv.Addr().String())
	const parts = 4
	cfg := func(member, url string) Config {
		return Config{NATS: transport.NATSOptions{URL: url}, Durable: "analyzer",
			Cluster: ClusterConfig{Partitions: parts, Member: member, LeaseTTL: 2 * time.Second}}
	}
	a := startServer(t, cfg("a", srv.ClientURL()))
	b := startServer(t, cfg("b", proxy.URL()))
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if na, nb := ownedOf(t, a.addrs.HTTP), ownedOf(t, b.addrs.HTTP); na+nb != parts || na == 0 || nb == 0 {
			return fmt.Errorf("a owns %d, b %d of %d partitions", na, nb, parts)
		}
		return nil
	})
	nc := connectRetrying(t, srv.ClientURL())
	js, _ := jetstream.New(nc)
	recs := clusterInput(t, []string{"c1", "c2", "c3", "c4", "c5", "c6"}, 6000)
	publishRecords(t, js, recs, 200)
	wantSearchable(t, a.addrs.HTTP, recs, 60*time.Second)
	per := make([]uint64, parts)
	for _, r := range recs {
		per[transport.PartitionOf(r.Cluster, parts)]++
	}

	proxy.Freeze()
	frozen := time.Now()
	reasons := map[string]bool{}
	reindexSeen := false
	var complete time.Duration
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		res, err := searchResult(a.addrs.HTTP)
		if err != nil {
			return err
		}
		if len(res.Partial) == 0 {
			if res.Total != uint64(len(recs)) {
				t.Fatalf("%v after the freeze: %d of %d records found, partial empty: a silent undercount", time.Since(frozen).Round(time.Millisecond), res.Total, len(recs))
			}
			if ownedOf(t, a.addrs.HTTP) != parts {
				return fmt.Errorf("a owns %d partitions", ownedOf(t, a.addrs.HTTP))
			}
			complete = time.Since(frozen)
			return nil
		}
		var missing []int
		var least uint64
		for _, g := range res.Missing {
			reasons[g.Reason] = true
			missing = append(missing, g.Partition)
		}
		for p := range parts {
			if !slices.Contains(missing, p) {
				least += per[p]
			}
		}
		// /metrics says which partitions a re-indexes, and how far.
		m := scrape(t, a.addrs.HTTP)
		for _, g := range res.Missing {
			l := fmt.Sprintf(`{partition="%d"}`, g.Partition)
			if g.Reason == index.GapReindexing && m["faultline_partition_reindexing"+l] == 1 &&
				m["faultline_partition_indexed_seq"+l] < m["faultline_partition_reindex_target_seq"+l] {
				reindexSeen = true
			}
		}
		if len(res.Missing) == 0 || res.MissingShare <= 0 || res.MissingShare > 1 {
			t.Fatalf("partial %v without the partitions missing or their share (%v, %v)", res.Partial, res.Missing, res.MissingShare)
		}
		if res.Total < least || res.Total > uint64(len(recs)) {
			t.Fatalf("%d records found with partitions %v missing: want %d..%d", res.Total, missing, least, len(recs))
		}
		return fmt.Errorf("partial: %v (%.0f%% missing)", res.Partial, 100*res.MissingShare)
	})
	if !reasons[index.GapUnowned] || !reasons[index.GapReindexing] {
		t.Errorf("the take-over was seen missing for %v, want both %q and %q", reasons, index.GapUnowned, index.GapReindexing)
	}
	if !reindexSeen {
		t.Error("a's /metrics never showed a partition re-indexing (faultline_partition_reindexing 1, faultline_partition_indexed_seq short of faultline_partition_reindex_target_seq) while a search said so")
	}
	// Done: every partition's index up to its target, none re-indexing.
	m := scrape(t, a.addrs.HTTP)
	for p := range parts {
		l := fmt.Sprintf(`{partition="%d"}`, p)
		if m["faultline_partition_reindexing"+l] != 0 || m["faultline_partition_indexed_seq"+l] < m["faultline_partition_reindex_target_seq"+l] {
			t.Errorf("partition %d after the take-over: reindexing %v, indexed %v of %v", p, m["faultline_partition_reindexing"+l], m["faultline_partition_indexed_seq"+l], m["faultline_partition_reindex_target_seq"+l])
		}
	}
	t.Logf("every record found again %v after b's link froze; missing meanwhile: %v", complete.Round(time.Millisecond), reasons)
	proxy.Thaw()
	_ = b
}

func healthCode(httpAddr string) int {
	resp, err := http.Get("http://" + httpAddr + "/healthz")
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestClusterZombieRejoins (issue 22 item 3): analyzer b's NATS link goes
// silent (every byte held, nothing closed). Within about the lease TTL b
// gives its partitions up and its /healthz says 503, while a owns them
// all. Then its network comes back under a new address: the old
// connection stays silent for good, a new one works. b notices the dead
// connection within two pings, reconnects, and owns partitions again;
// /healthz is 200 again. Before, with the client's 2-minute pings, b stayed
// connected to nothing, owning nothing, with /healthz ok.
func TestClusterZombieRejoins(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	proxy := natstest.StartProxy(t, srv.Addr().String())
	const parts, ttl = 4, 2 * time.Second
	cfg := func(member, url string) Config {
		return Config{NATS: transport.NATSOptions{URL: url}, Durable: "analyzer",
			Cluster: ClusterConfig{Partitions: parts, Member: member, LeaseTTL: ttl}}
	}
	a := startServer(t, cfg("a", srv.ClientURL()))
	b := startServer(t, cfg("b", proxy.URL()))
	both := func() error {
		if na, nb := ownedOf(t, a.addrs.HTTP), ownedOf(t, b.addrs.HTTP); na+nb != parts || na == 0 || nb == 0 {
			return fmt.Errorf("a owns %d, b %d of %d partitions", na, nb, parts)
		}
		return nil
	}
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, both)

	proxy.Freeze()
	cut := time.Now()
	testutil.CheckFor(t, 3*ttl, 50*time.Millisecond, func() error {
		if code := healthCode(b.addrs.HTTP); code != http.StatusServiceUnavailable {
			return fmt.Errorf("b's /healthz %d, cut off for %v", code, time.Since(cut).Round(time.Millisecond))
		}
		if nb, na := ownedOf(t, b.addrs.HTTP), ownedOf(t, a.addrs.HTTP); nb != 0 || na != parts {
			return fmt.Errorf("b owns %d, a %d partitions", nb, na)
		}
		// The cluster's metrics say it too.
		if v := metricValue(t, b.addrs.HTTP, "faultline_nats_connected"); v != 0 {
			return fmt.Errorf("b's faultline_nats_connected %v", v)
		}
		if v := metricValue(t, a.addrs.HTTP, "faultline_cluster_members"); v != 1 {
			return fmt.Errorf("a's faultline_cluster_members %v", v)
		}
		if v := metricValue(t, a.addrs.HTTP, "faultline_cluster_partitions_unowned"); v != 0 {
			return fmt.Errorf("a's faultline_cluster_partitions_unowned %v", v)
		}
		m := scrape(t, b.addrs.HTTP)
		for _, op := range []string{"heartbeat", "renew"} {
			if v := m[`faultline_cluster_kv_failures_total{op="`+op+`"}`]; v < 1 {
				return fmt.Errorf("b's faultline_cluster_kv_failures_total{op=%q} %v", op, v)
			}
		}
		if _, ok := scrape(t, a.addrs.HTTP)[`faultline_cluster_kv_failures_total{op="heartbeat"}`]; !ok {
			return errors.New("a's /metrics without faultline_cluster_kv_failures_total")
		}
		return nil
	})
	t.Logf("cut off: b's /healthz 503 and its partitions with a %v after", time.Since(cut).Round(time.Millisecond))

	proxy.Strand()
	back := time.Now()
	testutil.CheckFor(t, 3*ttl, 50*time.Millisecond, func() error {
		if code := healthCode(b.addrs.HTTP); code != http.StatusOK {
			return fmt.Errorf("b's /healthz %d", code)
		}
		return both()
	})
	t.Logf("new address: b a member owning partitions again %v after", time.Since(back).Round(time.Millisecond))
}
