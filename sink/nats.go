package sink

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/faultline/faultline/finding"
)

// Publisher is the part of a NATS connection (*nats.Conn) the NATS sink
// uses.
type Publisher interface {
	Publish(subject string, data []byte) error
}

// NATS publishes each finding as JSON on the subject subject(cluster,
// severity) gives — the findings subject of the transport,
// faultline.findings.<cluster>.<severity>, where serve publishes its live
// findings, so one subscriber sees offline and live findings alike.
type NATS struct {
	pub     Publisher
	subject func(cluster, severity string) string
}

func NewNATS(pub Publisher, subject func(cluster, severity string) string) *NATS {
	return &NATS{pub: pub, subject: subject}
}

// Announce publishes fs; with a publisher that can flush (a *nats.Conn), it
// returns once the server has them (or ctx ended): the findings subject
// took them.
func (n *NATS) Announce(ctx context.Context, fs []finding.Finding) error {
	var errs []error
	for _, f := range fs {
		b, err := json.Marshal(f)
		if err == nil {
			err = n.pub.Publish(n.subject(f.Cluster, string(f.Severity)), b)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("publish finding %s: %w", f.ID, err))
		}
	}
	if fl, ok := n.pub.(interface{ FlushWithContext(context.Context) error }); ok && len(errs) == 0 {
		if _, has := ctx.Deadline(); has {
			if err := fl.FlushWithContext(ctx); err != nil {
				errs = append(errs, fmt.Errorf("publish findings: flush: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// Close flushes what is buffered when the publisher can (a *nats.Conn
// buffers publishes; a run that ends must not lose them). The connection
// itself belongs to the caller.
func (n *NATS) Close() error {
	if fl, ok := n.pub.(interface{ Flush() error }); ok {
		if err := fl.Flush(); err != nil {
			return fmt.Errorf("publish findings: flush: %w", err)
		}
	}
	return nil
}

// FindingStore keeps findings: the index's findings file (index.Store).
type FindingStore interface {
	PutFindings(fs []finding.Finding) error
}

// Store upserts findings into a FindingStore, where the web UI,
// /api/findings and `analyzer ui` read them.
type Store struct{ s FindingStore }

func NewStore(s FindingStore) *Store { return &Store{s: s} }

func (s *Store) Announce(_ context.Context, fs []finding.Finding) error {
	if err := s.s.PutFindings(fs); err != nil {
		return fmt.Errorf("store findings: %w", err)
	}
	return nil
}

func (s *Store) Close() error { return nil }

// Live hands findings to a live feed — the web UI's Server-Sent Events hub
// (web.Hub), whose Publish never blocks.
type Live struct {
	hub interface{ Publish(finding.Finding) }
}

func NewLive(hub interface{ Publish(finding.Finding) }) *Live { return &Live{hub: hub} }

func (l *Live) Announce(_ context.Context, fs []finding.Finding) error {
	for _, f := range fs {
		l.hub.Publish(f)
	}
	return nil
}

func (l *Live) Close() error { return nil }
