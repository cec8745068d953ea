// Package server is `analyzer serve`: it consumes log records from NATS
// JetStream (an embedded server by default), parses them, runs the rule
// engine on every event as it arrives, indexes the events (an index.Store,
// Bleve today), and announces findings to its sinks (package sink): the
// terminal, NATS, webhooks and Alertmanagers through durable outboxes, the store and the web
// UI's live stream, plus any in Config.Sinks.
//
// One data path with `diagnose`: records become events with parsers.Parse and
// go through the same rule.Engine, so the same logs give the same findings.
package server

import (
	"context"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
	"github.com/faultline/faultline/web"
)

// Config is everything Run needs. Zero values take the defaults of defaults.
type Config struct {
	DataDir string // index, findings, embedded NATS store
	// NATSListen is the embedded server's client address ("host:port"; port
	// -1 picks a free one). Ignored when NATS.URL is set.
	NATSListen string
	// NATS.URL set means: use that external server or cluster instead of
	// the embedded one, with these credentials (the shipper's options).
	NATS      transport.NATSOptions
	HTTP      string   // HTTP listen address; "" disables HTTP
	HTTPToken string   // when set, every HTTP route but /healthz and the login page wants it (web.Config.Token)
	Webhooks  []string // URLs findings are POSTed to, each through its own durable outbox
	// Alertmanagers are the Alertmanagers findings are posted to as
	// alerts (base URLs), each through its own durable outbox; active
	// alerts are re-sent every AlertResend (sink.DefaultAlertResend).
	Alertmanagers []string
	AlertResend   time.Duration
	// ExternalURL is the base URL people open the web UI at, for the
	// links in alerts ("": Cluster.Advertise, else http:// and the bound
	// HTTP address).
	ExternalURL string
	RuleDirs    []string // watched rule directories, merged over the built-in pack
	RulesOnly   bool     // use only RuleDirs
	Durable     string   // JetStream durable consumer name

	// SearchTimeout bounds each search of the HTTP API (0: the index's
	// default; negative: none).
	SearchTimeout time.Duration

	// Stream holds the log stream's retention limits (--retention-age,
	// --retention-bytes); zero fields take transport's defaults.
	Stream transport.StreamOptions
	// PruneEvery is how often the index drops what the stream no longer
	// holds, and on a cluster the copies of moved partitions (0: a tenth
	// of the stream's age limit, between 500 ms and a minute).
	PruneEvery time.Duration

	// Cluster, when enabled, shares the log stream's partitions among
	// several analyzers (partitions.go); the zero value is the
	// single-machine default.
	Cluster ClusterConfig

	// Receive is the log receivers on HTTP (OTLP, Loki push); on unless
	// Receive.Off.
	Receive ReceiveConfig

	// Sinks receive every new or changed finding after serve's own (the
	// outboxes, the store, the terminal, NATS, the UI's live stream),
	// e.g. a JSON-lines file; the caller closes them after Run.
	Sinks []sink.Sink

	// RuleBudget is how long one matcher run or condition evaluation of a
	// rule may take before it is logged (once a minute per rule) and
	// counted as slow in /metrics (0: DefaultRuleBudget; negative: never).
	RuleBudget time.Duration

	// AckInterval bounds how long a message waits for the index before it
	// is acknowledged (batched acks after an index flush).
	AckInterval time.Duration
	// AckWait is how long JetStream waits for an ack before redelivering:
	// after a crash, the messages the dead process held come back after it.
	AckWait time.Duration
	// Settle is how long a finding's version waits for a newer one before
	// it is announced (lane.DefaultSettle; negative: none): a burst of
	// facts gives one revision, and no fix the next record corrects.
	Settle time.Duration
	// ReloadInterval is how often the rule directories are checked.
	ReloadInterval time.Duration
	// Reload, when set, reloads the rules on every receive (serve sends on
	// SIGHUP, as Prometheus and Fluent Bit do).
	Reload <-chan struct{}
	// WebhookBackoff is the first wait before a failed webhook or
	// Alertmanager post is retried; it doubles up to a minute, and retries go on (across
	// restarts, from the outbox) until the endpoint takes the post.
	// WebhookRetries is no longer used.
	WebhookRetries int
	WebhookBackoff time.Duration

	// Demo, when set, is a folder with one subfolder per node whose files
	// are replayed by in-process shippers (see demo.go); DemoFS, when set,
	// is such a folder given as a file system (the embedded seed) and wins.
	Demo      string
	DemoFS    fs.FS
	DemoPace  time.Duration // total replay time of the demo
	DemoNodes []string      // optional subset of node folders
	// DemoShip runs one in-process shipper of the demo (serve does not
	// link the shipper: cmd/analyzer passes it in); required with a demo.
	DemoShip DemoShipFunc

	Stdout io.Writer    // finding blocks
	Log    *slog.Logger // operational log
	// Ready is called once everything listens, with the actual addresses.
	Ready func(Addrs)

	// beforeWarmUp, in tests, runs when the warm-up starts (to hold it).
	beforeWarmUp func()
	// onHTTP, in tests, receives the HTTP handler (to walk its routes).
	onHTTP func(*web.Handler)
	// natsTokenFile is where the token of the embedded NATS that serve made
	// itself is kept (embeddedToken); "" when none was made.
	natsTokenFile string
}

// ClusterConfig is scale-out: analyzers on a NATS cluster, each owning some
// partitions of the log stream through leases in a KV bucket.
type ClusterConfig struct {
	// Name, Listen and Routes cluster the embedded NATS servers
	// (--nats-cluster, --nats-cluster-listen, --nats-routes).
	Name   string
	Listen string   // host:port the embedded server takes routes on
	Routes []string // nats://host:port of the other servers
	// Partitions is how many partitions the log stream has (--partitions);
	// 0: DefaultPartitions once clustered.
	Partitions int
	// Replicas of the stream and KV buckets (--stream-replicas); 0: as
	// many as the NATS cluster has servers, up to 3.
	Replicas int
	// Member names this analyzer among its peers (--member); "": the
	// embedded server's name, else the host name.
	Member string
	// Advertise is the base URL peers reach this analyzer's HTTP API at
	// for search fan-out (--advertise); "": http:// and the bound --http.
	Advertise string
	// LeaseTTL: a partition whose owner stopped renewing its lease is
	// free after this (default 5s); members heartbeat at a fifth of it.
	LeaseTTL time.Duration
}

// DefaultPartitions is the log stream's partition count once clustered:
// enough to balance three analyzers by rendezvous hashing.
const DefaultPartitions = 12

// Enabled reports whether the analyzer runs partitioned (a cluster name,
// or partitions asked for on an external NATS).
func (c ClusterConfig) Enabled() bool { return c.Name != "" || c.Partitions > 0 }

// DemoShipFunc tails the files matching paths as node, publishing to the
// NATS server of nats and keeping its offsets under stateDir, until ctx
// ends.
type DemoShipFunc func(ctx context.Context, node string, paths []string, nats transport.NATSOptions, stateDir string, log *slog.Logger) error

// Addrs are the addresses Run actually bound (useful with port 0 / -1).
type Addrs struct {
	NATS string // client URL of the NATS server in use (with the generated token of the embedded server as its user: nats://TOKEN@host:port)
	HTTP string // host:port of the HTTP server, "" if disabled
}

// DefaultRuleBudget is serve's default --rule-budget: a rule this slow on
// one line holds the engine to ~100 lines a second.
const DefaultRuleBudget = 10 * time.Millisecond

func (c *Config) defaults() {
	if c.DataDir == "" {
		c.DataDir = "./faultline-data"
	}
	if c.NATSListen == "" && c.NATS.URL == "" {
		c.NATSListen = "127.0.0.1:4222"
	}
	if c.Durable == "" {
		c.Durable = "analyzer"
	}
	if c.AckInterval == 0 {
		c.AckInterval = 200 * time.Millisecond
	}
	if c.RuleBudget == 0 {
		c.RuleBudget = DefaultRuleBudget
	}
	if c.AckWait == 0 {
		c.AckWait = 10 * time.Second
	}
	if c.ReloadInterval == 0 {
		c.ReloadInterval = 500 * time.Millisecond
	}
	if c.WebhookRetries == 0 {
		c.WebhookRetries = 5
	}
	if c.WebhookBackoff == 0 {
		c.WebhookBackoff = 500 * time.Millisecond
	}
	if c.DemoPace == 0 {
		c.DemoPace = 4 * time.Second
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Log == nil {
		c.Log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
}

func (c *Config) natsStoreDir() string { return filepath.Join(c.DataDir, "nats") }
