package server

import (
	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
)

// sinkList is where serve's findings go, through the announcer
// (lane.Announcer: a version is reserved in the ledger, handed to these,
// and confirmed as announced once all of them took it), in this order: the
// webhook outbox first (durable, and it stores one version once: its
// message ID is the finding's id and revision), the stored findings on a
// cluster (withStore; on one machine they are the ledger), the terminal,
// the findings subject on NATS, the web UI's live stream, then the sinks
// the caller added (Config.Sinks). stored are the findings announced
// before (the terminal prints only what changed since).
func (s *server) sinkList(stored []finding.Finding, withStore bool) sink.Multi {
	var out sink.Multi
	if s.cfg.Webhook != "" {
		out = append(out, s.hook)
	}
	if withStore {
		out = append(out, sink.NewStore(s.idx))
	}
	out = append(out,
		sink.NewText(s.cfg.Stdout, stored),
		sink.NewNATS(s.nc, transport.FindingsSubject),
		sink.NewLive(s.liveFindings))
	return append(out, s.cfg.Sinks...)
}
