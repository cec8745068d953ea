package shipper_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/transport"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	binDir    string
)

func TestMain(m *testing.M) {
	binDir, _ = os.MkdirTemp("", "shipper-bin")
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// shipperBin builds cmd/shipper once for the test binary: the kill tests
// need a real process to kill -9.
//
// FAULTLINE_SHIPPER_BIN=path runs that binary instead (a build of another
// commit, to compare: BenchmarkShipper's before and after).
func shipperBin(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FAULTLINE_SHIPPER_BIN"); p != "" {
		return p
	}
	buildOnce.Do(func() {
		binPath = filepath.Join(binDir, "shipper")
		out, err := exec.Command("go", "build", "-o", binPath, "github.com/faultline/faultline/cmd/shipper").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// proc is a running shipper process.
type proc struct {
	cmd    *exec.Cmd
	stderr *testutil.Buffer
	done   chan struct{}
}

func startShipper(t *testing.T, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(shipperBin(t), args...)
	p := &proc{cmd: cmd, stderr: &testutil.Buffer{}, done: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("shipper %v stderr:\n%s", args, tail(p.stderr.String(), 4000))
		}
	})
	return p
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

// kill sends SIGKILL: no deferred function, no final offset write runs.
func (p *proc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *proc) stop(t *testing.T) {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Fatalf("shipper did not stop on SIGTERM")
	}
}

// streamContents reads every message of the stream and returns the records
// and, per record ID, how many times it is stored.
type contents struct {
	records  []parsers.Record
	ids      map[string]int
	subjects map[string]int
	msgs     int
}

func (c *contents) distinct() int { return len(c.ids) }

func (c *contents) dups() int {
	n := 0
	for _, k := range c.ids {
		n += k - 1
	}
	return n
}

// doubled describes the records stored more than once (at most 10): their
// text and where they were read, so that a failure says which batches to
// look at.
func (c *contents) doubled() string {
	var b strings.Builder
	n := 0
	for _, r := range c.records {
		if c.ids[r.ID] > 1 && n < 10 {
			fmt.Fprintf(&b, "\n  %s x%d: %s:%d %q", r.ID, c.ids[r.ID], r.File, r.Line, r.Text)
			n++
		}
	}
	return b.String()
}

func readStream(t testing.TB, url string) *contents {
	t.Helper()
	return readStreamWith(t, url)
}

// readStreamWith is readStream with connection options (TLS, nkey, creds).
func readStreamWith(t testing.TB, url string, opts ...nats.Option) *contents {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := &contents{ids: map[string]int{}, subjects: map[string]int{}}
	s, err := js.Stream(ctx, transport.StreamName)
	if err != nil {
		return c
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	last := info.State.LastSeq
	if info.State.Msgs == 0 {
		return c
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			t.Fatalf("reading stream: %v", err)
		}
		recs, err := transport.Decode(m.Data())
		if err != nil {
			t.Fatalf("bad message: %v", err)
		}
		if got := m.Headers().Get(transport.HeaderCount); got != fmt.Sprint(len(recs)) {
			t.Fatalf("Faultline-Count %q, body has %d records", got, len(recs))
		}
		// A batch sent again after a restart with records that changed
		// meanwhile (see shipper's sentLogFile) has a "-r" suffix.
		if id, want := m.Headers().Get(transport.HeaderMsgID), transport.MsgID(recs[0].ID, len(recs)); id != want && !strings.HasPrefix(id, want+"-r") {
			t.Fatalf("Nats-Msg-Id %q, want %q", id, want)
		}
		c.msgs++
		c.subjects[m.Subject()] += len(recs)
		for _, r := range recs {
			c.ids[r.ID]++
			c.records = append(c.records, r)
		}
		md, _ := m.Metadata()
		if md.Sequence.Stream >= last {
			return c
		}
	}
}

// texts returns the set of record texts (the test lines are unique).
func (c *contents) texts() map[string]int {
	m := map[string]int{}
	for _, r := range c.records {
		m[r.Text]++
	}
	return m
}

// appendLines writes lines "<prefix> <i>" for i in [from, to).
func appendLines(t testing.TB, path, prefix string, from, to int) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := from; i < to; i++ {
		fmt.Fprintf(&b, "%s line %07d INFO something happened here\n", prefix, i)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// missing returns the expected lines not in the stream.
func missing(c *contents, prefix string, n int) []string {
	texts := c.texts()
	var out []string
	for i := 0; i < n; i++ {
		s := fmt.Sprintf("%s line %07d INFO something happened here", prefix, i)
		if texts[s] == 0 {
			out = append(out, s)
		}
	}
	return out
}

// configError runs the shipper with args and wants it to exit at once with
// a message containing want (port 1: nothing listens, so the error must come
// before any connection attempt).
func configError(t *testing.T, want string, args ...string) {
	t.Helper()
	cmd := exec.Command(shipperBin(t), append(shipperArgs("nats://127.0.0.1:1", "spark-1", filepath.Join(t.TempDir(), "state"), "-"), args...)...)
	cmd.Stdin = strings.NewReader("")
	cmd.WaitDelay = 5 * time.Second
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill() // it is retrying instead of failing
		}
	}()
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("shipper %v succeeded:\n%s", args, out)
	}
	if !strings.Contains(string(out), want) {
		t.Fatalf("shipper %v: %v, want a message containing %q:\n%s", args, err, want, out)
	}
}
