package lane

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
)

const seedDir = "../testdata/logs/seed"

// storyBatches reads a seed story as the stream holds it: the records
// merged by time, in messages of up to n records of one node, numbered
// from sequence 1.
func storyBatches(t testing.TB, story string, n int) []transport.Batch {
	t.Helper()
	dir := filepath.Join(seedDir, story)
	inputs, err := pipeline.ParseArgs([]string{"spark-1=" + dir + "/spark-1", "spark-2=" + dir + "/spark-2"})
	if err != nil {
		t.Fatal(err)
	}
	var recs []parsers.Record
	if _, err := pipeline.Replay(context.Background(), inputs, pipeline.Options{Cluster: rule.DefaultCluster}, func(ev *parsers.Event) error {
		recs = append(recs, ev.Record)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var out []transport.Batch
	for _, r := range recs {
		if k := len(out) - 1; k >= 0 && len(out[k].Records) < n && out[k].Records[0].Node == r.Node {
			out[k].Records = append(out[k].Records, r)
			continue
		}
		out = append(out, transport.Batch{Seq: uint64(len(out) + 1), Records: []parsers.Record{r}})
	}
	return out
}

// diagnoseStory is what the offline path finds in a story.
func diagnoseStory(t testing.TB, rules []*rule.Rule, bs []transport.Batch) []finding.Finding {
	e := rule.NewEngine(rules)
	for _, b := range bs {
		for _, r := range b.Records {
			ev := parsers.Parse(r)
			e.Observe(&ev)
		}
	}
	return e.Findings()
}

// fakeSource hands out batches as the stream would (the boundary: no NATS
// here), and records the acknowledgements.
type fakeSource struct {
	mu    sync.Mutex
	bs    []transport.Batch
	next  int
	acked []uint64
	more  chan struct{}
}

func newSource(bs []transport.Batch) *fakeSource {
	return &fakeSource{bs: bs, more: make(chan struct{}, 1)}
}

// push appends batches (numbered on from the last).
func (s *fakeSource) push(bs ...transport.Batch) {
	s.mu.Lock()
	for _, b := range bs {
		b.Seq = uint64(len(s.bs) + 1)
		s.bs = append(s.bs, b)
	}
	s.mu.Unlock()
	select {
	case s.more <- struct{}{}:
	default:
	}
}

func (s *fakeSource) Read(ctx context.Context) (transport.Batch, transport.AckFunc, error) {
	for {
		s.mu.Lock()
		if s.next < len(s.bs) {
			b := s.bs[s.next]
			s.next++
			s.mu.Unlock()
			return b, func(context.Context, error) error {
				s.mu.Lock()
				s.acked = append(s.acked, b.Seq)
				s.mu.Unlock()
				return nil
			}, nil
		}
		s.mu.Unlock()
		select {
		case <-ctx.Done():
			return transport.Batch{}, nil, ctx.Err()
		case <-s.more:
		}
	}
}

// from is a source over the same batches from sequence seq on.
func (s *fakeSource) from(seq uint64) *fakeSource {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := newSource(slices.Clone(s.bs))
	c.next = int(seq - 1)
	return c
}

func (s *fakeSource) ackedCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.acked)
}

// recorder is a sink that keeps what it was given; fail, when set, decides
// whether a call fails.
type recorder struct {
	mu    sync.Mutex
	got   []finding.Finding
	calls int
	fail  func(call int) error
}

func (r *recorder) Announce(ctx context.Context, fs []finding.Finding) error {
	r.mu.Lock()
	r.calls++
	call := r.calls
	fail := r.fail
	r.mu.Unlock()
	if fail != nil {
		if err := fail(call); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.got = append(r.got, fs...)
	r.mu.Unlock()
	return nil
}

func (r *recorder) Close() error { return nil }

func (r *recorder) all() []finding.Finding {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// rig is a lane over a real index on disk, its committer and announcer.
type rig struct {
	t      *testing.T
	dir    string
	idx    *index.Index
	ledger *sink.StoreLedger
	out    *recorder
	ann    *Announcer
	commit *Committer
	lane   *Lane
	rules  []*rule.Rule
	stop   []func()
}

func newEngine(rules []*rule.Rule) *rule.Engine {
	e := rule.NewEngine(rules)
	e.ForgetFindings()
	return e
}

// newRig opens (or reopens) the index in dir and makes a lane restored
// from cp, with the announcer's settle window settle.
func newRig(t *testing.T, dir string, rules []*rule.Rule, out *recorder, cp rule.Checkpoint, settle time.Duration, src *fakeSource) *rig {
	t.Helper()
	idx, err := index.Open(dir, index.Options{Shards: 1, Safe: true, FlushInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, dir: dir, idx: idx, out: out, rules: rules}
	r.ledger = sink.NewStoreLedger(idx)
	r.ann = NewAnnouncer(r.ledger, out, AnnouncerOptions{Settle: settle, Backoff: 10 * time.Millisecond, Drain: time.Second})
	r.commit = NewCommitter(idx.Flush, 20*time.Millisecond, nil, nil)
	e := newEngine(rules)
	e.Restore(cp, nil)
	cfg := Config{Part: -1, Engine: e, Index: idx, Announcer: r.ann, Committer: r.commit, NewEngine: newEngine}
	if src != nil {
		cfg.Reopen = func(_ context.Context, from uint64) (Source, error) { return src.from(from), nil }
	}
	r.lane = New(cfg, Resume{Checkpoint: cp})
	ctx := context.Background()
	r.stop = append(r.stop, r.commit.Start(ctx), r.ann.Start(ctx))
	t.Cleanup(r.close)
	return r
}

func (r *rig) close() {
	for i := len(r.stop) - 1; i >= 0; i-- {
		r.stop[i]()
	}
	r.stop = nil
	r.idx.Close()
}

// follow runs the lane over src until the test ends.
func (r *rig) follow(src Source) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.lane.Follow(ctx, src) }()
	r.stop = append(r.stop, func() {
		cancel()
		if err := <-done; err != nil {
			r.t.Errorf("Follow: %v", err)
		}
	})
}

func ids(fs []finding.Finding) []string {
	set := map[string]bool{}
	for _, f := range fs {
		if f.Status != finding.Retracted {
			set[f.ID] = true
		}
	}
	var out []string
	for id := range set {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

func builtin(t testing.TB) []*rule.Rule {
	rules, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	return rules
}

// A lane over the seed story (two launches) finds what diagnose finds,
// indexes every record, acknowledges every batch only after the index
// flushed it, and announces each finding's versions under revisions 1, 2,
// ... A restart from its checkpoint replays the kept launches without
// announcing anything again.
func TestLaneFollowsAndResumes(t *testing.T) {
	rules := builtin(t)
	bs := storyBatches(t, "both", 20)
	want := ids(diagnoseStory(t, rules, bs))
	dir := t.TempDir()
	out := &recorder{}
	src := newSource(bs)
	r := newRig(t, dir, rules, out, nil, 20*time.Millisecond, src)
	r.follow(src)
	testutil.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if n := src.ackedCount(); n != len(bs) {
			return fmt.Errorf("%d of %d batches acknowledged", n, len(bs))
		}
		if got := ids(r.idx.Findings()); !slices.Equal(got, want) {
			return fmt.Errorf("stored findings %v, want %v", got, want)
		}
		return nil
	})
	records := 0
	for _, b := range bs {
		records += len(b.Records)
	}
	if n, err := r.idx.DocCount(); err != nil || n != uint64(records) {
		t.Errorf("index holds %d records (%v), want %d", n, err, records)
	}
	revs := map[string][]int{}
	for _, f := range out.all() {
		revs[f.ID] = append(revs[f.ID], f.Revision)
	}
	for id, rs := range revs {
		for i, rev := range rs {
			if rev != i+1 {
				t.Errorf("finding %s announced with revisions %v, want 1, 2, ...", id, rs)
				break
			}
		}
	}
	if got := ids(out.all()); !slices.Equal(got, want) {
		t.Errorf("announced %v, want %v", got, want)
	}
	cp := r.lane.Checkpoint()
	announced := len(out.all())
	r.close()

	// Restart: the replay from the checkpoint announces nothing again.
	r = newRig(t, dir, rules, out, cp, 20*time.Millisecond, nil)
	n, err := r.lane.Replay(context.Background(), src.from(PosSeq(cp.From())), uint64(len(bs)))
	if err != nil || n == 0 {
		t.Fatalf("replay: %d records, %v", n, err)
	}
	time.Sleep(100 * time.Millisecond) // past the settle window
	r.close()
	if got := out.all()[announced:]; len(got) != 0 {
		t.Errorf("the replay announced %d versions again: %v", len(got), ids(got))
	}
}

// Issue 22 item 6: a version counts as announced only once every sink took
// it. A sink that fails is given the version again, under the same
// revision, until it takes it; the store (what /api/findings shows) has it
// only then. Fails on a sink chain that stores a version as announced
// before the sink after it took it.
func TestAnnouncedOnlyOnceEverySinkTookIt(t *testing.T) {
	dir := t.TempDir()
	idx, err := index.Open(dir, index.Options{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	first, flaky := &recorder{}, &recorder{}
	var down sync.Mutex
	down.Lock() // the flaky sink fails until unlocked
	flaky.fail = func(int) error {
		if down.TryLock() {
			down.Unlock()
			return nil
		}
		return errors.New("sink down")
	}
	ledger := sink.NewStoreLedger(idx)
	a := NewAnnouncer(ledger, sink.Multi{first, flaky}, AnnouncerOptions{Settle: -1, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	stop := a.Start(context.Background())
	defer func() { stop() }()
	f := finding.Finding{ID: "f1", Rule: "r", Status: finding.Active, Updates: 1, Title: "t"}
	a.Offer([]finding.Finding{f}, nil, false)
	testutil.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if n := len(first.all()); n < 3 {
			return fmt.Errorf("the first sink got %d deliveries, want retries", n)
		}
		return nil
	})
	if got := idx.Findings(); len(got) != 0 {
		t.Errorf("stored as announced while a sink had not taken it: %+v", got)
	}
	down.Unlock()
	testutil.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if len(flaky.all()) != 1 || len(idx.Findings()) != 1 {
			return fmt.Errorf("flaky sink has %d, store %d", len(flaky.all()), len(idx.Findings()))
		}
		return nil
	})
	for _, g := range append(first.all(), flaky.all()...) {
		if g.ID != "f1" || g.Revision != 1 {
			t.Errorf("delivered %s revision %d, want f1 revision 1 each time", g.ID, g.Revision)
		}
	}
	if got := idx.Findings()[0]; got.Revision != 1 {
		t.Errorf("stored revision %d, want 1", got.Revision)
	}
	// The next version is revision 2, once.
	f.Updates, f.Title = 2, "t2"
	a.Offer([]finding.Finding{f}, nil, false)
	testutil.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if got, ok := ledger.Announced("f1"); !ok || got.Revision != 2 {
			return fmt.Errorf("announced %+v", got)
		}
		return nil
	})
}

// A slow sink never holds the lane: Offer returns at once, and the
// announcer's stop cancels the delivery within its drain bound. Fails
// where findings are announced on the lane under a context that nothing
// cancels.
func TestSlowSinkDoesNotHoldTheLane(t *testing.T) {
	dir := t.TempDir()
	idx, err := index.Open(dir, index.Options{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	blocking := sinkFunc(func(ctx context.Context, fs []finding.Finding) error {
		<-ctx.Done()
		return ctx.Err()
	})
	a := NewAnnouncer(sink.NewStoreLedger(idx), blocking, AnnouncerOptions{Settle: -1, Timeout: time.Hour, Drain: 200 * time.Millisecond})
	stop := a.Start(context.Background())
	start := time.Now()
	for i := range 100 {
		a.Offer([]finding.Finding{{ID: fmt.Sprint(i), Status: finding.Active, Updates: 1}}, nil, true)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("100 offers to a stuck sink took %v", d)
	}
	start = time.Now()
	stop()
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("stop with a stuck sink took %v, want about the drain bound (200 ms)", d)
	}
	if len(idx.Findings()) != 0 {
		t.Errorf("stored as announced although the sink never took them")
	}
}

type sinkFunc func(ctx context.Context, fs []finding.Finding) error

func (f sinkFunc) Announce(ctx context.Context, fs []finding.Finding) error { return f(ctx, fs) }
func (f sinkFunc) Close() error                                             { return nil }

// Versions of a finding that come within the settle window are announced
// once, as the last of them.
func TestAnnouncerSettles(t *testing.T) {
	dir := t.TempDir()
	idx, err := index.Open(dir, index.Options{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	out := &recorder{}
	a := NewAnnouncer(sink.NewStoreLedger(idx), out, AnnouncerOptions{Settle: 100 * time.Millisecond, FirstSettle: 100 * time.Millisecond, MaxSettle: 10 * time.Second})
	stop := a.Start(context.Background())
	defer stop()
	for i := 1; i <= 5; i++ {
		a.Offer([]finding.Finding{{ID: "f", Status: finding.Active, Updates: i, Title: fmt.Sprint("v", i)}}, nil, true)
		time.Sleep(10 * time.Millisecond)
	}
	testutil.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if len(out.all()) == 0 {
			return errors.New("nothing announced")
		}
		return nil
	})
	time.Sleep(200 * time.Millisecond)
	got := out.all()
	if len(got) != 1 || got[0].Title != "v5" || got[0].Revision != 1 {
		t.Errorf("announced %+v, want v5 once as revision 1", got)
	}
}

const probeRule = `id: probe
cause: port-in-use
title: 'probe {{ first .probe }}'
cases:
  - severity: warning
    confidence: high
evidence: [probe]
summary: 'probe {{ first .probe }}'
condition: len(probe) > 0
remediation: 'none'
---
project: probe
facts:
  probe: {description: the word after Ray runtime}
messages:
  - id: probe.test.word
    subsystem: test
    printed_by: this test
    versions: '1.0'
    meaning: cause
    causes: [port-in-use]
    match: {regex: 'Ray runtime (?P<value>started)'}
    facts: {probe: $value}
    example: 'Ray runtime started.'
    yields: {probe: [started]}
`

// Issue 23 item 7: a rule added by a reload looks at the launch already
// running (its records are read again through the new rules), and a rule
// removed takes its findings back. Fails where a reload only swaps the
// rules for the records to come.
func TestReloadEvaluatesTheRunningLaunch(t *testing.T) {
	rules := builtin(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "probe.yaml"), []byte(probeRule), 0o644); err != nil {
		t.Fatal(err)
	}
	withProbe, err := rule.Load([]string{dir}, false)
	if err != nil {
		t.Fatal(err)
	}
	bs := storyBatches(t, "failed", 20)
	src := newSource(bs)
	out := &recorder{}
	r := newRig(t, t.TempDir(), rules, out, nil, 10*time.Millisecond, src)
	r.follow(src)
	stored := func(rule string) (finding.Finding, bool) {
		for _, f := range r.idx.Findings() {
			if f.Rule == rule {
				return f, true
			}
		}
		return finding.Finding{}, false
	}
	testutil.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if _, ok := stored("ray-node-ip-mismatch"); !ok || src.ackedCount() != len(bs) {
			return fmt.Errorf("no ray-node-ip-mismatch finding stored yet")
		}
		return nil
	})
	r.lane.Reload(withProbe)
	testutil.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		f, ok := stored("probe")
		if !ok || f.Status != finding.Active || !slices.Equal(f.Facts["probe"], []string{"started"}) {
			return fmt.Errorf("probe finding %+v (%v): want it raised from the running launch's records", f, ok)
		}
		return nil
	})
	mismatch, _ := stored("ray-node-ip-mismatch")
	// New records still reach the new rules.
	more := bs[len(bs)-1]
	more.Records = []parsers.Record{more.Records[0]}
	more.Records[0].ID += "-again"
	more.Records[0].Text = "2026-04-08 23:30:00,000\tINFO scripts.py:963 -- Ray runtime started."
	src.push(more)

	// The probe rule removed: its finding is retracted; the others stand
	// unchanged (not announced again).
	before := len(out.all())
	r.lane.Reload(rules)
	testutil.CheckFor(t, 20*time.Second, 10*time.Millisecond, func() error {
		if f, _ := stored("probe"); f.Status != finding.Retracted {
			return fmt.Errorf("probe finding %s after its rule was removed, want retracted", f.Status)
		}
		return nil
	})
	for _, f := range out.all()[before:] {
		if f.Rule != "probe" {
			t.Errorf("reload announced %s (%s) again", f.Rule, f.Status)
		}
	}
	if f, _ := stored("ray-node-ip-mismatch"); f.Revision != mismatch.Revision {
		t.Errorf("ray-node-ip-mismatch revision %d after the reload, want %d (unchanged)", f.Revision, mismatch.Revision)
	}
}
