package lane

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
)

// Announcer passes the findings the lanes offer on to the sinks, at least
// once and in its own goroutine (a slow sink never holds a lane):
//
//   - Settling: a finding's versions are gathered until none came for
//     Settle (at most MaxSettle after the first): a burst of facts (one
//     batch of records, a node's lines after the other's) becomes one
//     revision, not one per record. A finding never announced waits only
//     FirstSettle (the records of the batch that raised it), so that the
//     alert is not late.
//   - Its ledger (sink.Ledger) reserves the latest version under the next
//     revision, the sinks get it (each delivery bounded by Timeout and
//     cancelled at shutdown), and only once every sink took it is it
//     confirmed as announced. A failed delivery is tried again, under the
//     same revision, after a backoff; a version not confirmed when the
//     process dies is derived again by the replay and delivered then. A
//     reader de-duplicates by (id, revision).
type Announcer struct {
	ledger sink.Ledger
	sinks  sink.Sink
	opts   AnnouncerOptions

	mu      sync.Mutex
	entries map[string]*entry
	wake    chan struct{}
	failing string // the last delivery error, logged once per change
}

// AnnouncerOptions tune an Announcer; zero fields take the defaults.
type AnnouncerOptions struct {
	// Settle is how long a finding's version waits for a newer one
	// (DefaultSettle; negative: none), FirstSettle the same for a finding
	// not announced before (DefaultFirstSettle, at most Settle);
	// MaxSettle bounds the wait from the first version offered
	// (DefaultMaxSettle).
	Settle, FirstSettle, MaxSettle time.Duration
	// Timeout bounds one delivery to the sinks (10 s); a failed one is
	// tried again after Backoff (500 ms), doubling up to MaxBackoff (30 s).
	Timeout, Backoff, MaxBackoff time.Duration
	// Drain bounds the deliveries of what is pending at stop (5 s).
	Drain   time.Duration
	Metrics AnnounceMetrics
	Log     *slog.Logger
}

// DefaultSettle: the seed story shipped as a backlog gave 3 revisions
// without settling, 2 with 50 ms or 150 ms (and each added its window to
// a revision's latency). DefaultFirstSettle covers the rest of the batch
// that raised a finding; DefaultMaxSettle bounds a finding that changes all
// the time.
const (
	DefaultSettle      = 50 * time.Millisecond
	DefaultFirstSettle = 20 * time.Millisecond
	DefaultMaxSettle   = time.Second
)

// AnnounceMetrics observe the announcer (serve's stage metrics).
type AnnounceMetrics interface {
	// Delivered: one delivery of n versions to the sinks took d.
	Delivered(n int, d time.Duration)
	// Found: a version raised by a live record read by its shipper at
	// readAt and stored by JetStream at stored (zero: not known) reached
	// every sink at now.
	Found(readAt, stored, now time.Time)
}

// entry is one finding's way to the sinks.
type entry struct {
	next        finding.Finding // the latest version offered, not reserved yet
	hasNext     bool
	first, last time.Time // when next's first and latest versions were offered
	fresh       bool      // the finding was not announced when next's first version came
	// held is the version reserved and not yet confirmed; delivered, once
	// every sink took it (its confirmation failed).
	held      finding.Finding
	hasHeld   bool
	delivered bool
	retryAt   time.Time
	attempt   int
	// readAt, stored: of the earliest live record waiting to be announced.
	readAt, stored time.Time
	live           bool
}

func (e *entry) due(o *AnnouncerOptions) time.Time {
	var at time.Time
	if e.hasNext {
		settle := o.Settle
		if e.fresh {
			settle = o.FirstSettle
		}
		at = e.last.Add(settle)
		if lim := e.first.Add(o.MaxSettle); lim.Before(at) {
			at = lim
		}
	}
	if e.retryAt.After(at) || !e.hasNext {
		at = e.retryAt
	}
	return at
}

// NewAnnouncer announces to sinks through ledger.
func NewAnnouncer(ledger sink.Ledger, sinks sink.Sink, opts AnnouncerOptions) *Announcer {
	switch {
	case opts.Settle == 0:
		opts.Settle = DefaultSettle
	case opts.Settle < 0:
		opts.Settle = 0
	}
	switch {
	case opts.FirstSettle == 0:
		opts.FirstSettle = DefaultFirstSettle
	case opts.FirstSettle < 0:
		opts.FirstSettle = 0
	}
	opts.FirstSettle = min(opts.FirstSettle, opts.Settle)
	if opts.MaxSettle <= 0 {
		opts.MaxSettle = DefaultMaxSettle
	}
	opts.MaxSettle = max(opts.MaxSettle, opts.Settle)
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 30 * time.Second
	}
	if opts.Drain <= 0 {
		opts.Drain = 5 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Announcer{ledger: ledger, sinks: sinks, opts: opts, entries: map[string]*entry{}, wake: make(chan struct{}, 1)}
}

// Ledger is the announcer's ledger.
func (a *Announcer) Ledger() sink.Ledger { return a.ledger }

// Offer hands the announcer new versions of findings, raised by batch b
// (live: not a replay); it never waits.
func (a *Announcer) Offer(fs []finding.Finding, b *transport.Batch, live bool) {
	now := time.Now()
	a.mu.Lock()
	for _, f := range fs {
		e := a.entries[f.ID]
		if e == nil {
			e = &entry{}
			a.entries[f.ID] = e
		}
		e.next, e.hasNext, e.last = f, true, now
		if e.first.IsZero() {
			e.first = now
			_, announced := a.ledger.Announced(f.ID)
			e.fresh = !announced && !e.hasHeld
		}
		if live && !e.live && b != nil {
			e.readAt, e.stored, e.live = b.ReadAt, b.Stored, true
		}
	}
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// Pending is how many findings have a version not yet announced.
func (a *Announcer) Pending() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.entries)
}

// Start runs the announcer until the returned stop is called (or ctx
// ends); stop then delivers what is pending, for at most Drain.
func (a *Announcer) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		a.run(ctx)
	}()
	return func() {
		cancel()
		<-done
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), a.opts.Drain)
		defer cancel()
		a.deliver(dctx, a.take(time.Time{}))
		if n := a.Pending(); n > 0 {
			a.opts.Log.Warn("findings not announced at stop; the next start derives and announces them", "findings", n)
		}
	}
}

func (a *Announcer) run(ctx context.Context) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		now := time.Now()
		if ids := a.take(now); len(ids) > 0 {
			a.deliver(ctx, ids)
			continue
		}
		wait := time.Hour
		if at := a.nextDue(); !at.IsZero() {
			wait = max(time.Until(at), time.Millisecond)
		}
		t.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-a.wake:
		case <-t.C:
		}
	}
}

// take returns the findings due at now (every one with zero now).
func (a *Announcer) take(now time.Time) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var ids []string
	for id, e := range a.entries {
		if now.IsZero() || !e.due(&a.opts).After(now) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (a *Announcer) nextDue() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	var at time.Time
	for _, e := range a.entries {
		if d := e.due(&a.opts); at.IsZero() || d.Before(at) {
			at = d
		}
	}
	return at
}

// deliver reserves the latest versions of findings ids, hands them to the
// sinks together and confirms them.
func (a *Announcer) deliver(ctx context.Context, ids []string) {
	type work struct {
		id      string
		f       finding.Finding
		confirm bool // delivered before: only its confirmation is due
		readAt  time.Time
		stored  time.Time
		live    bool
	}
	var todo []work
	for _, id := range ids {
		a.mu.Lock()
		e := a.entries[id]
		next, hasNext := e.next, e.hasNext
		if hasNext {
			e.hasNext, e.first = false, time.Time{}
		}
		a.mu.Unlock()
		w := work{id: id}
		switch {
		case hasNext:
			g, ok, err := a.ledger.Reserve(ctx, next)
			if err != nil {
				a.failed(id, err, &next)
				continue
			}
			if !ok { // announced already
				a.mu.Lock()
				e.live, e.readAt, e.stored = false, time.Time{}, time.Time{}
				a.mu.Unlock()
				a.drop(id)
				continue
			}
			a.mu.Lock()
			e.held, e.hasHeld, e.delivered = g, true, false
			if sink.Newer(next, g) && !e.hasNext {
				// The ledger gave an older version to deliver first (another
				// member's, never confirmed): next comes after it.
				e.next, e.hasNext = next, true
				e.first, e.last = time.Now(), time.Now()
			}
			a.mu.Unlock()
			w.f = g
		default:
			a.mu.Lock()
			w.f, w.confirm = e.held, e.delivered
			held := e.hasHeld
			a.mu.Unlock()
			if !held {
				a.drop(id)
				continue
			}
		}
		a.mu.Lock()
		w.readAt, w.stored, w.live = e.readAt, e.stored, e.live
		a.mu.Unlock()
		todo = append(todo, w)
	}
	var out []finding.Finding
	for _, w := range todo {
		if !w.confirm {
			out = append(out, w.f)
		}
	}
	if len(out) > 0 {
		dctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
		start := time.Now()
		err := a.sinks.Announce(dctx, finding.Order(slices.Clone(out)))
		cancel()
		if a.opts.Metrics != nil {
			a.opts.Metrics.Delivered(len(out), time.Since(start))
		}
		if err != nil {
			for _, w := range todo {
				if !w.confirm {
					a.failed(w.id, err, nil)
				}
			}
			todo = slices.DeleteFunc(todo, func(w work) bool { return !w.confirm })
		} else {
			a.setFailing(nil)
		}
	}
	delivered := time.Now()
	for _, w := range todo {
		a.mu.Lock()
		e := a.entries[w.id]
		e.delivered = true
		a.mu.Unlock()
		if !w.confirm && w.live && a.opts.Metrics != nil {
			a.opts.Metrics.Found(w.readAt, w.stored, delivered)
		}
		if err := a.ledger.Confirm(ctx, w.f); err != nil {
			a.failed(w.id, err, nil)
			continue
		}
		a.mu.Lock()
		if e.held.Revision == w.f.Revision {
			e.hasHeld, e.delivered, e.attempt, e.retryAt = false, false, 0, time.Time{}
			e.live, e.readAt, e.stored = false, time.Time{}, time.Time{}
		}
		a.mu.Unlock()
		a.drop(w.id)
	}
}

// failed schedules finding id again after a backoff; next, when not nil,
// is a version that was not reserved and is put back (unless a newer one
// came meanwhile).
func (a *Announcer) failed(id string, err error, next *finding.Finding) {
	if errors.Is(err, sink.ErrReservedElsewhere) {
		a.opts.Log.Debug("finding being announced elsewhere; asking again later", "id", id, "err", err)
	} else {
		a.setFailing(err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.entries[id]
	if next != nil && !e.hasNext {
		e.next, e.hasNext = *next, true
		e.first, e.last = time.Now(), time.Now()
	}
	delay := a.opts.Backoff << min(e.attempt, 16)
	if delay <= 0 || delay > a.opts.MaxBackoff {
		delay = a.opts.MaxBackoff
	}
	e.attempt++
	e.retryAt = time.Now().Add(delay)
}

// drop forgets finding id once nothing of it is waiting.
func (a *Announcer) drop(id string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.entries[id]; e != nil && !e.hasNext && !e.hasHeld {
		delete(a.entries, id)
	}
}

func (a *Announcer) setFailing(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case err == nil && a.failing != "":
		a.opts.Log.Info("findings announced again", "after", a.failing)
		a.failing = ""
	case err != nil && err.Error() != a.failing:
		a.opts.Log.Warn("findings not announced; retrying with backoff (they count as announced once every sink took them)", "err", err)
		a.failing = err.Error()
	}
}

// Supersede announces what a reloaded lane's fresh engine says after its
// replay, against what was announced from the engine it replaces (old:
// that engine's findings): a finding it raises anew or says otherwise is
// offered, numbered above every version known (the fresh engine counts
// anew, and its later versions must be newer too), and one it no longer
// raises is retracted.
func (a *Announcer) Supersede(old []finding.Finding, fresh *rule.Engine) {
	floor := map[string]int{}
	raised := map[string]bool{}
	for _, f := range fresh.Findings() {
		raised[f.ID] = true
		ann, isAnn := a.ledger.Announced(f.ID)
		if latest, ok := a.known(f.ID); ok {
			floor[f.ID] = latest.Updates
			if !isAnn || sink.Visible(f, ann) {
				floor[f.ID]++
			}
		}
	}
	fresh.RaiseUpdates(floor)
	var offer []finding.Finding
	for _, f := range fresh.Findings() {
		if ann, ok := a.ledger.Announced(f.ID); !ok || sink.Visible(f, ann) {
			offer = append(offer, f)
		}
	}
	for _, f := range old {
		if raised[f.ID] || f.Status != finding.Active {
			continue
		}
		if known, ok := a.known(f.ID); ok {
			f.Updates = max(f.Updates, known.Updates)
		}
		f.Status = finding.Retracted
		f.Updates++
		offer = append(offer, f)
	}
	a.Offer(offer, nil, false)
}

// RetractRules retracts every announced active finding raised by one of
// rules (rules removed by a reload: what they said no longer stands).
func (a *Announcer) RetractRules(rules []string) int {
	if len(rules) == 0 {
		return 0
	}
	var offer []finding.Finding
	for _, f := range a.ledger.Findings() {
		if f.Status != finding.Active || !slices.Contains(rules, f.Rule) {
			continue
		}
		if known, ok := a.known(f.ID); ok {
			f.Updates = max(f.Updates, known.Updates)
		}
		f.Status = finding.Retracted
		f.Updates++
		offer = append(offer, f)
	}
	a.Offer(offer, nil, false)
	return len(offer)
}

// known is the latest version of finding id the announcer or its ledger
// knows: waiting, reserved or announced.
func (a *Announcer) known(id string) (finding.Finding, bool) {
	best, ok := a.ledger.Announced(id)
	a.mu.Lock()
	defer a.mu.Unlock()
	if e := a.entries[id]; e != nil {
		for _, v := range []struct {
			f   finding.Finding
			has bool
		}{{e.held, e.hasHeld}, {e.next, e.hasNext}} {
			if v.has && (!ok || v.f.Updates > best.Updates) {
				best, ok = v.f, true
			}
		}
	}
	return best, ok
}
