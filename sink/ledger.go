package sink

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/faultline/faultline/finding"
)

// A Ledger records which version of each finding was announced, for a
// live announcer (serve's): a version is reserved (numbered with the next
// revision) before it goes to the sinks and confirmed once every sink took
// it. Until confirmed, it does not count as announced: after a crash the
// replay derives it again and it is delivered again, under the revision it
// was reserved with, so that a reader de-duplicates by (id, revision).
//
// On one machine the ledger is the stored findings (StoreLedger); on a
// cluster, the findings bucket (cluster.Claims), whose compare-and-set makes
// one member announce each version.
type Ledger interface {
	// Reserve numbers f for delivery. It returns false when the version
	// announced last is as new (Newer), or when f is retracted and was
	// never announced. A version reserved and never confirmed is returned
	// again, as reserved, while f is not newer than it, and also when it
	// was another process's (which died before confirming it): then f is
	// to be offered again after it, so that no revision is skipped.
	Reserve(ctx context.Context, f finding.Finding) (finding.Finding, bool, error)
	// Confirm records f, as Reserve returned it, as announced.
	Confirm(ctx context.Context, f finding.Finding) error
	// Announced returns the version of finding id announced last.
	Announced(id string) (finding.Finding, bool)
	// Findings are the announced versions of every finding.
	Findings() []finding.Finding
}

// ErrReservedElsewhere is a Reserve's answer when another process reserved
// the version moments ago and may be delivering it: ask again later.
var ErrReservedElsewhere = errors.New("reserved by another member")

// LedgerStore is where a StoreLedger keeps announced versions: the
// index's findings store (index.Store).
type LedgerStore interface {
	FindingStore
	Findings() []finding.Finding
}

// StoreLedger is the ledger of one machine: announced versions are the
// stored findings, which /api/findings and the UI read (so they show a
// version once every sink took it); reservations are kept in memory (a
// crash loses them, and the replay reserves them again).
type StoreLedger struct {
	store LedgerStore
	mu    sync.Mutex
	known map[string]ledgerEntry
}

// ledgerEntry is a finding's version announced last and, when there is
// one, the version reserved after it.
type ledgerEntry struct {
	announced, reserved finding.Finding
	isAnnounced         bool
	isReserved          bool
}

// latest is the version a new one is compared with.
func (e ledgerEntry) latest() (finding.Finding, bool, bool) {
	if e.isReserved {
		return e.reserved, true, false
	}
	return e.announced, e.isAnnounced, true
}

// NewStoreLedger reads the announced versions from store.
func NewStoreLedger(store LedgerStore) *StoreLedger {
	l := &StoreLedger{store: store, known: map[string]ledgerEntry{}}
	for _, f := range store.Findings() {
		l.known[f.ID] = ledgerEntry{announced: f, isAnnounced: true}
	}
	return l
}

func (l *StoreLedger) Reserve(_ context.Context, f finding.Finding) (finding.Finding, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.known[f.ID]
	old, ok, confirmed := e.latest()
	g, deliver := Reservation(f, old, ok, confirmed)
	if deliver {
		e.reserved, e.isReserved = g, true
		l.known[f.ID] = e
	}
	return g, deliver, nil
}

// Reservation is a ledger's decision for f given the version known last
// (old, if ok; confirmed, or only reserved): the version to deliver, and
// whether to deliver one.
func Reservation(f, old finding.Finding, ok, confirmed bool) (finding.Finding, bool) {
	switch {
	case !ok && f.Status == finding.Retracted:
		return f, false // never announced: nothing to take back
	case ok && !Newer(f, old):
		// Reserved and never confirmed: delivered again as it was.
		return old, !confirmed
	}
	f.Revision = nextRevision(old, ok)
	return f, true
}

func (l *StoreLedger) Confirm(_ context.Context, f finding.Finding) error {
	if err := l.store.PutFindings([]finding.Finding{f}); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.known[f.ID]
	if !e.isAnnounced || e.announced.Revision < f.Revision {
		e.announced, e.isAnnounced = f, true
	}
	if e.isReserved && e.reserved.Revision <= f.Revision {
		e.reserved, e.isReserved = finding.Finding{}, false
	}
	l.known[f.ID] = e
	return nil
}

func (l *StoreLedger) Announced(id string) (finding.Finding, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.known[id]
	return e.announced, e.isAnnounced
}

func (l *StoreLedger) Findings() []finding.Finding { return l.store.Findings() }

// Visible reports whether two versions of a finding differ in what a
// reader sees: its words, fix, verdict, status, root cause, what it rules
// out, the records of its evidence and its notes.
func Visible(a, b finding.Finding) bool {
	if a.Title != b.Title || a.Summary != b.Summary || a.Remediation != b.Remediation || a.Severity != b.Severity ||
		a.Confidence != b.Confidence || a.Status != b.Status || a.ExplainedBy != b.ExplainedBy ||
		!slices.Equal(a.RuledOut, b.RuledOut) || len(a.Evidence) != len(b.Evidence) || !slices.Equal(a.Notes, b.Notes) {
		return true
	}
	for i := range a.Evidence {
		if a.Evidence[i].RecordID != b.Evidence[i].RecordID {
			return true
		}
	}
	return false
}
