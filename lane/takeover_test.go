package lane

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/sink"
)

// takeOverLedger is a StoreLedger whose first Reserve answers as a cluster's
// claims do after a take-over: another member reserved pending (revision
// 2, never confirmed: it died), so its version is to be delivered first.
type takeOverLedger struct {
	*sink.StoreLedger
	mu      sync.Mutex
	pending *finding.Finding
}

func (l *takeOverLedger) Reserve(ctx context.Context, f finding.Finding) (finding.Finding, bool, error) {
	l.mu.Lock()
	p := l.pending
	l.pending = nil
	l.mu.Unlock()
	if p != nil {
		return *p, true, nil
	}
	return l.StoreLedger.Reserve(ctx, f)
}

// TestAnnouncerDeliversATakenOverVersionFirst: given the dead member's
// version to deliver first, the announcer delivers it, then the newer
// version it was offered (before, the newer version was dropped: the
// finding stayed at the dead member's version until the engine changed it
// again).
func TestAnnouncerDeliversATakenOverVersionFirst(t *testing.T) {
	idx, err := index.Open(t.TempDir(), index.Options{Shards: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	base := sink.NewStoreLedger(idx)
	f := finding.Finding{ID: "f1", Rule: "r", Status: finding.Active, Updates: 1, Title: "t1"}
	g, _, err := base.Reserve(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	if err := base.Confirm(context.Background(), g); err != nil {
		t.Fatal(err)
	}
	theirs := f
	theirs.Updates, theirs.Title, theirs.Revision = 2, "t2", 2
	ledger := &takeOverLedger{StoreLedger: base, pending: &theirs}
	out := &recorder{}
	a := NewAnnouncer(ledger, out, AnnouncerOptions{Settle: 5 * time.Millisecond, Backoff: 5 * time.Millisecond})
	stop := a.Start(context.Background())
	defer func() { stop() }()
	newer := f
	newer.Updates, newer.Title = 3, "t3"
	a.Offer([]finding.Finding{newer}, nil, false)
	testutil.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		got := out.all()
		var seen []string
		for _, g := range got {
			seen = append(seen, fmt.Sprintf("%s@%d", g.Title, g.Revision))
		}
		if len(got) != 2 || got[0].Title != "t2" || got[0].Revision != 2 || got[1].Title != "t3" || got[1].Revision != 3 {
			return fmt.Errorf("delivered %v, want [t2@2 t3@3]", seen)
		}
		return nil
	})
}
