package transport

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/natstest"
	"github.com/faultline/faultline/internal/testutil"
)

func TestPartitionOfSubject(t *testing.T) {
	for _, c := range []struct {
		subj string
		p    int
		ok   bool
	}{
		{"faultline.part.0.c.n", 0, true},
		{"faultline.part.11.c1.spark-1", 11, true},
		{"faultline.part.1023.x", 1023, true},
		{"faultline.part.7", 0, false}, // no cluster token
		{"faultline.part.-1.c.n", 0, false},
		{"faultline.part.07.c.n", 0, false}, // the transform never writes leading zeros
		{"faultline.part.x.c.n", 0, false},
		{"faultline.logs.c.n", 0, false},
		{"", 0, false},
	} {
		p, ok := PartitionOfSubject(c.subj)
		if p != c.p || ok != c.ok {
			t.Errorf("PartitionOfSubject(%q) = %d, %v; want %d, %v", c.subj, p, ok, c.p, c.ok)
		}
	}
	if got := PartitionFilter(3); got != "faultline.part.3.>" {
		t.Errorf("PartitionFilter(3) = %q", got)
	}
	if p, ok := PartitionOfSubject(strings.TrimSuffix(PartitionFilter(5), ">") + "c.n"); !ok || p != 5 {
		t.Errorf("PartitionOfSubject does not read PartitionFilter's layout: %d %v", p, ok)
	}
}

// clusterNames are labels as shippers get them: plain, dotted (tokenised),
// empty, unicode, and random ones.
func clusterNames(n int) []string {
	names := []string{"default", "c1", "", "192.168.200.12", "dgx spark", "集群-α", "a*b>c", "x"}
	r := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789-_."
	for len(names) < n {
		b := make([]byte, 1+r.IntN(24))
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		names = append(names, string(b))
	}
	return names
}

// TestPartitionOfMatchesServer: for many cluster names and partition
// counts, the record a shipper publishes is stored by a real server on
// faultline.part.<PartitionOf(cluster, n)>.<cluster>.<node>. Changing the
// count updates the stream's transform in place.
func TestPartitionOfMatchesServer(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	nc, js := connectJS(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	names := clusterNames(150)
	for _, n := range []int{12, 7, 1024} {
		if _, err := EnsurePartitionedStream(ctx, nc, js, StreamOptions{}, n, 1, nil); err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, name := range names {
			ack, err := js.Publish(ctx, LogsSubject(name, "n1"), []byte("x"))
			if err != nil {
				t.Fatalf("publish %q: %v", name, err)
			}
			msg, err := getMsg(ctx, js, ack.Sequence)
			if err != nil {
				t.Fatal(err)
			}
			p := PartitionOf(name, n)
			want := PartsPrefix + strconv.Itoa(p) + "." + Token(name) + ".n1"
			if msg.Subject != want {
				t.Fatalf("%d partitions, cluster %q: stored on %s, PartitionOf says %s", n, name, msg.Subject, want)
			}
			seen[p] = true
		}
		if n <= 12 && len(seen) != n {
			t.Errorf("%d partitions: %d names fell in only %d of them", n, len(names), len(seen))
		}
	}
}

func getMsg(ctx context.Context, js jetstream.JetStream, seq uint64) (*jetstream.RawStreamMsg, error) {
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		return nil, err
	}
	return st.GetMsg(ctx, seq)
}

func lastMsg(ctx context.Context, js jetstream.JetStream, subject string) (*jetstream.RawStreamMsg, error) {
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		return nil, err
	}
	return st.GetLastMsgForSubject(ctx, subject)
}

func connectJS(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return nc, js
}

// TestEnsurePartitionedStreamUpdates: a single-machine stream becomes
// partitioned in place; what it held stays on its old subject, new
// records land in partitions; a second call changes nothing, and limits
// given explicitly are applied while the others stay as tuned.
func TestEnsurePartitionedStreamUpdates(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	nc, js := connectJS(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tuned := StreamOptions{MaxBytes: 1 << 30}
	if _, _, err := EnsureStream(ctx, nc, js, tuned); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, LogsSubject("c1", "n1"), []byte("old")); err != nil {
		t.Fatal(err)
	}
	var log testutil.Buffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	st, err := EnsurePartitionedStream(ctx, nc, js, StreamOptions{MaxAge: time.Hour}, 4, 1, logger)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	if cfg.Subjects[0] != PartitionedSubjects || cfg.SubjectTransform == nil || cfg.SubjectTransform.Destination != PartitionTransform(4) {
		t.Fatalf("stream not partitioned: subjects %v, transform %+v", cfg.Subjects, cfg.SubjectTransform)
	}
	if cfg.MaxAge != time.Hour || cfg.MaxBytes != 1<<30 {
		t.Errorf("limits: max_age %v (want 1h, given), max_bytes %d (want 1GiB, as tuned)", cfg.MaxAge, cfg.MaxBytes)
	}
	for _, want := range []string{"stream updated", "subjects [faultline.logs.>] -> [faultline.logs.*.*]", "transform none ->", "max_age 168h0m0s -> 1h0m0s"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, log.String())
		}
	}
	old, err := getMsg(ctx, js, 1)
	if err != nil || old.Subject != "faultline.logs.c1.n1" {
		t.Fatalf("the record stored before partitioning: %v, %v", old, err)
	}
	ack, err := js.Publish(ctx, LogsSubject("c1", "n1"), []byte("new"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := getMsg(ctx, js, ack.Sequence)
	if err != nil || m.Subject != fmt.Sprintf("faultline.part.%d.c1.n1", PartitionOf("c1", 4)) {
		t.Fatalf("a record published after partitioning: %v, %v", m, err)
	}
	before := log.String()
	if _, err := EnsurePartitionedStream(ctx, nc, js, StreamOptions{MaxAge: time.Hour}, 4, 1, logger); err != nil {
		t.Fatal(err)
	}
	if log.String() != before {
		t.Errorf("an unchanged stream was updated: %s", strings.TrimPrefix(log.String(), before))
	}
}

// TestApplyLimits: without explicit limits nothing changes; given ones are
// applied to the existing stream, the others left as they were.
func TestApplyLimits(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	nc, js := connectJS(t, s.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, _, err := EnsureStream(ctx, nc, js, StreamOptions{MaxAge: 48 * time.Hour}); err != nil {
		t.Fatal(err)
	}
	limits := func() (time.Duration, int64) {
		st, err := js.Stream(ctx, StreamName)
		if err != nil {
			t.Fatal(err)
		}
		c := st.CachedInfo().Config
		return c.MaxAge, c.MaxBytes
	}
	for _, c := range []struct {
		so       StreamOptions
		age      time.Duration
		maxBytes int64
	}{
		{StreamOptions{}, 48 * time.Hour, -1},
		{StreamOptions{MaxBytes: 5 << 20}, 48 * time.Hour, 5 << 20},
		{StreamOptions{MaxAge: time.Hour}, time.Hour, 5 << 20},
		{StreamOptions{MaxAge: 2 * time.Hour, MaxBytes: 1 << 20}, 2 * time.Hour, 1 << 20},
	} {
		if err := ApplyLimits(ctx, js, c.so, nil); err != nil {
			t.Fatal(err)
		}
		if age, b := limits(); age != c.age || b != c.maxBytes {
			t.Errorf("after ApplyLimits(%+v): max_age %v, max_bytes %d; want %v, %d", c.so, age, b, c.age, c.maxBytes)
		}
	}
}

// TestPartitionedStreamCluster: on a 3-server cluster an R3 partitioned
// stream takes a shipper's records on their partition, and losing the
// stream's leader loses nothing: publishing and reading go on.
func TestPartitionedStreamCluster(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	nc, js := connectJS(t, c.URLs())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const parts = 12
	st, err := EnsurePartitionedStream(ctx, nc, js, StreamOptions{}, parts, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := st.CachedInfo().Config.Replicas; r != 3 {
		t.Fatalf("replicas %d, want 3", r)
	}
	p := PartitionOf("c1", parts)
	ack, err := js.Publish(ctx, "faultline.logs.c1.n1", []byte("0"))
	if err != nil {
		t.Fatal(err)
	}
	if m, err := getMsg(ctx, js, ack.Sequence); err != nil || m.Subject != fmt.Sprintf("faultline.part.%d.c1.n1", p) {
		t.Fatalf("stored as %v, %v; want partition %d", m, err, p)
	}
	// Every replica holds it before the leader goes.
	testutil.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		for _, r := range info.Cluster.Replicas {
			if !r.Current {
				return fmt.Errorf("replica %s not current", r.Name)
			}
		}
		return nil
	})
	leader, err := c.StreamLeader(StreamName)
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(leader)
	const total = 50
	for i := 1; i < total; i++ {
		// A publish during the election may never be acknowledged: each
		// attempt has its own deadline, and the message ID makes a retry
		// of a stored one a duplicate.
		testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
			pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			_, err := js.Publish(pctx, "faultline.logs.c1.n1", []byte(strconv.Itoa(i)),
				jetstream.WithMsgID("m"+strconv.Itoa(i)))
			return err
		})
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{PartitionFilter(p)}})
	if err != nil {
		t.Fatal(err)
	}
	// A fetch may find no responder while the client follows the new
	// leader; the ordered consumer then starts again after what it read.
	i := 0
	testutil.CheckFor(t, 30*time.Second, time.Millisecond, func() error {
		for ; i < total; i++ {
			m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
			if err != nil {
				return fmt.Errorf("record %d: %w", i, err)
			}
			if string(m.Data()) != strconv.Itoa(i) {
				t.Fatalf("record %d reads %q", i, m.Data())
			}
		}
		return nil
	})
}

// TestShipperWaitsForAnalyzerOnCluster: connected to a NATS cluster, a
// publisher never creates the stream; it says once that it waits for an
// analyzer, and publishes into the partitioned stream once there is one.
func TestShipperWaitsForAnalyzerOnCluster(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	nc, js := connectJS(t, c.URLs())
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var log testutil.Buffer
	type result struct {
		p   *Publisher
		err error
	}
	done := make(chan result, 1)
	go func() {
		p, err := Connect(ctx, NATSOptions{URL: c.URLs()}, StreamOptions{}, PublisherOptions{Log: slog.New(slog.NewTextHandler(&log, nil))})
		done <- result{p, err}
	}()
	testutil.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if !strings.Contains(log.String(), "an analyzer creates it") {
			return fmt.Errorf("no word of waiting yet:\n%s", log.String())
		}
		return nil
	})
	if _, err := js.Stream(ctx, StreamName); err != jetstream.ErrStreamNotFound {
		t.Fatalf("the shipper's connection made the stream (%v)", err)
	}
	if _, err := EnsurePartitionedStream(ctx, nc, js, StreamOptions{}, 4, 3, nil); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.p.Close()
	if n := strings.Count(log.String(), "an analyzer creates it"); n != 1 {
		t.Errorf("the wait was logged %d times, want once:\n%s", n, log.String())
	}
	acked := make(chan struct{})
	m := &Message{Subject: LogsSubject("c1", "n1"), Body: []byte("x"), Count: 1, MsgID: "r1-1"}
	if err := r.p.Publish(ctx, m, func() { close(acked) }); err != nil {
		t.Fatal(err)
	}
	select {
	case <-acked:
	case <-ctx.Done():
		t.Fatal("no ack")
	}
	msg, err := lastMsg(ctx, js, PartitionFilter(PartitionOf("c1", 4)))
	if err != nil {
		t.Fatalf("the batch is not in its partition: %v", err)
	}
	if msg.Header.Get(HeaderMsgID) != "r1-1" {
		t.Errorf("last message of the partition: %v", msg.Header)
	}
}

// TestSingleServerConnectCreatesStream: on a server that is not clustered
// the publisher still creates the stream itself (single-machine default).
func TestSingleServerConnectCreatesStream(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Connect(ctx, NATSOptions{URL: s.ClientURL()}, StreamOptions{}, PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	_, js := connectJS(t, s.ClientURL())
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	if subj := st.CachedInfo().Config.Subjects; len(subj) != 1 || subj[0] != StreamSubjects {
		t.Errorf("subjects %v", subj)
	}
}

// TestEnsurePartitionedStreamConcurrent: three analyzers starting together
// on a 3-server cluster all get the partitioned stream, whether they create
// it or turn a single-machine stream into it. (JetStream may leave one of
// several concurrent updates unanswered; the one left waiting must not fail.)
func TestEnsurePartitionedStreamConcurrent(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	nc, js := connectJS(t, c.URL(0))
	for _, single := range []bool{false, true} {
		if single {
			if err := js.DeleteStream(context.Background(), StreamName); err != nil {
				t.Fatal(err)
			}
			if _, _, err := EnsureStream(context.Background(), nc, js, StreamOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		errs := make(chan error, 3)
		for i := range 3 {
			go func() {
				errs <- ensureOn(c.URL(i))
			}()
		}
		for range 3 {
			if err := <-errs; err != nil {
				t.Errorf("from a single stream %v: %v", single, err)
			}
		}
	}
}

// ensureOn is an analyzer's EnsurePartitionedStream through its own
// connection to url.
func ensureOn(url string) error {
	nc, err := nats.Connect(url)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	_, err = EnsurePartitionedStream(ctx, nc, js, StreamOptions{}, 12, 3, nil)
	return err
}

// TestEnsureKeyValueConcurrent: three analyzers making the same buckets at
// once on a 3-server cluster all get them (CreateOrUpdateKeyValue left some
// unanswered), and a bucket whose config changed is updated.
func TestEnsureKeyValueConcurrent(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	buckets := []jetstream.KeyValueConfig{
		{Bucket: "members", TTL: 5 * time.Second, Replicas: 3, Storage: jetstream.FileStorage},
		{Bucket: "leases", TTL: 5 * time.Second, Replicas: 3, Storage: jetstream.FileStorage},
		{Bucket: "findings", History: 1, Replicas: 3, Storage: jetstream.FileStorage},
	}
	errs := make(chan error, 3)
	for i := range 3 {
		go func() {
			nc, err := nats.Connect(c.URL(i))
			if err != nil {
				errs <- err
				return
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			for _, b := range buckets {
				if _, err := EnsureKeyValue(ctx, js, b); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 3 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	_, js := connectJS(t, c.URLs())
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	changed := buckets[2]
	changed.History = 5
	kv, err := EnsureKeyValue(ctx, js, changed)
	if err != nil {
		t.Fatal(err)
	}
	st, err := kv.Status(ctx)
	if err != nil || st.History() != 5 {
		t.Fatalf("history after the update: %v, %v", st, err)
	}
}

func TestPartitionsReadBack(t *testing.T) {
	for _, n := range []int{1, 12, 1024} {
		cfg := PartitionedStreamConfig(StreamOptions{}, n, 1, 1<<20)
		if got, ok := Partitions(cfg); !ok || got != n {
			t.Errorf("Partitions of a stream made with %d: %d, %v", n, got, ok)
		}
	}
	if _, ok := Partitions(StreamOptions{}.StreamConfig(1 << 20)); ok {
		t.Error("a single-machine stream read as partitioned")
	}
}
