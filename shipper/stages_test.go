package shipper_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/shipper"
	"github.com/faultline/faultline/transport"
)

// TestWrittenFileWakesFollower: with a poll interval of an hour, a line
// appended to a followed file is still shipped, because the write itself
// (inotify) wakes the follower. The first line, pending in the joiner, is
// sent when it is due (FlushTimeout after its read), not at the next poll.
func TestWrittenFileWakesFollower(t *testing.T) {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		t.Skip("no /proc: the shipper polls only")
	}
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "app.log")
	appendLines(t, file, "w", 0, 1)
	m := shipper.NewMetrics()
	runInProcess(t, shipper.Config{Paths: []string{filepath.Join(dir, "*")}, NATS: shipper.NATSOptions{URL: s.ClientURL()},
		StateDir: t.TempDir(), Metrics: m, PollInterval: time.Hour})
	waitLines(t, s.ClientURL(), 20*time.Second, map[string]int{"w": 1})
	appendLines(t, file, "w", 1, 3)
	waitLines(t, s.ClientURL(), 20*time.Second, map[string]int{"w": 3})
}

// TestStageMetrics: every stage of the shipper is observed, and each batch
// carries the time its first record was read, no later than JetStream
// stored it and no earlier than the line was written.
func TestStageMetrics(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "app.log")
	appendLines(t, file, "s", 0, 1)
	written := time.Now().Add(-time.Second) // slack for the file system's coarser clock
	m := shipper.NewMetrics()
	runInProcess(t, shipper.Config{Paths: []string{filepath.Join(dir, "*")}, NATS: shipper.NATSOptions{URL: s.ClientURL()},
		StateDir: t.TempDir(), Metrics: m})
	waitLines(t, s.ClientURL(), 20*time.Second, map[string]int{"s": 1})
	appendLines(t, file, "s", 1, 50) // read after the follower was at the end of the file: a read delay
	waitLines(t, s.ClientURL(), 20*time.Second, map[string]int{"s": 50})
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		for _, stage := range []string{"read", "join_wait", "batch_wait", "publish_ack"} {
			if n := histCount(t, m, "faultline_shipper_stage_seconds", stage); n == 0 {
				return fmt.Errorf("faultline_shipper_stage_seconds{stage=%q} has no observation", stage)
			}
		}
		return nil
	})

	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cons, err := js.OrderedConsumer(ctx, transport.StreamName, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := cons.FetchNoWait(100)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for msg := range batch.Messages() {
		n++
		md, err := msg.Metadata()
		if err != nil {
			t.Fatal(err)
		}
		v := msg.Headers().Get(transport.HeaderReadAt)
		ns, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("message %d: %s = %q: %v", md.Sequence.Stream, transport.HeaderReadAt, v, err)
		}
		if read := time.Unix(0, ns); read.After(md.Timestamp) || read.Before(written) {
			t.Errorf("message %d: read at %v, stored at %v, line written after %v", md.Sequence.Stream, read, md.Timestamp, written)
		}
	}
	if n == 0 {
		t.Fatal("no message in the stream")
	}
}

// histCount is the number of observations of a histogram's series with
// the label value stage.
func histCount(t testing.TB, m *shipper.Metrics, name, stage string) uint64 {
	t.Helper()
	mfs, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if lp.GetValue() == stage {
					return mt.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}
