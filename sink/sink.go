// Package sink is where findings go: the same findings, from an offline
// diagnose, an ingest or a live serve, are announced to a list of sinks
// built from flags — the human report, JSON lines, a NATS findings subject,
// a webhook, the index's stored findings, the web UI's live stream. The
// modes differ only in where the findings come from and which sinks they
// were given.
package sink

import (
	"context"
	"errors"
	"sync"

	"github.com/faultline/faultline/finding"
)

// Sink receives findings: each call a batch of new or changed versions
// (root causes before their consequences). Announce returns an error when
// a finding did not reach the sink (after whatever retrying the sink does
// itself); Close flushes and releases it.
type Sink interface {
	Announce(ctx context.Context, fs []finding.Finding) error
	Close() error
}

// Multi announces to each sink in order: a sink's failure does not keep
// the findings from the others, and the errors are returned joined.
type Multi []Sink

func (m Multi) Announce(ctx context.Context, fs []finding.Finding) error {
	var errs []error
	for _, s := range m {
		if err := s.Announce(ctx, fs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (m Multi) Close() error {
	var errs []error
	for _, s := range m {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Changes passes on only the newer versions of findings (see Newer), so a
// sink sees each version once however often the rules re-derive it (a
// replay after a restart re-derives every stored finding). It numbers the
// versions it passes on: Revision 1 for a finding's first, +1 for each
// later one.
type Changes struct {
	next  Sink
	mu    sync.Mutex
	known map[string]finding.Finding
}

// NewChanges returns a Changes in front of next that knows the findings
// announced before (serve's stored findings, stored as announced, with
// their revision; none offline).
func NewChanges(announced []finding.Finding, next Sink) *Changes {
	c := &Changes{next: next, known: make(map[string]finding.Finding, len(announced))}
	for _, f := range announced {
		c.known[f.ID] = f
	}
	return c
}

// Announce passes on the newer versions of fs. They count as announced
// (known) only once next took them all: after an error, announcing them
// again passes them on again, under the same revisions (at least once; a
// reader tells a repeat by its id and revision).
func (c *Changes) Announce(ctx context.Context, fs []finding.Finding) error {
	var changed []finding.Finding
	c.mu.Lock()
	for _, f := range fs {
		old, ok := c.known[f.ID]
		if ok && !Newer(f, old) {
			continue
		}
		f.Revision = nextRevision(old, ok)
		changed = append(changed, f)
	}
	c.mu.Unlock()
	if len(changed) == 0 {
		return nil
	}
	if err := c.next.Announce(ctx, changed); err != nil {
		return err
	}
	c.mu.Lock()
	for _, f := range changed {
		if old, ok := c.known[f.ID]; !ok || old.Revision < f.Revision {
			c.known[f.ID] = f
		}
	}
	c.mu.Unlock()
	return nil
}

// nextRevision is the revision of the version after old (1 without one).
// A finding stored before revisions were numbered (0) was announced once
// at least.
func nextRevision(old finding.Finding, ok bool) int {
	if !ok {
		return 1
	}
	return max(old.Revision, 1) + 1
}

// Newer reports whether f is a later version of a finding than old, the
// version announced last. The engine raises Updates with every version it
// returns, so more Updates is newer and fewer is an older version that a
// replay re-derived. Resolved is final (the engine never changes a resolved
// finding again): a resolved f is newer than an unresolved old whatever
// the Updates (a replay that lost early records counts fewer), and an
// unresolved f is never newer than a resolved old. At equal Updates the two
// are one version re-derived in another context (say before the replay
// re-derived its root cause): f is newer only where it says more —
// resolved or retracted where old was active, a root cause where old had
// none, or more notes (serve found two shippers under one of its nodes'
// names after it was announced). Going back (to active, to no root cause)
// or sideways is not newer.
func Newer(f, old finding.Finding) bool {
	if fr, or := f.Status == statusResolved, old.Status == statusResolved; fr != or {
		return fr
	}
	if f.Updates != old.Updates {
		return f.Updates > old.Updates
	}
	if f.Status != old.Status {
		return old.Status == statusActive
	}
	return old.ExplainedBy == "" && f.ExplainedBy != "" || len(f.Notes) > len(old.Notes)
}

// Finding statuses (as the rule engine sets them).
const (
	statusActive   = "active"
	statusResolved = "resolved"
)

// Len is how many distinct findings were announced (or known before).
func (c *Changes) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.known)
}

func (c *Changes) Close() error { return c.next.Close() }
