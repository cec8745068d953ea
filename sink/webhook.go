package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"

	"github.com/faultline/faultline/finding"
)

// Payload is what a webhook receives for one finding: `text` for Slack-style
// endpoints (and Alertmanager-style receivers that show a text), and the
// whole finding (the diagnose --json schema) for machines.
type Payload struct {
	Text    string          `json:"text"`
	Finding finding.Finding `json:"finding"`
}

// AlertText is the one-message summary a chat shows.
func AlertText(f finding.Finding) string {
	s := fmt.Sprintf("[%s] %s (%s, cluster %s", f.Severity, f.Title, f.Cause, f.Cluster)
	if f.Status != "" && f.Status != finding.Active {
		s += ", " + string(f.Status)
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

// Poster makes one POST of a finding to a webhook URL. serve's durable
// outbox and the Webhook sink both post with it, so every mode sends the
// same body.
type Poster struct {
	URL    string
	Client *http.Client // nil: a client with a 10 s timeout
}

// Post sends f once; an answer other than 2xx is an error.
func (p *Poster) Post(ctx context.Context, f finding.Finding) error {
	body, err := json.Marshal(Payload{Text: AlertText(f), Finding: f})
	if err != nil {
		return fmt.Errorf("webhook: encode %s: %w", f.ID, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("webhook URL: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	c := p.Client
	if c == nil {
		c = defaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		// Not the URL: a Slack or Alertmanager hook's path is its secret,
		// and these errors are logged.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("post to %s: %w", req.URL.Host, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("post to %s: status %s", req.URL.Host, resp.Status)
	}
	return nil
}

var defaultClient = &http.Client{Timeout: 10 * time.Second}

// WebhookOptions bound the retrying of the Webhook sink.
type WebhookOptions struct {
	// Attempts is how many times a finding is posted at most (default 5).
	Attempts int
	// Backoff is the wait before the first retry (default 500 ms); it
	// doubles up to MaxBackoff (default 8 s).
	Backoff, MaxBackoff time.Duration
	Client              *http.Client
	Log                 *slog.Logger
}

// Webhook posts each finding directly, retrying failed posts with backoff
// a bounded number of times: for a run that ends (diagnose, ingest), whose
// caller must learn from the error that the findings did not get out.
// serve posts through its durable outbox instead, which retries across
// restarts.
type Webhook struct {
	p    Poster
	opts WebhookOptions
}

func NewWebhook(url string, opts WebhookOptions) *Webhook {
	if opts.Attempts <= 0 {
		opts.Attempts = 5
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 500 * time.Millisecond
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = 8 * time.Second
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Webhook{p: Poster{URL: url, Client: opts.Client}, opts: opts}
}

// Announce posts the findings in order. Those that fail are tried again,
// all together, after each backoff, so the whole wait is bounded by the
// attempts whatever the number of findings.
func (w *Webhook) Announce(ctx context.Context, fs []finding.Finding) error {
	pending := fs
	delay := w.opts.Backoff
	var last error
	for attempt := 1; len(pending) > 0; attempt++ {
		var failed []finding.Finding
		for _, f := range pending {
			if err := w.p.Post(ctx, f); err != nil {
				last = err
				failed = append(failed, f)
				continue
			}
			w.opts.Log.Info("webhook posted", "id", f.ID, "attempt", attempt)
		}
		pending = failed
		if len(pending) == 0 || attempt == w.opts.Attempts {
			break
		}
		w.opts.Log.Warn("webhook failed, retrying", "findings", len(pending), "attempt", attempt, "in", delay, "err", last)
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("webhook: %d of %d finding(s) not posted: %w", len(pending), len(fs), ctx.Err())
		case <-t.C:
		}
		delay = min(delay*2, w.opts.MaxBackoff)
	}
	if len(pending) > 0 {
		return fmt.Errorf("webhook: %d of %d finding(s) not posted after %d attempts: %w",
			len(pending), len(fs), w.opts.Attempts, last)
	}
	return nil
}

func (w *Webhook) Close() error { return nil }
