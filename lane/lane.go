// Package lane is serve's live data path, one for both modes: a lane reads
// batches of records from a Source in stream order, parses them, runs them
// through its rule engine, offers the findings to the Announcer, indexes the
// events, and hands each batch's acknowledgement to the Committer, which
// settles it once the index has flushed it. On one machine one lane reads
// the whole stream; on a cluster each owned partition has its own.
//
// Resume model (both modes): a lane starts from two marks. Its engine is
// restored from a checkpoint (rule.Checkpoint: where each cluster's kept
// launches began), so records from there on are observed again while those
// before are skipped; the index mark (Resume.IndexFrom) says which records
// the index already holds, which are not indexed again. A replay observes
// without announcing what was announced before: the Announcer's ledger
// (sink.Ledger) knows the versions announced. Where the marks are kept is
// the caller's: on one machine the checkpoint file and the durable
// consumer's acknowledgements, on a cluster the partition's checkpoint in KV
// and this member's index progress.
//
// The Source is the boundary to the stream (NATS JetStream in serve; a
// slice of batches in tests). Start functions (Committer.Start,
// Announcer.Start) return the function that stops them.
package lane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/transport"
)

// Source yields batches in stream order. Read waits for the next until ctx
// ends (then it returns ctx's error and loses nothing: a later Read returns
// that batch). The AckFunc may be nil (nothing to settle).
type Source interface {
	Read(ctx context.Context) (transport.Batch, transport.AckFunc, error)
}

// Index is where a lane's events go (index.Store).
type Index interface {
	Add(ev *parsers.Event) error
}

// Metrics observe a lane's stages (serve's faultline_stage_seconds); nil
// methods are not called through a nil Metrics.
type Metrics interface {
	// Consumed: a live batch was read at now.
	Consumed(b *transport.Batch, now time.Time)
	// Rules: the batch's parsing and rules took d.
	Rules(d time.Duration)
	// Indexed: adding the batch's events to the index took d.
	Indexed(d time.Duration)
}

// Counters are kept by every lane of a process (for /metrics and
// /healthz).
type Counters struct {
	Records     atomic.Int64 // records handed to the index
	Evaluated   atomic.Int64 // events the rules saw
	BadMessages atomic.Int64
}

// Config is what a lane is made of.
type Config struct {
	// Part is the partition read (-1: the whole stream); events are
	// indexed with it (0 for the whole stream).
	Part      int
	Engine    *rule.Engine
	Seen      *Seen // record IDs seen, so a redelivered record is not observed twice
	Index     Index
	Announcer *Announcer
	Committer *Committer
	Counters  *Counters
	Metrics   Metrics
	// Live receives each live event after its rules ran (the web UI's
	// stream); nil: none.
	Live func(*parsers.Event)
	// Reopen reads the stream again from sequence from, and NewEngine
	// makes an engine, for a reload of the rules (see Reload); without
	// them reloads only swap the rules.
	Reopen    func(ctx context.Context, from uint64) (Source, error)
	NewEngine func(rules []*rule.Rule) *rule.Engine
	// Shippers, shared by the lanes of a process, says when two shipper
	// processes publish under one node name and notes it on the findings
	// of that node; nil: not watched.
	Shippers *Shippers
	Log      *slog.Logger
}

// Resume is where a lane starts (see the package doc).
type Resume struct {
	// Checkpoint the engine was restored from: records of a cluster before
	// its checkpoint launch are not observed.
	Checkpoint rule.Checkpoint
	// IndexFrom is the first stream sequence not known to be in the index.
	IndexFrom uint64
	// ReplayTo is the stream's last sequence when the lane started: up to
	// it, batches are a replay (their latencies and events are old).
	ReplayTo uint64
}

// Lane is one rule engine and what feeds it.
type Lane struct {
	cfg Config

	mu     sync.Mutex // guards engine and skip against Reload
	engine *rule.Engine
	skip   rule.Checkpoint

	indexFrom, replayTo uint64
	last                atomic.Uint64 // stream sequence of the last batch handled
	pending             atomic.Uint64 // messages left after the last one read (the lag)
	ready               chan struct{} // closed once the replay up to replayTo is done

	reload     chan []*rule.Rule
	cancelRead context.CancelFunc
}

// New returns a lane that resumes at r; its engine was restored from
// r.Checkpoint.
func New(cfg Config, r Resume) *Lane {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Seen == nil {
		cfg.Seen = NewSeen(1 << 16)
	}
	if cfg.Counters == nil {
		cfg.Counters = &Counters{}
	}
	l := &Lane{cfg: cfg, engine: cfg.Engine, skip: r.Checkpoint, indexFrom: r.IndexFrom, replayTo: r.ReplayTo,
		ready: make(chan struct{}), reload: make(chan []*rule.Rule, 1)}
	if r.ReplayTo == 0 {
		close(l.ready)
	}
	return l
}

// Part is the partition the lane reads (-1: the whole stream).
func (l *Lane) Part() int { return l.cfg.Part }

// Engine is the lane's rule engine (a Reload replaces it).
func (l *Lane) Engine() *rule.Engine {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.engine
}

// Checkpoint is the lane's engine's checkpoint.
func (l *Lane) Checkpoint() rule.Checkpoint { return l.Engine().Checkpoint() }

// Pending is how many messages were left after the last one read.
func (l *Lane) Pending() uint64 { return l.pending.Load() }

// Last is the stream sequence of the last batch handled.
func (l *Lane) Last() uint64 { return l.last.Load() }

// Ready is closed once the lane has handled its replay (the batches up to
// Resume.ReplayTo).
func (l *Lane) Ready() <-chan struct{} { return l.ready }

// Replay observes the batches of src up to stream sequence to (the
// warm-up after a restart): nothing is indexed or acknowledged, findings
// are offered (the ledger drops what was announced). It returns how many
// records the engine saw.
func (l *Lane) Replay(ctx context.Context, src Source, to uint64) (int, error) {
	n := 0
	for {
		b, _, err := src.Read(ctx)
		if err != nil {
			return n, err
		}
		n += l.observe(&b, false, l.cfg.Seen, l.Engine(), l.skip, nil)
		if b.Seq != 0 {
			l.last.Store(b.Seq)
		}
		if b.Seq >= to {
			return n, nil
		}
	}
}

// Follow handles the batches of src until ctx ends (nil) or src fails: each
// is observed, indexed from Resume.IndexFrom on, and its acknowledgement
// handed to the Committer.
func (l *Lane) Follow(ctx context.Context, src Source) error {
	for {
		// A reload asked for is done between two batches.
		select {
		case rules := <-l.reload:
			l.doReload(ctx, rules)
		default:
		}
		rctx, cancel := context.WithCancel(ctx)
		l.mu.Lock()
		l.cancelRead = cancel
		l.mu.Unlock()
		if len(l.reload) > 0 {
			cancel() // asked for before cancelRead was set
		}
		b, ack, err := src.Read(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if rctx.Err() != nil {
				continue // a reload
			}
			return err
		}
		l.handle(ctx, &b, ack)
	}
}

// handle evaluates and indexes the records of one batch and hands its
// acknowledgement to the committer. Every record's rules run before any is
// indexed (Add may wait for the index's writers): a finding does not wait
// for the batch's indexing.
func (l *Lane) handle(ctx context.Context, b *transport.Batch, ack transport.AckFunc) {
	got := time.Now()
	live := b.Seq == 0 || b.Seq > l.replayTo
	if live && l.cfg.Metrics != nil {
		l.cfg.Metrics.Consumed(b, got)
	}
	if b.Err != nil {
		// The good records before the fault are still used; a
		// redelivery would fail the same way, so the batch is acked.
		l.cfg.Log.Warn("bad message", "subject", b.Subject, "seq", b.Seq, "err", b.Err)
		l.cfg.Counters.BadMessages.Add(1)
	}
	l.pending.Store(b.Pending)
	var evs []parsers.Event
	l.observe(b, live, l.cfg.Seen, l.Engine(), l.skip, &evs)
	indexing := time.Now()
	if l.cfg.Metrics != nil {
		l.cfg.Metrics.Rules(indexing.Sub(got))
	}
	for i := range evs {
		if err := l.cfg.Index.Add(&evs[i]); err != nil {
			l.cfg.Log.Error("index add", "id", evs[i].ID, "err", err)
		}
	}
	l.cfg.Counters.Records.Add(int64(len(evs)))
	if l.cfg.Metrics != nil {
		l.cfg.Metrics.Indexed(time.Since(indexing))
	}
	if b.Seq != 0 {
		l.last.Store(b.Seq)
	}
	if l.cfg.Committer != nil {
		l.cfg.Committer.add(ctx, ack, len(evs))
	}
	if !live && b.Seq >= l.replayTo {
		l.markReady()
	}
	if live {
		l.markReady()
	}
}

func (l *Lane) markReady() {
	select {
	case <-l.ready:
	default:
		close(l.ready)
	}
}

// observe runs the records of b through engine (those not seen before and
// not before their cluster's checkpoint launch) and offers the findings;
// with evs, it appends the events to index. It returns how many records
// the engine saw.
func (l *Lane) observe(b *transport.Batch, live bool, seen *Seen, engine *rule.Engine, skip rule.Checkpoint, evs *[]parsers.Event) int {
	if cs := l.cfg.Shippers.Observe(b); len(cs) > 0 && l.cfg.Announcer != nil {
		l.offerNoted(engine, cs, b, live)
	}
	n := 0
	for i := range b.Records {
		ev := parsers.Parse(b.Records[i])
		if ev.ID == "" {
			continue
		}
		pos := StreamPos(b.Seq, i)
		if skip.Skip(ev.Cluster, pos) {
			// Before its cluster's checkpoint launch: it belongs to a
			// launch the engine had forgotten.
			seen.Add(ev.ID)
		} else if seen.Add(ev.ID) {
			if fs := engine.ObserveAt(&ev, pos); len(fs) > 0 && l.cfg.Announcer != nil {
				l.cfg.Shippers.Annotate(fs)
				l.cfg.Announcer.Offer(fs, b, live)
			}
			n++
			l.cfg.Counters.Evaluated.Add(1)
			if live && l.cfg.Live != nil {
				c := ev
				l.cfg.Live(&c)
			}
		}
		if evs == nil || (b.Seq != 0 && b.Seq < l.indexFrom) {
			continue // indexed before
		}
		ev.Partition = max(l.cfg.Part, 0)
		*evs = append(*evs, ev)
	}
	return n
}

// offerNoted offers again, with their new note, the active findings of
// the nodes under which several shipper processes were just found
// publishing (a finding raised before the second one's batches came).
func (l *Lane) offerNoted(engine *rule.Engine, cs []Conflict, b *transport.Batch, live bool) {
	var fs []finding.Finding
	for _, f := range engine.Findings() {
		if f.Status == finding.Active && slices.ContainsFunc(cs, func(c Conflict) bool {
			return c.Cluster == f.Cluster && slices.Contains(f.Nodes, c.Node)
		}) {
			fs = append(fs, f)
		}
	}
	if len(fs) > 0 {
		l.cfg.Shippers.Annotate(fs)
		l.cfg.Announcer.Offer(fs, b, live)
	}
}

// Reload makes the lane run rules: between two batches it replays the
// stream from its checkpoint through a new engine with them (so that a new
// rule looks at the launches already running), then announces what the new
// engine says that differs from what was announced, and retracts what it no
// longer says. Without Config.Reopen the rules are only swapped.
func (l *Lane) Reload(rules []*rule.Rule) {
	if l.cfg.Reopen == nil || l.cfg.NewEngine == nil {
		l.Engine().SetRules(rules)
		return
	}
	select {
	case <-l.reload: // an older ask not done yet: this one replaces it
	default:
	}
	l.reload <- rules
	l.mu.Lock()
	if l.cancelRead != nil {
		l.cancelRead()
	}
	l.mu.Unlock()
}

// doReload is Reload's work, on the lane's goroutine.
func (l *Lane) doReload(ctx context.Context, rules []*rule.Rule) {
	start := time.Now()
	old := l.Engine()
	cp := old.Checkpoint()
	to := l.last.Load()
	fresh := l.cfg.NewEngine(rules)
	fresh.Restore(cp, nil)
	n := 0
	if from := PosSeq(cp.From()); len(cp) > 0 && to > 0 && from <= to {
		src, err := l.cfg.Reopen(ctx, from)
		if err == nil {
			n, err = l.replayInto(ctx, src, to, fresh, cp)
		}
		if err != nil {
			// The running engine stays whole: its rules only swap.
			l.cfg.Log.Error("rule reload: the running launches could not be read again; the new rules see only what comes next",
				"part", l.cfg.Part, "err", err)
			old.SetRules(rules)
			return
		}
	}
	l.mu.Lock()
	l.engine, l.skip = fresh, cp
	l.mu.Unlock()
	if l.cfg.Announcer != nil {
		l.cfg.Announcer.Supersede(old.Findings(), fresh)
	}
	l.cfg.Log.Info("rule reload: running launches evaluated again", "part", l.cfg.Part, "records", n,
		"from_seq", PosSeq(cp.From()), "to_seq", to, "took", time.Since(start))
}

// replayInto observes src up to sequence to with engine e (a reload's
// replay: nothing is offered, indexed or counted as seen by the lane).
func (l *Lane) replayInto(ctx context.Context, src Source, to uint64, e *rule.Engine, cp rule.Checkpoint) (int, error) {
	if c, ok := src.(interface{ Close() }); ok {
		defer c.Close()
	}
	seen := NewSeen(1 << 16)
	n := 0
	for {
		b, _, err := src.Read(ctx)
		if err != nil {
			return n, fmt.Errorf("replay: %w", err)
		}
		for i := range b.Records {
			ev := parsers.Parse(b.Records[i])
			pos := StreamPos(b.Seq, i)
			if ev.ID == "" || cp.Skip(ev.Cluster, pos) || !seen.Add(ev.ID) {
				continue
			}
			e.ObserveAt(&ev, pos)
			n++
		}
		if b.Seq >= to {
			return n, nil
		}
	}
}

// ErrStopped is returned by a Source whose reading was stopped for a reason
// other than its context (a partition whose lease is no longer certain).
var ErrStopped = errors.New("lane: source stopped")
