package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
)

// sinkList is where serve's findings go, through the announcer
// (lane.Announcer: a version is reserved in the ledger, handed to these,
// and confirmed as announced once all of them took it), in this order: the
// outboxes of the webhooks and Alertmanagers first (durable, and each
// stores one version once: its message ID is the finding's id and
// revision), the stored findings on a
// cluster (withStore; on one machine they are the ledger), the terminal,
// the findings subject on NATS, the web UI's live stream, then the sinks
// the caller added (Config.Sinks). stored are the findings announced
// before (the terminal prints only what changed since).
func (s *server) sinkList(stored []finding.Finding, withStore bool) sink.Multi {
	var out sink.Multi
	for _, o := range s.outboxes {
		out = append(out, o)
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

// newOutboxes makes an outbox for each webhook and Alertmanager; front is
// the HTTP listener (alerts link to the web UI there unless --external-url
// or --advertise say where people reach it).
func (s *server) newOutboxes(front *earlyHTTP) error {
	for _, u := range s.cfg.Webhooks {
		s.outboxes = append(s.outboxes, newWebhook(u, s.cfg.WebhookBackoff, s.log))
	}
	if len(s.cfg.Alertmanagers) == 0 {
		return nil
	}
	ext := s.cfg.ExternalURL
	if ext == "" {
		ext = s.cfg.Cluster.Advertise
	}
	if ext == "" && front != nil {
		ext = "http://" + front.addr()
		if host, port, err := net.SplitHostPort(front.addr()); err == nil && net.ParseIP(host).IsUnspecified() {
			host, _ = os.Hostname()
			ext = "http://" + net.JoinHostPort(host, port)
		}
	}
	opts := sink.AlertmanagerOptions{Resend: s.cfg.AlertResend, ExternalURL: strings.TrimSuffix(ext, "/")}
	for _, u := range s.cfg.Alertmanagers {
		o, err := newAlertmanager(u, opts, s.findings, s.cfg.WebhookBackoff, s.log)
		if err != nil {
			return fmt.Errorf("--alertmanager: %w", err)
		}
		s.outboxes = append(s.outboxes, o)
	}
	return nil
}

// openOutboxes makes sure every outbox's stream and consumer exist.
func (s *server) openOutboxes(ctx context.Context, js jetstream.JetStream) error {
	for _, o := range s.outboxes {
		if err := o.open(ctx, js); err != nil {
			return err
		}
	}
	return nil
}
