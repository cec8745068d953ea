package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/natstest"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/transport"
)

// clusterInput is what a cluster test publishes: the seed story told in
// several clusters (so findings come from several partitions), and filler
// lines in each, spread over the nodes.
func clusterInput(t *testing.T, clusters []string, filler int) []parsers.Record {
	t.Helper()
	var out []parsers.Record
	for _, c := range clusters {
		out = append(out, storyRecords(t, seedDir, c, 0)...)
	}
	base := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range filler {
		// Runs of lines from one node, as a shipper batches them.
		c := clusters[i/200%len(clusters)]
		node := "worker-" + strconv.Itoa(i/40%5)
		out = append(out, parsers.Record{ID: fmt.Sprintf("fill-%s-%d", c, i), Cluster: c, Node: node,
			File: "/var/log/filler.log", Offset: int64(i) * 64, Line: i + 1, Time: base.Add(time.Duration(i) * time.Millisecond),
			Text: fmt.Sprintf("INFO worker %d step %d heartbeat ok", i%5, i)})
	}
	return out
}

// findingLog counts the finding messages of faultline.findings.> by (id,
// revision).
type findingLog struct {
	mu   sync.Mutex
	seen map[string]int
	body map[string]string // the first message of each (id, revision)
	diff map[string]bool   // (id, revision) that came again with another body
	last map[string]finding.Finding
}

func logFindings(t *testing.T, urls string) *findingLog {
	t.Helper()
	nc := connectRetrying(t, urls)
	fl := &findingLog{seen: map[string]int{}, body: map[string]string{}, diff: map[string]bool{}, last: map[string]finding.Finding{}}
	if _, err := nc.Subscribe("faultline.findings.>", func(m *nats.Msg) {
		var f finding.Finding
		if json.Unmarshal(m.Data, &f) != nil {
			return
		}
		fl.mu.Lock()
		k := f.ID + "@" + strconv.Itoa(f.Revision)
		fl.seen[k]++
		if b, ok := fl.body[k]; !ok {
			fl.body[k] = string(m.Data)
		} else if b != string(m.Data) {
			fl.diff[k] = true
		}
		if f.Revision > fl.last[f.ID].Revision {
			fl.last[f.ID] = f
		}
		fl.mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	nc.Flush()
	return fl
}

// check fails the test unless each id's revisions are 1..n, each
// announced once, or again as it was: delivery is at least once (a member
// frozen or killed after it delivered a version and before it confirmed it
// leaves it to the next owner, which delivers it again after
// cluster.ClaimGrace; docs/scaling.md), never two versions under one
// revision.
func (fl *findingLog) check(t *testing.T) map[string]finding.Finding {
	t.Helper()
	fl.mu.Lock()
	defer fl.mu.Unlock()
	for k, n := range fl.seen {
		switch {
		case fl.diff[k]:
			t.Errorf("finding %s announced %d times, not all alike: two versions under one revision", k, n)
		case n > 1:
			t.Logf("finding %s announced %d times, alike (at least once)", k, n)
		}
	}
	for id, f := range fl.last {
		for r := 1; r <= f.Revision; r++ {
			if fl.seen[id+"@"+strconv.Itoa(r)] == 0 {
				t.Errorf("finding %s: revision %d never announced (last %d)", id, r, f.Revision)
			}
		}
	}
	out := map[string]finding.Finding{}
	for id, f := range fl.last {
		out[id] = f
	}
	return out
}

// searchAll pages through every hit of q on the analyzer at httpAddr by
// cursor and returns the IDs in order and the total the first page gave.
func searchAll(t *testing.T, httpAddr, q string, size int) ([]string, uint64, error) {
	t.Helper()
	var ids []string
	var total uint64
	after := ""
	for page := 0; ; page++ {
		v := url.Values{"q": {q}, "size": {strconv.Itoa(size)}}
		if after != "" {
			v.Set("after", after)
		}
		resp, err := http.Get("http://" + httpAddr + "/api/search?" + v.Encode())
		if err != nil {
			return nil, 0, err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, 0, fmt.Errorf("search page %d: %s: %s", page, resp.Status, body)
		}
		var res index.Result
		if err := json.Unmarshal(body, &res); err != nil {
			return nil, 0, err
		}
		if len(res.Partial) > 0 {
			return nil, 0, fmt.Errorf("search page %d: partial, not answered by %v", page, res.Partial)
		}
		if page == 0 {
			total = res.Total
		}
		for _, h := range res.Hits {
			ids = append(ids, h.ID)
		}
		if res.Next == "" || len(res.Hits) == 0 {
			return ids, total, nil
		}
		after = res.Next
	}
}

// wantSearchable waits until a search on httpAddr counts as many hits as
// want has records (a cheap query), then pages through them all by cursor:
// exactly the records of want, each once.
func wantSearchable(t *testing.T, httpAddr string, want []parsers.Record, within time.Duration) {
	t.Helper()
	testutil.CheckFor(t, within, 250*time.Millisecond, func() error {
		n, err := searchTotal(httpAddr)
		if err != nil {
			return err
		}
		if n != uint64(len(want)) {
			return fmt.Errorf("%d hits, want %d", n, len(want))
		}
		ids, total, err := searchAll(t, httpAddr, "", 1000)
		if err != nil {
			return err
		}
		got := make(map[string]int, len(ids))
		for _, id := range ids {
			got[id]++
		}
		for id, n := range got {
			if n > 1 {
				return fmt.Errorf("record %s found %d times", id, n)
			}
		}
		missing := 0
		for _, r := range want {
			if got[r.ID] == 0 {
				missing++
			}
		}
		if missing > 0 || len(ids) != len(want) || total != uint64(len(want)) {
			return fmt.Errorf("%d hits paged (total %d), %d records missing, want %d", len(ids), total, missing, len(want))
		}
		return nil
	})
}

// wantTotal waits until a search on httpAddr counts n hits, all members
// answering.
func wantTotal(t *testing.T, httpAddr string, n int, within time.Duration) {
	t.Helper()
	testutil.CheckFor(t, within, 250*time.Millisecond, func() error {
		got, err := searchTotal(httpAddr)
		if err != nil {
			return err
		}
		if got != uint64(n) {
			return fmt.Errorf("%d hits, want %d", got, n)
		}
		return nil
	})
}

// wantClusterFindings waits until the findings on httpAddr are, for each of
// clusters, those diagnose gives for the seed story (want, as verdicts).
func wantClusterFindings(t *testing.T, httpAddr string, clusters, want []string) {
	t.Helper()
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		byCluster := map[string][]finding.Finding{}
		for _, f := range getFindings(t, httpAddr) {
			byCluster[f.Cluster] = append(byCluster[f.Cluster], f)
		}
		for _, cl := range clusters {
			if got := verdicts(byCluster[cl]); strings.Join(got, "\n") != strings.Join(want, "\n") {
				return fmt.Errorf("cluster %s findings:\n%s\nwant:\n%s", cl, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		}
		return nil
	})
}

// searchTotal is how many hits a search of everything counts.
func searchTotal(httpAddr string) (uint64, error) {
	resp, err := http.Get("http://" + httpAddr + "/api/search?size=-1")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var res index.Result
	if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
		return 0, err
	}
	if len(res.Partial) > 0 {
		return 0, fmt.Errorf("partial, not answered by %v", res.Partial)
	}
	return res.Total, nil
}

// startMember runs an analyzer of a cluster on the external NATS cluster c.
func startMember(t *testing.T, c *natstest.Cluster, name string, parts int) *running {
	t.Helper()
	return startServer(t, Config{NATS: transport.NATSOptions{URL: c.URLs()}, Durable: "analyzer",
		Cluster: ClusterConfig{Partitions: parts, Member: name, LeaseTTL: 2 * time.Second}})
}

func ownedOf(t *testing.T, httpAddr string) int {
	t.Helper()
	start := time.Now()
	resp, err := http.Get("http://" + httpAddr + "/metrics")
	if err != nil {
		return -1
	}
	defer func() {
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Logf("GET /metrics of %s took %v", httpAddr, d)
		}
	}()
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "faultline_partitions_owned "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Logf("faultline_partitions_owned %q: %v", v, err)
				return -1
			}
			return n
		}
	}
	return -1
}

// TestClusterServe: three analyzers share a partitioned stream on a
// three-server NATS cluster. Records of four clusters are each indexed once
// and found by a search on any analyzer; findings are announced once per
// version; when an analyzer stops, its partitions move and nothing is lost
// or doubled; when a NATS server stops, the same.
func TestClusterServe(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	fl := logFindings(t, c.URLs())
	const parts = 6
	a := startMember(t, c, "a", parts)
	b := startMember(t, c, "b", parts)
	cc := startMember(t, c, "c", parts)
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		n := ownedOf(t, a.addrs.HTTP) + ownedOf(t, b.addrs.HTTP) + ownedOf(t, cc.addrs.HTTP)
		if n != parts {
			return fmt.Errorf("%d of %d partitions owned", n, parts)
		}
		return nil
	})

	nc := connectRetrying(t, c.URLs())
	js, _ := jetstream.New(nc)
	clusters := []string{"c1", "c2", "c3", "c4"}
	recs := clusterInput(t, clusters, 4000)
	publishRecords(t, js, recs[:len(recs)/2], 50)
	wantSearchable(t, a.addrs.HTTP, recs[:len(recs)/2], 60*time.Second)

	// b stops mid-stream: its partitions move to a and c.
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := ownedOf(t, a.addrs.HTTP) + ownedOf(t, cc.addrs.HTTP); n != parts {
			return fmt.Errorf("%d of %d partitions owned", n, parts)
		}
		return nil
	})
	t.Logf("partitions of a stopped analyzer re-owned in %v", time.Since(start).Round(time.Millisecond))
	// The new owners started from the checkpoints b kept in KV (where the
	// live launches of its clusters began), not from nothing.
	fromCheckpoint := regexp.MustCompile(`"partition replay".*checkpoint_clusters=[1-9]`)
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if !fromCheckpoint.MatchString(a.log.String() + cc.log.String()) {
			return fmt.Errorf("no partition taken over replayed from a checkpoint")
		}
		return nil
	})
	// A NATS server stops too.
	c.Stop(1)
	publishRecords(t, js, recs[len(recs)/2:], 50)

	wantSearchable(t, a.addrs.HTTP, recs, 60*time.Second)
	wantSearchable(t, cc.addrs.HTTP, recs, 10*time.Second)

	// Every cluster's story gave its findings, each version announced once.
	want := verdicts(diagnose(t))
	wantClusterFindings(t, a.addrs.HTTP, clusters, want)
	announced := fl.check(t)
	if len(announced) != len(clusters)*len(want) {
		t.Errorf("%d findings announced, want %d", len(announced), len(clusters)*len(want))
	}
}

// TestEmbeddedClusterServe: three analyzers, no external NATS, their
// embedded servers clustered (serve --nats-cluster): a shipper-like
// publisher on any one of them feeds all three, the partitions spread
// over them, and a search on any finds every record once.
func TestEmbeddedClusterServe(t *testing.T) {
	cfgs := clusterConfigs(t, 3, "s3cret")
	var rs []*running
	for _, c := range cfgs {
		c.Cluster.Partitions, c.Cluster.LeaseTTL = 6, 2*time.Second
		c.Log = nil // startServer's
		rs = append(rs, launchServer(t, *c))
	}
	for _, r := range rs {
		r.waitReady(t)
	}
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		n := 0
		for _, r := range rs {
			k := ownedOf(t, r.addrs.HTTP)
			if k <= 0 {
				return fmt.Errorf("analyzer %s owns %d partitions", r.addrs.HTTP, k)
			}
			n += k
		}
		if n != 6 {
			return fmt.Errorf("%d of 6 partitions owned", n)
		}
		return nil
	})
	nc, err := nats.Connect(rs[1].addrs.NATS, nats.Token("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	recs := clusterInput(t, []string{"c1", "c2", "c3"}, 3000)
	publishRecords(t, js, recs, 100)
	for _, r := range rs {
		wantSearchable(t, r.addrs.HTTP, recs, 60*time.Second)
	}
}

// TestClusterKeepsTheStreamsPartitionCount: an analyzer given another
// --partitions than the stream has takes the stream's (and says so), so it
// cannot repartition the stream under the other analyzers' leases.
func TestClusterKeepsTheStreamsPartitionCount(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	nc := connectRetrying(t, srv.ClientURL())
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := transport.EnsurePartitionedStream(ctx, nc, js, transport.StreamOptions{}, 4, 1, nil); err != nil {
		t.Fatal(err)
	}
	r := startServer(t, Config{NATS: transport.NATSOptions{URL: srv.ClientURL()},
		Cluster: ClusterConfig{Partitions: 6, Member: "a", LeaseTTL: 2 * time.Second}})
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if n := ownedOf(t, r.addrs.HTTP); n != 4 {
			return fmt.Errorf("%d partitions owned, want the stream's 4", n)
		}
		return nil
	})
	st, err := js.Stream(ctx, transport.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := transport.Partitions(st.CachedInfo().Config); n != 4 {
		t.Errorf("the stream has %d partitions now, want 4 still", n)
	}
	if !strings.Contains(r.log.String(), "another partition count than --partitions") {
		t.Errorf("no warning about --partitions 6 against the stream's 4:\n%s", r.log.String())
	}
}
