package server

import (
	"context"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
)

// newSinks is where serve's findings go, in this order: the webhook outbox
// first (a finding queued there before it is stored as announced is, after
// a crash in between, announced again — the outbox drops the same version
// twice — never not at all), the stored findings, the terminal, the
// findings subject on NATS, the web UI's live stream, then the sinks the
// caller added (Config.Sinks). Only new and changed versions reach them,
// across restarts too: the last announced versions are the stored findings.
func (s *server) newSinks() *sink.Changes {
	stored := s.idx.Findings()
	return sink.NewChanges(stored, s.sinkList(stored))
}

// sinkList is serve's sinks in order; stored are the findings announced
// before (the terminal prints only what changed since).
func (s *server) sinkList(stored []finding.Finding) sink.Multi {
	var out sink.Multi
	if s.cfg.Webhook != "" {
		out = append(out, s.hook)
	}
	out = append(out,
		sink.NewStore(s.idx),
		sink.NewText(s.cfg.Stdout, stored),
		sink.NewNATS(s.nc, transport.FindingsSubject),
		sink.NewLive(s.liveFindings))
	return append(out, s.cfg.Sinks...)
}

// announce hands the findings the engine returned for one event to the
// sinks; a sink that fails is logged, the others still get them.
func (s *server) announce(fs []finding.Finding) {
	if len(fs) == 0 {
		return
	}
	if err := s.announcer.Announce(context.Background(), fs); err != nil {
		s.log.Warn("announce findings", "err", err)
	}
}
