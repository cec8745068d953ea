package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/pflag"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
)

// sinkFlags are the finding sinks every mode can add to its own: a webhook,
// the NATS findings subject, a JSON-lines file. diagnose and ingest post
// and publish once, at the end; serve's webhook is its durable outbox
// (serve.go), the rest it takes as extra sinks.
type sinkFlags struct {
	webhook   string
	attempts  int
	backoff   time.Duration
	natsURL   string
	jsonFile  string
	withNATS  bool
	withHooks bool
}

// register adds the flags; webhook and nats say whether this command takes
// --webhook and --publish-nats (serve has its own webhook and NATS).
func (f *sinkFlags) register(fs *pflag.FlagSet, webhook, nats bool) {
	f.withHooks, f.withNATS = webhook, nats
	if webhook {
		fs.StringVar(&f.webhook, "webhook", "", "POST each finding to this `URL` as JSON with a text field (Slack-compatible; exit 4 if it fails)")
		fs.IntVar(&f.attempts, "webhook-attempts", 5, "post a finding at most `N` times")
		fs.DurationVar(&f.backoff, "webhook-backoff", 500*time.Millisecond, "wait `DURATION` before the first retry of a failed post (doubling, up to 8s)")
	}
	if nats {
		fs.StringVar(&f.natsURL, "publish-nats", "", "publish each finding as JSON on faultline.findings.<cluster>.<severity> of the NATS server at `URL` (credentials in the URL, or $FAULTLINE_TOKEN)")
	}
	fs.StringVar(&f.jsonFile, "findings-json", "", "also append each finding as one JSON line to `FILE` (- for standard output)")
}

// build opens the sinks the flags ask for, in the order webhook, NATS,
// JSON lines. The caller closes them (sink.Multi.Close).
func (f *sinkFlags) build(stdout io.Writer, log *slog.Logger) (sink.Multi, error) {
	var out sink.Multi
	if f.webhook != "" {
		if err := checkURL(f.webhook); err != nil {
			return nil, usageError("--webhook %v", err)
		}
		out = append(out, sink.NewWebhook(f.webhook, sink.WebhookOptions{Attempts: f.attempts, Backoff: f.backoff, Log: log}))
	}
	if f.natsURL != "" {
		opts := []nats.Option{nats.Name("faultline-analyzer-findings")}
		if t := os.Getenv("FAULTLINE_TOKEN"); t != "" {
			if u, err := url.Parse(f.natsURL); err == nil && u.User == nil {
				opts = append(opts, nats.Token(t))
			}
		}
		nc, err := nats.Connect(f.natsURL, opts...)
		if err != nil {
			out.Close()
			return nil, fmt.Errorf("--publish-nats %s: %w", redactURL(f.natsURL), err)
		}
		out = append(out, sink.NewNATS(nc, transport.FindingsSubject), closer(nc.Close))
	}
	switch f.jsonFile {
	case "":
	case "-":
		out = append(out, sink.NewJSON(stdout, nil))
	default:
		j, err := sink.OpenJSONFile(f.jsonFile)
		if err != nil {
			out.Close()
			return nil, usageError("--findings-json: %v", err)
		}
		out = append(out, j)
	}
	return out, nil
}

// closer is a sink that only closes something when the sinks are closed
// (the NATS connection, after its sink flushed).
type closer func()

func (closer) Announce(context.Context, []finding.Finding) error { return nil }
func (c closer) Close() error                                    { c(); return nil }

// checkURL says what is wrong with an http(s) URL a flag gives (the URL
// in the error redacted).
func checkURL(s string) error {
	if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q: want an http:// or https:// URL", redactURL(s))
	}
	return nil
}

// redactURL hides a password, or a token given as the user, in a URL for
// messages.
func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.User == nil {
		return s
	}
	if _, has := u.User.Password(); !has {
		u.User = url.User("xxxxx")
	}
	return u.Redacted()
}

// announceErr is how a run that ends reports sinks that did not take the
// findings: after the report, with exit code 4.
func announceErr(stderr io.Writer, err error) error {
	fmt.Fprintf(stderr, "error: %v\n", err)
	return &exitError{code: 4, err: fmt.Errorf("findings not delivered to every sink (see above)")}
}
