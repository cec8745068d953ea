package shipper_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// appendJSONLines writes lines "<prefix> line <i> ..." for i in [from, to) as
// Docker json-file records, every seventh one on stderr: two writers whose
// records the joiner holds apart, so a batch can hold records beyond the
// offset its acknowledgement saves.
func appendJSONLines(t testing.TB, path, prefix string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var b []byte
	ts := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := from; i < to; i++ {
		stream := "stdout"
		if i%7 == 3 {
			stream = "stderr"
		}
		text, _ := json.Marshal(fmt.Sprintf("%s line %07d INFO something happened here\n", prefix, i))
		b = fmt.Appendf(b, `{"log":%s,"stream":%q,"time":%q}`+"\n", text, stream, ts.Add(time.Duration(i)*time.Microsecond).Format(time.RFC3339Nano))
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
}

// 200,000 json-file lines are written while the shipper is killed with
// SIGKILL at random moments and started again: every line is stored, and
// none twice (the re-sent batches are the batches sent before, with their
// Nats-Msg-Id, which JetStream's duplicate window drops).
func TestKillRestartStoresNothingTwice(t *testing.T) {
	for _, kills := range []int{2, 20} {
		t.Run(fmt.Sprintf("%d-kills", kills), func(t *testing.T) { killRestart(t, kills) })
	}
}

func killRestart(t *testing.T, kills int) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "c0ffee-json.log")
	state := filepath.Join(dir, "state")
	args := shipperArgs(s.ClientURL(), "spark-1", state, "--path", log, "--log-level", "info")

	const total = 200_000
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d, %d kills", seed, kills)
	// Half the lines are there at the first start, the rest comes in
	// bursts while the shipper is killed and started again: each run
	// resumes behind, with its in-flight window full, and some catch up
	// and tail.
	appendJSONLines(t, log, "k", 0, total/2)
	lives := make([]time.Duration, kills)
	var killing time.Duration
	for i := range lives {
		// Anywhere in a run: before the first ack, mid-batch, with
		// batches in flight, between an ack and the offsets' save.
		lives[i] = 20*time.Millisecond + time.Duration(rng.Int64N(int64(300*time.Millisecond)))
		killing += lives[i]
	}
	written := make(chan struct{})
	go func() {
		defer close(written)
		const step = 1000
		for i := total / 2; i < total; i += step {
			appendJSONLines(t, log, "k", i, i+step)
			time.Sleep(killing / (total / 2 / step))
		}
	}()
	var runs []*proc
	for _, d := range lives {
		p := startShipper(t, args...)
		runs = append(runs, p)
		time.Sleep(d)
		p.kill()
	}
	<-written
	runs = append(runs, startShipper(t, args...))
	var c *contents
	testutil.CheckFor(t, 120*time.Second, 250*time.Millisecond, func() error {
		c = readStream(t, s.ClientURL())
		if c.distinct() < total {
			return fmt.Errorf("%d distinct records of %d", c.distinct(), total)
		}
		return nil
	})
	if m := missing(c, "k", total); len(m) > 0 {
		t.Fatalf("%d lines lost, first %q", len(m), m[0])
	}
	t.Logf("%d records stored for %d distinct after %d kills; %s", len(c.records), c.distinct(), kills, resendCounts(runs))
	if c.dups() != 0 {
		// What each run said of its resume: which batches it rebuilt,
		// which it could not.
		var said strings.Builder
		for i, p := range runs {
			for _, l := range strings.Split(p.stderr.String(), "\n") {
				if l != "" && !strings.Contains(l, "level=DEBUG") {
					fmt.Fprintf(&said, "\n  run %d: %s", i, l)
				}
			}
		}
		t.Fatalf("%d records stored twice:%s\nthe runs logged:%s", c.dups(), c.doubled(), said.String())
	}
}

// resendCounts sums what the shipper runs logged of their re-sent batches.
func resendCounts(runs []*proc) string {
	n, batches := 0, 0
	for _, p := range runs {
		for _, l := range strings.Split(p.stderr.String(), "\n") {
			if strings.Contains(l, "sent again under their IDs") {
				n++
				if i := strings.Index(l, "batches="); i >= 0 {
					k, _ := strconv.Atoi(strings.Fields(l[i+len("batches="):])[0])
					batches += k
				}
			}
		}
	}
	return fmt.Sprintf("%d resumes rebuilt %d batches of the run before", n, batches)
}

// The shipper is killed at each point of a batch's life: its records read
// but the batch not closed; published and stored, the acknowledgement not
// received; acknowledged, the offset not saved. The next run stores every
// record once: re-sent batches are dropped by the server as duplicates
// (counted in duplicate_acks_total) and nothing is lost.
func TestKillAtEachPoint(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
		// fill brings the running shipper p to the point where it is
		// killed; lines is what was written so far.
		fill func(t *testing.T, p *proc, log, state string, h *ackHolder, url string) (lines int)
		// resent: the next run must send batches of this one again.
		resent bool
		// plain: the file is plain text (one writer: the joiner holds its
		// last record only), else json-file with two streams.
		plain bool
	}{
		{name: "mid-batch", extra: []string{"--batch-wait", "3s", "--flush-timeout", "3s"}, plain: true,
			fill: func(t *testing.T, p *proc, log, state string, h *ackHolder, url string) int {
				addr := metricsAddr(t, p)
				appendLines(t, log, "k", 0, 1000)
				waitStored(t, url, 1000)
				appendLines(t, log, "k", 1000, 2000)
				testutil.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
					if n := scrape(t, addr, "faultline_shipper_records_read_total"); n < 1999 {
						return fmt.Errorf("%v records read", n)
					}
					return nil
				})
				if n := scrape(t, addr, "faultline_shipper_records_published_total"); n != 1000 {
					t.Fatalf("%v records published when killed, want the first batch's 1000 only", n)
				}
				return 2000
			}},
		{name: "between-publish-and-ack", resent: true,
			fill: func(t *testing.T, p *proc, log, state string, h *ackHolder, url string) int {
				appendJSONLines(t, log, "k", 0, 10000)
				waitStored(t, url, 10000)
				h.hold(true)
				appendJSONLines(t, log, "k", 10000, 30000)
				waitStored(t, url, 30000) // stored; no PubAck reached the shipper
				if off, size := savedOffset(state), fileSize(t, log); off >= size {
					t.Fatalf("offset %d saved of %d: the acknowledgements were not held", off, size)
				}
				return 30000
			}},
		{name: "after-ack-before-save", resent: true, extra: []string{"--save-interval", "5s"},
			fill: func(t *testing.T, p *proc, log, state string, h *ackHolder, url string) int {
				addr := metricsAddr(t, p)
				appendJSONLines(t, log, "k", 0, 10000)
				waitStored(t, url, 10000)
				testutil.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
					if savedOffset(state) == 0 {
						return fmt.Errorf("no offset saved yet")
					}
					return nil
				})
				// The next write is 5 s away.
				appendJSONLines(t, log, "k", 10000, 30000)
				testutil.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
					if n := scrape(t, addr, "faultline_shipper_records_published_total"); n < 30000 {
						return fmt.Errorf("%v records acknowledged", n)
					}
					return nil
				})
				if off, size := savedOffset(state), fileSize(t, log); off >= size {
					t.Fatalf("offset %d saved of %d when killed", off, size)
				}
				return 30000
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := testutil.RunJetStreamServer(t)
			h := newAckHolder(t, s.ClientURL())
			dir := t.TempDir()
			log := filepath.Join(dir, "c0ffee-json.log")
			write := appendJSONLines
			if tc.plain {
				log, write = filepath.Join(dir, "worker.log"), appendLines
			}
			state := filepath.Join(dir, "state")
			args := append(shipperArgs(h.url(), "spark-1", state, "--path", log, "--log-level", "info", "--metrics-addr", "127.0.0.1:0"), tc.extra...)
			p := startShipper(t, args...)
			n := tc.fill(t, p, log, state, h, s.ClientURL())
			p.kill()
			h.hold(false)

			p = startShipper(t, shipperArgs(s.ClientURL(), "spark-1", state, "--path", log, "--log-level", "info", "--metrics-addr", "127.0.0.1:0")...)
			addr := metricsAddr(t, p)
			write(t, log, "k", n, n+5000)
			c := waitStored(t, s.ClientURL(), n+5000)
			if m := missing(c, "k", n+5000); len(m) > 0 {
				t.Fatalf("%d lines lost, first %q", len(m), m[0])
			}
			resent := scrape(t, addr, "faultline_shipper_resent_batches_total")
			dups := scrape(t, addr, "faultline_shipper_duplicate_acks_total")
			t.Logf("%d records stored for %d distinct; the restart sent %v batches again, %v of them dropped by the server", len(c.records), c.distinct(), resent, dups)
			if c.dups() != 0 {
				t.Fatalf("%d records stored twice", c.dups())
			}
			if tc.resent && (resent == 0 || dups == 0) {
				t.Fatalf("resent_batches_total %v, duplicate_acks_total %v: want the batches of the killed run sent again and dropped", resent, dups)
			}
		})
	}
}

// waitStored waits until the stream holds n distinct records.
func waitStored(t *testing.T, url string, n int) *contents {
	t.Helper()
	var c *contents
	testutil.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		c = readStream(t, url)
		if c.distinct() < n {
			return fmt.Errorf("%d distinct records of %d", c.distinct(), n)
		}
		return nil
	})
	return c
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// A traceback whose writer stalled was sent in two records (the joiner
// gives up waiting after its hold-open time); the shipper dies before the
// acknowledgements come, and the next run reads the whole traceback at once,
// as one record: it is sent under a new batch ID (the batch it was first
// sent in no longer matches), so no line is lost, and only that record's ID
// is stored twice, the complete one last.
func TestResendChangedRecord(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	h := newAckHolder(t, s.ClientURL())
	dir := t.TempDir()
	log := filepath.Join(dir, "worker.log")
	state := filepath.Join(dir, "state")
	p := startShipper(t, shipperArgs(h.url(), "spark-1", state, "--path", log, "--log-level", "info")...)
	appendLines(t, log, "k", 0, 100)
	waitStored(t, s.ClientURL(), 100)
	h.hold(true)
	head := "Traceback (most recent call last):\n  File \"/app/serve.py\", line 10, in <module>\n"
	appendFile(t, log, head)
	var tb string
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		for _, r := range readStream(t, s.ClientURL()).records {
			if strings.HasPrefix(r.Text, "Traceback") {
				tb = r.ID
				return nil
			}
		}
		return fmt.Errorf("the traceback's head is not stored yet")
	})
	rest := "    main()\n  File \"/app/serve.py\", line 5, in main\n    raise ValueError(\"boom\")\nValueError: boom\n"
	appendFile(t, log, rest)
	appendLines(t, log, "k", 100, 110)
	waitStored(t, s.ClientURL(), 102) // head, the rest, at least the first line after
	p.kill()
	h.hold(false)

	p = startShipper(t, shipperArgs(s.ClientURL(), "spark-1", state, "--path", log, "--metrics-addr", "127.0.0.1:0")...)
	addr := metricsAddr(t, p)
	appendLines(t, log, "k", 110, 200)
	var c *contents
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		c = readStream(t, s.ClientURL())
		// The joiner takes up to 32 unindented lines after an exception
		// line as its message: the lines after the traceback are in its
		// record, in both runs.
		if m := missingLines(c, "k", 200); len(m) > 0 {
			return fmt.Errorf("%d lines missing, first %q", len(m), m[0])
		}
		if c.ids[tb] < 2 {
			return fmt.Errorf("the whole traceback is not stored")
		}
		return nil
	})
	var whole bool
	for _, r := range c.records {
		if r.ID == tb && strings.HasPrefix(r.Text, head+rest) {
			whole = true
		}
	}
	if !whole {
		t.Errorf("no record holds the whole traceback")
	}
	for id, n := range c.ids {
		if n > 1 && id != tb {
			t.Errorf("record %s stored %d times; only the traceback's may be", id, n)
		}
	}
	if n := scrape(t, addr, "faultline_shipper_resent_changed_records_total"); n < 1 {
		t.Errorf("resent_changed_records_total %v, want the traceback counted", n)
	}
}

// missingLines returns the expected lines that no record holds, alone or
// among its lines.
func missingLines(c *contents, prefix string, n int) []string {
	have := map[string]bool{}
	for _, r := range c.records {
		for _, l := range strings.Split(r.Text, "\n") {
			have[l] = true
		}
	}
	var out []string
	for i := 0; i < n; i++ {
		if s := fmt.Sprintf("%s line %07d INFO something happened here", prefix, i); !have[s] {
			out = append(out, s)
		}
	}
	return out
}

// PubAcks held back longer than the ack timeout (5 s): the shipper sends the
// same batches again, which the server stored already; it drops them as
// duplicates, and once the acknowledgements flow every record is stored
// once, none lost.
func TestPublishTimeoutResendsAreDropped(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	h := newAckHolder(t, s.ClientURL())
	dir := t.TempDir()
	log := filepath.Join(dir, "c0ffee-json.log")
	p := startShipper(t, shipperArgs(h.url(), "spark-1", filepath.Join(dir, "state"), "--path", log, "--log-level", "info", "--metrics-addr", "127.0.0.1:0")...)
	addr := metricsAddr(t, p)
	appendJSONLines(t, log, "k", 0, 1000)
	waitStored(t, s.ClientURL(), 1000)
	h.hold(true)
	appendJSONLines(t, log, "k", 1000, 20000)
	waitStored(t, s.ClientURL(), 20000)
	testutil.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if n := scrape(t, addr, "faultline_shipper_publish_errors_total"); n == 0 {
			return fmt.Errorf("no publish timed out yet")
		}
		return nil
	})
	h.hold(false)
	appendJSONLines(t, log, "k", 20000, 21000)
	c := waitStored(t, s.ClientURL(), 21000)
	testutil.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		if n := scrape(t, addr, "faultline_shipper_records_published_total"); n < 21000 {
			return fmt.Errorf("%v records acknowledged", n)
		}
		return nil
	})
	c = readStream(t, s.ClientURL())
	dups := scrape(t, addr, "faultline_shipper_duplicate_acks_total")
	t.Logf("%d records stored for %d distinct; %v batches sent again after a timeout were dropped by the server", len(c.records), c.distinct(), dups)
	if m := missing(c, "k", 21000); len(m) > 0 {
		t.Fatalf("%d lines lost, first %q", len(m), m[0])
	}
	if c.dups() != 0 {
		t.Fatalf("%d records stored twice", c.dups())
	}
	if dups == 0 {
		t.Errorf("duplicate_acks_total 0: the retries were not sent, or not recognised")
	}
}
