package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/faultline/faultline/rule"
)

// webhookQueue bounds the findings waiting for delivery. Findings are rare;
// a full queue means the endpoint is down for long, and the oldest waiting
// finding is dropped rather than slowing ingestion.
const webhookQueue = 256

// webhook posts findings to a Slack-compatible endpoint from its own
// goroutine, with retries and backoff; enqueue never blocks.
type webhook struct {
	url     string
	retries int
	backoff time.Duration
	log     *slog.Logger
	client  *http.Client
	queue   chan rule.Finding
}

// payload is what is POSTed: `text` for Slack-style endpoints, and the whole
// finding (the diagnose --json schema) for machines.
type payload struct {
	Text    string       `json:"text"`
	Finding rule.Finding `json:"finding"`
}

func newWebhook(url string, retries int, backoff time.Duration, log *slog.Logger) *webhook {
	return &webhook{url: url, retries: retries, backoff: backoff, log: log,
		client: &http.Client{Timeout: 10 * time.Second}, queue: make(chan rule.Finding, webhookQueue)}
}

func (w *webhook) enqueue(f rule.Finding) {
	if w.url == "" {
		return
	}
	for {
		select {
		case w.queue <- f:
			return
		default:
		}
		select {
		case old := <-w.queue:
			w.log.Warn("webhook queue full, dropping oldest finding", "id", old.ID)
		default:
		}
	}
}

func (w *webhook) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case f := <-w.queue:
			w.deliver(ctx, f)
		}
	}
}

// deliver posts f, retrying with doubling backoff on errors and non-2xx.
func (w *webhook) deliver(ctx context.Context, f rule.Finding) {
	body, err := json.Marshal(payload{Text: alertText(f), Finding: f})
	if err != nil {
		w.log.Error("webhook encode", "err", err)
		return
	}
	wait := w.backoff
	for attempt := 1; ; attempt++ {
		err := w.post(ctx, body)
		if err == nil {
			return
		}
		if attempt >= w.retries || ctx.Err() != nil {
			w.log.Error("webhook gave up", "id", f.ID, "attempts", attempt, "err", err)
			return
		}
		w.log.Warn("webhook failed, retrying", "id", f.ID, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait *= 2
	}
}

func (w *webhook) post(ctx context.Context, body []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := w.client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("status %s", resp.Status)
	}
	return nil
}

// alertText is the one-message summary a chat shows.
func alertText(f rule.Finding) string {
	s := fmt.Sprintf("[%s] %s (%s, cluster %s", f.Severity, f.Title, f.Cause, f.Cluster)
	if f.Status != "" && f.Status != "active" {
		s += ", " + f.Status
	}
	s += ")"
	if f.Summary != "" {
		s += "\n" + f.Summary
	}
	if f.Remediation != "" {
		s += "\nFix: " + f.Remediation
	}
	return s
}
