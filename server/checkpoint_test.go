package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/transport"
)

// storyRecords reads a seed story (a folder with spark-1 and spark-2) into
// records of cluster, merged by time as diagnose reads them; round makes
// the record IDs of a retelling differ, and dates it round days later (a
// record's time places it in its launch: a retelling at the same times
// would be the same launches).
func storyRecords(t *testing.T, dir, cluster string, round int) []parsers.Record {
	t.Helper()
	inputs, err := pipeline.ParseArgs([]string{"spark-1=" + dir + "/spark-1", "spark-2=" + dir + "/spark-2"})
	if err != nil {
		t.Fatal(err)
	}
	var out []parsers.Record
	if _, err := pipeline.Replay(context.Background(), inputs, pipeline.Options{Cluster: cluster}, func(ev *parsers.Event) error {
		r := ev.Record
		r.ID = fmt.Sprintf("%s#%s%d", r.ID, cluster, round)
		if round > 0 {
			day := fmt.Sprintf("%02d", 8+round)
			r.Text = strings.ReplaceAll(strings.ReplaceAll(r.Text, "2026-04-08", "2026-04-"+day), "04-08 ", "04-"+day+" ")
			if !r.Time.IsZero() {
				r.Time = r.Time.AddDate(0, 0, round)
			}
		}
		out = append(out, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// placed is where a published record landed: its message's stream
// sequence and its index in the message.
type placed struct {
	rec parsers.Record
	seq uint64
	idx int
}

// publishPlaced publishes recs in messages of up to n records of one node
// each (the shipper's wire format) and says where each record landed.
func publishPlaced(t *testing.T, js jetstream.JetStream, recs []parsers.Record, n int) []placed {
	t.Helper()
	return publishBatches(t, js, recs, n, func(a, b *parsers.Record) bool { return a.Node == b.Node && a.Cluster == b.Cluster })
}

// waitConsumed waits until the analyzer acknowledged every message.
func waitConsumed(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	testutil.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
		c, err := js.Consumer(context.Background(), transport.StreamName, "analyzer")
		if err != nil {
			return err
		}
		ci, err := c.Info(context.Background())
		if err != nil {
			return err
		}
		if ci.NumPending != 0 || ci.NumAckPending != 0 {
			return fmt.Errorf("consumer: %d pending, %d awaiting ack", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
}

func readCheckpointFile(t *testing.T, dataDir string) checkpointFile {
	t.Helper()
	var f checkpointFile
	b, err := os.ReadFile(filepath.Join(dataDir, checkpointName))
	if err == nil {
		err = json.Unmarshal(b, &f)
	}
	if err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	return f
}

// findingKey is what must not change about a finding across a restart.
func findingKey(f finding.Finding) string {
	facts := map[string][]string{}
	for k, v := range f.Facts {
		v = slices.Clone(v)
		slices.Sort(v)
		facts[k] = v
	}
	b, _ := json.Marshal(facts)
	return fmt.Sprintf("%s %s %s launch %d %s %s", f.ID, f.Rule, f.Cluster, f.Launch, f.Status, b)
}

func findingKeys(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Status != "retracted" {
			out = append(out, findingKey(f))
		}
	}
	slices.Sort(out)
	return out
}

func isLaunchMarker(text string) bool {
	return strings.Contains(text, "vLLM API server version") || strings.Contains(text, "To add another node to this Ray cluster")
}

var reWarmDone = regexp.MustCompile(`msg="warm-up done" records=(\d+) from_seq=(\d+)`)

// A restart replays the stream from the checkpoint, not from its start:
// cluster "a" told the seed story (a failed launch, then the fixed one)
// three times, six launches, of which the engine keeps four; the default
// cluster is in the middle of the failed launch. After the restart, only
// the kept launches' records are replayed, every finding keeps its ID,
// none is announced again, and the rest of the failed launch joins the
// facts proven before the restart: the findings are those of one engine
// that saw every record.
func TestWarmRestartFromCheckpoint(t *testing.T) {
	data := t.TempDir()
	natsListen := freePort(t)
	cfg := Config{DataDir: data, NATSListen: natsListen}
	r1 := startServer(t, cfg)
	url := r1.addrs.NATS // with the data dir's token, the same after a restart
	sub := subscribeFindings(t, url)
	nc := connectRetrying(t, url)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}

	var a []parsers.Record
	for telling := range 3 {
		a = append(a, storyRecords(t, "../testdata/logs/seed/both", "a", telling)...)
	}
	def := storyRecords(t, seedDir, rule.DefaultCluster, 0)
	cut := len(def) * 2 / 3
	// Cluster a's first telling alone, then the rest of it and the default
	// cluster's first two thirds interleaved.
	round := len(a) / 3
	// Interleaved 40 records at a time, as shippers send batches.
	before := slices.Clone(a[:round])
	for i := 0; i < len(a)-round || i < cut; i += 40 {
		before = append(before, a[min(round+i, len(a)):min(round+i+40, len(a))]...)
		before = append(before, def[min(i, cut):min(i+40, cut)]...)
	}
	pubBefore := publishPlaced(t, js, before, 20)
	waitConsumed(t, js)
	// The checkpoint is written at the ack flush; wait for the last one.
	var ck checkpointFile
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		ck = readCheckpointFile(t, data)
		if ck.Clusters["a"].Num != 3 {
			return fmt.Errorf("checkpoint %+v: want cluster a's earliest kept launch 3 (six launches, four kept)", ck.Clusters)
		}
		return nil
	})
	t.Logf("checkpoint: %+v", ck)
	// Cluster a's position is the record that opened its launch 3, a
	// launch marker in the middle of a message (the records before it in
	// the message are launch 2's).
	at := map[uint64]parsers.Record{}
	for _, p := range pubBefore {
		at[streamPos(p.seq, p.idx)] = p.rec
	}
	opener, idx := at[ck.Clusters["a"].Pos], ck.Clusters["a"].Pos&(1<<recordBits-1)
	if !isLaunchMarker(opener.Text) || idx == 0 {
		t.Errorf("cluster a's checkpoint position %d/%d: record %q, want a launch marker after the message's first record", posSeq(ck.Clusters["a"].Pos), idx, opener.Text)
	}
	firstRun := getFindings(t, r1.addrs.HTTP)
	if err := r1.stop(); err != nil {
		t.Fatalf("first run: %v", err)
	}
	if len(sub.all()) == 0 {
		t.Fatal("nothing announced in the first run")
	}

	// What a replay from the checkpoint reads: the records from its first
	// message on, but none of a cluster's before its checkpoint launch.
	cp := ck.Clusters
	want := 0
	for _, p := range pubBefore {
		if p.seq >= posSeq(cp.From()) && !cp.Skip(p.rec.Cluster, streamPos(p.seq, p.idx)) {
			want++
		}
	}

	// While the warm-up runs, /healthz says where it started.
	cfg.HTTP = freePort(t)
	var warming map[string]any
	cfg.beforeWarmUp = func() {
		resp, err := http.Get("http://" + cfg.HTTP + "/healthz")
		if err != nil {
			t.Errorf("/healthz during the warm-up: %v", err)
			return
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&warming)
	}
	r2 := startServer(t, cfg)
	wu, _ := warming["warm_up"].(map[string]any)
	if warming["status"] != "warming" || wu["from"] != float64(posSeq(cp.From())) || wu["last"] != float64(pubBefore[len(pubBefore)-1].seq) {
		t.Errorf("/healthz during the warm-up: %v; want warming from %d to %d", warming, posSeq(cp.From()), pubBefore[len(pubBefore)-1].seq)
	}
	m := reWarmDone.FindStringSubmatch(r2.log.String())
	if m == nil {
		t.Fatalf("no warm-up done line in the log:\n%s", r2.log)
	}
	replayed, _ := strconv.Atoi(m[1])
	from, _ := strconv.ParseUint(m[2], 10, 64)
	t.Logf("warm-up replayed %d of %d records, from stream sequence %d of %d", replayed, len(before), from, pubBefore[len(pubBefore)-1].seq)
	if replayed != want || from != posSeq(cp.From()) {
		t.Errorf("warm-up replayed %d records from sequence %d; want %d from %d (the kept launches' records)", replayed, from, want, posSeq(cp.From()))
	}
	if replayed >= len(before)*3/4 {
		t.Errorf("warm-up replayed %d of %d records: the checkpoint saved little", replayed, len(before))
	}
	if out := r2.stdout.String(); out != "" {
		t.Errorf("the warm-up announced findings again:\n%s", out)
	}
	if got, want := findingKeys(getFindings(t, r2.addrs.HTTP)), findingKeys(firstRun); !slices.Equal(got, want) {
		t.Errorf("stored findings changed over the restart\n got %q\nwant %q", got, want)
	}

	pubAfter := publishPlaced(t, js, def[cut:], 20)
	waitConsumed(t, js)

	// One engine that saw every record, in stream order.
	rules, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	all := rule.NewEngine(rules)
	for _, p := range append(pubBefore, pubAfter...) {
		ev := parsers.Parse(p.rec)
		all.Observe(&ev)
	}
	wantKeys := findingKeys(all.Findings())
	var final []finding.Finding
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		final = getFindings(t, r2.addrs.HTTP)
		if got := findingKeys(final); !slices.Equal(got, wantKeys) {
			return fmt.Errorf("findings after the restart\n got %q\nwant %q", got, wantKeys)
		}
		return nil
	})
	// The first run's findings keep their IDs.
	finalIDs := map[string]bool{}
	for _, f := range final {
		finalIDs[f.ID] = true
	}
	for _, f := range firstRun {
		if !finalIDs[f.ID] {
			t.Errorf("finding %s (%s, launch %d) of the first run is gone", f.ID, f.Rule, f.Launch)
		}
	}
	// A finding of the default cluster rests on records from both sides
	// of the restart.
	beforeIDs := map[string]bool{}
	for _, p := range pubBefore {
		beforeIDs[p.rec.ID] = true
	}
	joined := ""
	for _, f := range final {
		var old, fresh bool
		for _, ev := range f.Evidence {
			if beforeIDs[ev.RecordID] {
				old = true
			} else {
				fresh = true
			}
		}
		if f.Cluster == rule.DefaultCluster && old && fresh {
			joined = f.Rule
		}
	}
	if joined == "" {
		t.Errorf("no finding joins facts from before the restart with facts after it")
	}
	t.Logf("joined across the restart: %s", joined)
	// Each version of a finding is announced once, over both runs.
	seen := map[string]bool{}
	for _, f := range sub.all() {
		k := fmt.Sprintf("%s/%d/%s", f.ID, f.Updates, f.Status)
		if seen[k] {
			t.Errorf("finding %s announced twice", k)
		}
		seen[k] = true
	}
	if r2.stdout.String() == "" {
		t.Errorf("nothing announced after the restart")
	}
}

// The acceptance: serve restarted on a data dir whose stream holds
// 1M records answers /healthz within 2 s of Run's start (HTTP comes up
// before the warm-up replays anything; it says "warming" meanwhile).
func TestHealthzWithin2sOn1MRecords(t *testing.T) {
	if testing.Short() {
		t.Skip("fills a stream with 1M records")
	}
	const records, perMsg = 1_000_000, 2000
	data := t.TempDir()
	cfg := Config{DataDir: data}
	fillStart := time.Now()
	ns := testutil.RunJetStreamServerWith(t, &natsserver.Options{Port: -1, StoreDir: cfg.natsStoreDir()})
	nc, err := nats.Connect(ns.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ensureStream(context.Background(), nc, js); err != nil {
		t.Fatal(err)
	}
	// Two clusters of eight nodes each, vLLM-like lines; batches of one
	// node, published asynchronously.
	var body []byte
	t0 := time.Date(2026, 4, 8, 22, 0, 0, 0, time.UTC)
	for m := 0; m < records/perMsg; m++ {
		cluster, node := fmt.Sprintf("c%d", m%2), fmt.Sprintf("node-%d", m%8)
		body = body[:0]
		for i := range perMsg {
			n := m*perMsg + i
			r := parsers.Record{ID: fmt.Sprintf("r%07d", n), Cluster: cluster, Node: node, File: "/var/log/vllm.log",
				Line: n, Time: t0.Add(time.Duration(n) * time.Millisecond),
				Text: fmt.Sprintf("INFO 04-08 22:00:00 [metrics.py:467] Avg prompt throughput: %d.0 tokens/s, Running: 3 reqs", n%977)}
			body = transport.AppendRecord(body, &r)
		}
		msg := &nats.Msg{Subject: transport.LogsSubject(cluster, node), Data: slices.Clone(body), Header: nats.Header{}}
		msg.Header.Set(transport.HeaderMsgID, fmt.Sprintf("fill-%d", m))
		msg.Header.Set(transport.HeaderCount, strconv.Itoa(perMsg))
		if _, err := js.PublishMsgAsync(msg); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(60 * time.Second):
		t.Fatal("publishing 1M records took over 60 s")
	}
	st, err := js.Stream(context.Background(), transport.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background())
	if err != nil || info.State.Msgs != records/perMsg {
		t.Fatalf("stream after the fill: %+v, %v", info, err)
	}
	nc.Close()
	ns.Shutdown()
	ns.WaitForShutdown()
	t.Logf("filled the stream with %d records (%d messages) in %v", records, records/perMsg, time.Since(fillStart))

	cfg.HTTP, cfg.NATSListen = freePort(t), "127.0.0.1:-1"
	cfg.Stdout = &testutil.Buffer{}
	client := &http.Client{Timeout: time.Second}
	healthz := func() (map[string]any, error) {
		resp, err := client.Get("http://" + cfg.HTTP + "/healthz")
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("/healthz: %s", resp.Status)
		}
		var b map[string]any
		return b, json.NewDecoder(resp.Body).Decode(&b)
	}
	// serve runs serve on the data dir until /healthz answers (and, with
	// untilOK, says ok: the warm-up is done), then stops it.
	serve := func(untilOK bool) (up, ok time.Duration, log string) {
		logBuf := &testutil.Buffer{}
		cfg.Log = slog.New(slog.NewTextHandler(io.MultiWriter(logBuf, testWriter{t}), nil))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		start := time.Now()
		go func() { done <- Run(ctx, cfg) }()
		defer func() {
			cancel()
			if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Run: %v", err)
			}
		}()
		var first map[string]any
		testutil.CheckFor(t, 30*time.Second, 5*time.Millisecond, func() (err error) {
			first, err = healthz()
			up = time.Since(start)
			return err
		})
		t.Logf("/healthz answered 200 %v after Run started: %v", up, first)
		if untilOK {
			testutil.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
				b, err := healthz()
				if err == nil && b["status"] != "ok" {
					err = fmt.Errorf("/healthz: %v", b)
				}
				ok = time.Since(start)
				return err
			})
		}
		return up, ok, logBuf.String()
	}

	// No checkpoint (the stream was filled without serve): the warm-up
	// would replay all 1M records (86 s on the shared 2-core test machine);
	// /healthz answers long before.
	up, _, _ := serve(false)
	if up > 2*time.Second {
		t.Errorf("/healthz answered %v after start; want within 2 s", up)
	}

	// A checkpoint whose launches began in the last four messages: the
	// warm-up replays those 8000 records, not the stream.
	last := info.State.LastSeq
	ck := checkpointFile{Stream: info.Created, RecordBits: recordBits, Clusters: rule.Checkpoint{
		"c0": {Pos: streamPos(last-3, 0), Num: 7}, "c1": {Pos: streamPos(last-2, 0), Num: 3}}}
	b, err := json.Marshal(ck)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(data, checkpointName), b, 0o644); err != nil {
		t.Fatal(err)
	}
	up, ok, log := serve(true)
	if up > 2*time.Second {
		t.Errorf("/healthz answered %v after start; want within 2 s", up)
	}
	m := reWarmDone.FindStringSubmatch(log)
	if m == nil || m[1] != strconv.Itoa(4*perMsg) || m[2] != strconv.FormatUint(last-3, 10) {
		t.Errorf("warm-up %q; want %d records from sequence %d", m, 4*perMsg, last-3)
	}
	t.Logf("with a checkpoint near the end: /healthz %v, ok (warm-up done) %v after Run started", up, ok)
}

// A checkpoint that does not fit the stream (unreadable, of a stream since
// deleted and created again, without positions) is not used: the warm-up
// replays the whole stream, as without one, and the findings keep their
// IDs.
func TestWarmUpIgnoresUnfitCheckpoint(t *testing.T) {
	data := t.TempDir()
	natsListen := freePort(t)
	cfg := Config{DataDir: data, NATSListen: natsListen}
	r := startServer(t, cfg)
	nc := connectRetrying(t, r.addrs.NATS)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	recs := storyRecords(t, seedDir, rule.DefaultCluster, 0)
	publishPlaced(t, js, recs, 20)
	waitConsumed(t, js)
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		_, err := os.Stat(filepath.Join(data, checkpointName))
		return err
	})
	want := findingKeys(getFindings(t, r.addrs.HTTP))
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	good := readCheckpointFile(t, data)
	for _, tc := range []struct {
		name string
		file func() []byte
	}{
		{"unreadable", func() []byte { return []byte(`{"clusters": {"default": `) }},
		{"of another stream", func() []byte {
			f := good
			f.Stream = f.Stream.Add(-time.Hour)
			b, _ := json.Marshal(f)
			return b
		}},
		{"without a position", func() []byte {
			f := good
			f.Clusters = rule.Checkpoint{rule.DefaultCluster: {Pos: 0, Num: 2}}
			b, _ := json.Marshal(f)
			return b
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(data, checkpointName), tc.file(), 0o644); err != nil {
				t.Fatal(err)
			}
			r := startServer(t, cfg)
			defer r.stop()
			m := reWarmDone.FindStringSubmatch(r.log.String())
			if m == nil || m[1] != strconv.Itoa(len(recs)) || m[2] != "1" {
				t.Errorf("warm-up %q; want all %d records from sequence 1", m, len(recs))
			}
			if out := r.stdout.String(); out != "" {
				t.Errorf("the warm-up announced findings again:\n%s", out)
			}
			if got := findingKeys(getFindings(t, r.addrs.HTTP)); !slices.Equal(got, want) {
				t.Errorf("findings\n got %q\nwant %q", got, want)
			}
		})
	}
}
