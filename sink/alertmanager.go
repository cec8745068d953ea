package sink

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	httptransport "github.com/go-openapi/runtime/client"
	"github.com/go-openapi/strfmt"
	amclient "github.com/prometheus/alertmanager/api/v2/client"
	"github.com/prometheus/alertmanager/api/v2/client/alert"
	"github.com/prometheus/alertmanager/api/v2/models"

	"github.com/faultline/faultline/finding"
)

// DefaultAlertResend is how often an active finding's alert is posted to
// Alertmanager again (Prometheus' --rules.alert.resend-delay is 1m too).
const DefaultAlertResend = time.Minute

// AlertmanagerOptions set up an Alertmanager target.
type AlertmanagerOptions struct {
	// Resend is how often an active finding's alert is posted again
	// (DefaultAlertResend). Each post says the alert ends 4 Resend later,
	// as Prometheus does: a finding that serve stops re-sending (serve
	// gone) resolves by itself then, whatever Alertmanager's
	// resolve_timeout.
	Resend time.Duration
	// ExternalURL is the base URL people open serve's web UI at: an
	// alert's evidence link (and generatorURL) is the UI on the finding's
	// nodes and time ("": no link).
	ExternalURL string
	Client      *http.Client // nil: a client with a 10 s timeout
}

// Alertmanager posts findings as alerts to an Alertmanager's API v2
// (POST /api/v2/alerts, with Alertmanager's own client and models), one
// alert per finding, labelled
//
//	alertname=<cause> severity cluster launch_id rule finding=<id>
//
// with the annotations title, summary, remediation, evidence (a link to
// the finding's records in the web UI) and explained_by (the root cause's
// finding, for a consequence). An active finding's alert ends 4 Resend
// after each post and is posted again every Resend while it holds
// (Refresh); a resolved or retracted finding is posted once more with the
// time it ended. A finding whose labels changed (its severity rose)
// resolves the alert of its old labels in the same post.
//
// serve delivers to it from a durable outbox (retried across restarts).
type Alertmanager struct {
	host string // for errors and logs: the URL may hold credentials
	api  alert.ClientService
	opts AlertmanagerOptions

	mu       sync.Mutex
	sent     map[string]finding.Finding // finding ID -> the version posted last, until the store has it
	resentAt time.Time
}

// NewAlertmanager targets the Alertmanager at rawURL (its base URL, e.g.
// http://alertmanager:9093, a path prefix and user:password included).
func NewAlertmanager(rawURL string, opts AlertmanagerOptions) (*Alertmanager, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("alertmanager %q: want an http:// or https:// base URL such as http://alertmanager:9093", redact(rawURL))
	}
	if opts.Resend <= 0 {
		opts.Resend = DefaultAlertResend
	}
	hc := opts.Client
	if hc == nil {
		hc = defaultClient
	}
	rt := httptransport.NewWithClient(u.Host, strings.TrimSuffix(u.Path, "/")+amclient.DefaultBasePath, []string{u.Scheme}, hc)
	if u.User != nil {
		pw, _ := u.User.Password()
		rt.DefaultAuthentication = httptransport.BasicAuth(u.User.Username(), pw)
	}
	return &Alertmanager{host: u.Host, api: alert.New(rt, strfmt.Default), opts: opts, sent: map[string]finding.Finding{}}, nil
}

func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return raw
}

// Labels are the labels of f's alert: its identity in Alertmanager and
// what routes, groups, silences and inhibits it.
func Labels(f finding.Finding) models.LabelSet {
	ls := models.LabelSet{
		"alertname": f.Cause,
		"severity":  string(f.Severity),
		"cluster":   f.Cluster,
		"rule":      f.Rule,
		"finding":   f.ID,
	}
	if f.LaunchID != "" {
		ls["launch_id"] = f.LaunchID
	}
	return ls
}

// Alert is f as an alert posted at now.
func (a *Alertmanager) Alert(f finding.Finding, now time.Time) *models.PostableAlert {
	start := f.FirstSeen
	if start.IsZero() || start.After(now) {
		start = now // log times ahead of this clock: Alertmanager wants startsAt <= endsAt
	}
	end := now.Add(4 * a.opts.Resend)
	if f.Status != finding.Active {
		end = now // ended when serve said so (a log time may be months back in a replay)
	}
	ann := models.LabelSet{"title": f.Title, "summary": f.Summary, "remediation": f.Remediation}
	if f.ExplainedBy != "" {
		ann["explained_by"] = f.ExplainedBy
	}
	pa := &models.PostableAlert{
		Alert:       models.Alert{Labels: Labels(f)},
		Annotations: ann,
		StartsAt:    strfmt.DateTime(start),
		EndsAt:      strfmt.DateTime(end),
	}
	if link := a.evidenceLink(f); link != "" {
		ann["evidence"] = link
		pa.GeneratorURL = strfmt.URI(link)
	}
	for k, v := range ann {
		if v == "" {
			delete(ann, k)
		}
	}
	return pa
}

// evidenceLink is the web UI showing the records of f's nodes from a
// minute before its first evidence to a minute after its last.
func (a *Alertmanager) evidenceLink(f finding.Finding) string {
	if a.opts.ExternalURL == "" {
		return ""
	}
	q := url.Values{}
	for _, n := range f.Nodes {
		q.Add("node", n)
	}
	if !f.FirstSeen.IsZero() {
		q.Set("since", f.FirstSeen.Add(-time.Minute).UTC().Format(time.RFC3339))
	}
	if !f.LastSeen.IsZero() {
		q.Set("until", f.LastSeen.Add(time.Minute).UTC().Format(time.RFC3339))
	}
	return strings.TrimSuffix(a.opts.ExternalURL, "/") + "/?" + q.Encode()
}

// Post posts the versions fs as alerts, in one request, with the
// resolutions of the labels they replace; they count as sent once
// Alertmanager answered 200.
func (a *Alertmanager) Post(ctx context.Context, fs []finding.Finding) error {
	now := time.Now()
	var alerts models.PostableAlerts
	a.mu.Lock()
	for _, f := range fs {
		pa := a.Alert(f, now)
		if old, ok := a.sent[f.ID]; ok && old.Status == finding.Active && !sameLabels(Labels(old), pa.Labels) {
			alerts = append(alerts, &models.PostableAlert{Alert: models.Alert{Labels: Labels(old)},
				StartsAt: pa.StartsAt, EndsAt: strfmt.DateTime(now)})
		}
		alerts = append(alerts, pa)
	}
	a.mu.Unlock()
	if err := a.post(ctx, alerts); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, f := range fs {
		if old, ok := a.sent[f.ID]; ok && old.Revision > f.Revision {
			continue
		}
		a.sent[f.ID] = f
	}
	return nil
}

// Refresh posts the active alerts again once Resend passed since it last
// did: the stored findings that are active, except those this target has
// since posted a newer version of (a resolution the store may not hold
// yet must not be undone).
func (a *Alertmanager) Refresh(ctx context.Context, stored func() []finding.Finding) error {
	now := time.Now()
	a.mu.Lock()
	due := now.Sub(a.resentAt) >= a.opts.Resend
	a.mu.Unlock()
	if !due {
		return nil
	}
	var alerts models.PostableAlerts
	all := stored()
	a.mu.Lock()
	seen := make(map[string]bool, len(all))
	for _, f := range all {
		seen[f.ID] = true
		if old, ok := a.sent[f.ID]; ok {
			if old.Revision > f.Revision {
				f = old // posted here, not stored yet
			} else {
				delete(a.sent, f.ID) // the store has it now
			}
		}
		if f.Status == finding.Active {
			alerts = append(alerts, a.Alert(f, now))
		}
	}
	for id, f := range a.sent {
		if !seen[id] && f.Status == finding.Active {
			alerts = append(alerts, a.Alert(f, now)) // not stored yet
		}
	}
	a.mu.Unlock()
	var err error
	if len(alerts) > 0 {
		if err = a.post(ctx, alerts); err != nil {
			err = fmt.Errorf("re-sending %d active alert(s): %w", len(alerts), err)
		}
	}
	a.mu.Lock()
	a.resentAt = now
	if err != nil {
		a.resentAt = now.Add(-a.opts.Resend * 9 / 10) // again in a tenth of Resend
	}
	a.mu.Unlock()
	return err
}

func (a *Alertmanager) post(ctx context.Context, alerts models.PostableAlerts) error {
	if err := alerts.Validate(strfmt.Default); err != nil {
		return fmt.Errorf("alertmanager %s: %w", a.host, err)
	}
	_, err := a.api.PostAlerts(alert.NewPostAlertsParamsWithContext(ctx).WithAlerts(alerts))
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // not the URL: it may hold credentials
		}
		return fmt.Errorf("alertmanager %s: %w", a.host, err)
	}
	return nil
}

func sameLabels(a, b models.LabelSet) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
