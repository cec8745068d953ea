package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline"
	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/config"
	"github.com/faultline/faultline/internal/secrets"
	"github.com/faultline/faultline/lane"
	"github.com/faultline/faultline/receiver"
	"github.com/faultline/faultline/server"
	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
)

// serveSettings are serve's flags, each also the key of the same name in
// its --config file (package config). To add a setting: a field (here or in
// server.Config) and its line in RegisterFlags; the file, --print-config and
// `analyzer config check` have it from there.
type serveSettings struct {
	server.Config
	tokenFile, httpTokenFile string
	memLimit                 *byteSize
	logLevel                 string
	demo                     bool
	sinks                    sinkFlags // the sinks every mode takes; serve's webhook is its outbox (--webhook)
	cluster                  *clusterFlags
	receive                  bool
	receiveMax               byteSize
}

// RegisterFlags defines every setting of serve as a flag of fs.
func (c *serveSettings) RegisterFlags(fs *pflag.FlagSet) {
	cfg := &c.Config
	fs.StringVar(&cfg.DataDir, "data-dir", "./faultline-data", "`DIR` holding the index, findings and embedded NATS store")
	fs.StringVar(&cfg.NATSListen, "nats-listen", "127.0.0.1:4222", "client `ADDR` (host:port) of the embedded NATS server")
	fs.StringVar(&cfg.NATS.URL, "nats", "", "use the external NATS server at these `URLS` (comma-separated) instead of the embedded one")
	fs.StringVar(&cfg.NATS.User, "user", "", "NATS `USER` (the embedded server requires it too)")
	fs.StringVar(&cfg.NATS.Password, "password", "", "NATS `PASSWORD`")
	fs.StringVar(&cfg.NATS.Token, "token", "", "NATS `TOKEN` (the embedded server requires it too; default $FAULTLINE_TOKEN)")
	fs.StringVar(&c.tokenFile, "token-file", "", "read the NATS token from this `FILE`")
	fs.StringVar(&cfg.NATS.Creds, "creds", "", "NATS credentials `FILE` (JWT + nkey)")
	fs.StringVar(&cfg.NATS.NKey, "nkey", "", "NATS nkey seed `FILE`")
	fs.StringVar(&cfg.NATS.TLSCA, "tls-ca", "", "CA certificate `FILE` to verify the server")
	fs.StringVar(&cfg.NATS.TLSCert, "tls-cert", "", "client certificate `FILE`")
	fs.StringVar(&cfg.NATS.TLSKey, "tls-key", "", "client key `FILE`")
	fs.StringVar(&cfg.HTTP, "http", "127.0.0.1:8080", "HTTP listen `ADDR` (empty: off)")
	fs.StringVar(&cfg.HTTPToken, "http-token", "", "require this `TOKEN` on every HTTP route but /healthz (set it when --http is not on localhost; default $FAULTLINE_HTTP_TOKEN): as a bearer header, or a browser signs in on the login page (or opens ?token= once)")
	fs.StringVar(&c.httpTokenFile, "http-token-file", "", "read the HTTP bearer token from this `FILE`")
	fs.DurationVar(&cfg.SearchTimeout, "search-timeout", index.DefaultSearchTimeout, "stop a search of the HTTP API after this long")
	c.memLimit = memoryLimitFlag(fs)
	fs.DurationVar(&cfg.RuleBudget, "rule-budget", server.DefaultRuleBudget, "log a rule (once a minute) when one of its matchers or its condition takes longer than this on one event (negative: never)")
	fs.DurationVar(&cfg.Settle, "settle", lane.DefaultSettle, "wait this long for a newer version of a changed finding before announcing it (a burst of new facts becomes one revision; a new finding waits at most this and 20ms; nothing waits over 1s; negative: announce every version)")
	fs.StringArrayVar(&cfg.Webhooks, "webhook", nil, "POST findings to this `URL` as JSON with a text field (Slack-compatible; repeatable: each URL has its own durable outbox)")
	fs.StringArrayVar(&cfg.Alertmanagers, "alertmanager", nil, "post findings as alerts to the Alertmanager at this base `URL` (http://alertmanager:9093; repeatable; docs/alerting.md)")
	fs.DurationVar(&cfg.AlertResend, "alert-resend", sink.DefaultAlertResend, "post an active finding's alert to Alertmanager again this often (each post says it ends 4 times this later)")
	fs.StringVar(&cfg.ExternalURL, "external-url", "", "base `URL` people open the web UI at, for the evidence links of alerts (default: --advertise, else http:// and --http)")
	c.sinks.register(fs, false, false)
	fs.StringArrayVar(&cfg.RuleDirs, "rules", nil, "watched `DIR` of rule files added to the built-in pack (repeatable)")
	fs.BoolVar(&cfg.RulesOnly, "rules-only", false, "use only the rules from --rules")
	fs.StringVar(&cfg.Durable, "consumer", "analyzer", "JetStream durable consumer `NAME`")
	fs.BoolVar(&c.demo, "demo", false, "replay the seed scenario through two in-process shippers (try this first)")
	fs.StringVar(&cfg.Demo, "demo-logs", "", "`DIR` of node folders replayed by --demo (default: the seed story, embedded)")
	fs.DurationVar(&cfg.DemoPace, "demo-pace", 4*time.Second, "how long --demo takes to write the logs")
	fs.StringVar(&c.logLevel, "log-level", "info", "`LEVEL`: debug, info, warn or error")
	fs.BoolVar(&c.receive, "receive", true, "take logs over HTTP as collectors send them: OTLP/HTTP logs on /v1/logs, the Loki push API on /loki/api/v1/push (behind --http-token; docs/receivers.md)")
	fs.StringVar(&cfg.Receive.Cluster, "receive-cluster", "default", "cluster `NAME` of received logs whose client names none")
	c.receiveMax = receiver.DefaultMaxBodyBytes
	fs.Var(&c.receiveMax, "receive-max-body", "refuse a receiver request whose body is larger, compressed or not (413)")
	c.cluster = registerClusterFlags(fs, cfg)
	config.Secret(fs, "token", "password", "http-token")
}

// parseServe parses serve's command line and --config file and checks the
// settings together; pflag.ErrHelp once --help printed the usage,
// errPrintConfig once --print-config printed the settings on stdout.
func parseServe(args []string, stdout, stderr io.Writer) (*serveSettings, *pflag.FlagSet, error) {
	fs := pflag.NewFlagSet("serve", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: analyzer serve [flags]\n\n"+
			"Live: consume log records from NATS JetStream (an embedded server by default),\n"+
			"raise findings as they are proven, index events, serve HTTP.\n"+
			"Try it: analyzer serve --demo\n\n"+
			"Exit status: 0 stopped by Ctrl-C or SIGTERM (SIGHUP reloads the rules), 1 an error.\n\nflags:")
		fs.PrintDefaults()
	}
	c := &serveSettings{}
	c.RegisterFlags(fs)
	configFile := fs.String(config.Flag, "", "YAML `FILE` whose keys are these flags' names (flags on the command line win; --print-config writes one, analyzer config check FILE checks one)")
	printConfig := fs.Bool("print-config", false, "print the settings (defaults, --config and flags applied) as a --config file and exit")
	config.NotInFile(fs, config.Flag, "print-config")
	if err := fs.Parse(args); err != nil {
		return nil, fs, err
	}
	if fs.NArg() > 0 {
		return nil, fs, usageError("unexpected arguments %q", fs.Args())
	}
	if *configFile != "" {
		if err := config.Apply(fs, *configFile); err != nil {
			return nil, fs, usageError("%v", err)
		}
	}
	if *printConfig {
		if err := config.Print(stdout, fs); err != nil {
			return nil, fs, err
		}
		return nil, fs, errPrintConfig
	}
	if err := c.check(fs); err != nil {
		return nil, fs, err
	}
	return c, fs, nil
}

// errPrintConfig is parseServe's answer to --print-config.
var errPrintConfig = errors.New("--print-config")

// check validates the settings together and completes them: the cluster
// flags, the secrets (flag, file or environment), the log level, the sinks'
// URLs.
func (c *serveSettings) check(fs *pflag.FlagSet) error {
	cfg := &c.Config
	if err := c.cluster.apply(fs, cfg); err != nil {
		return usageError("%v", err)
	}
	var err error
	if cfg.NATS.Token, err = secrets.Resolve("token", cfg.NATS.Token, c.tokenFile, "FAULTLINE_TOKEN"); err != nil {
		return usageError("%v", err)
	}
	if cfg.HTTPToken, err = secrets.Resolve("http-token", cfg.HTTPToken, c.httpTokenFile, "FAULTLINE_HTTP_TOKEN"); err != nil {
		return usageError("%v", err)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return usageError("--log-level: %v", err)
	}
	cfg.Receive.Off, cfg.Receive.MaxBodyBytes = !c.receive, int64(c.receiveMax)
	for _, u := range cfg.Webhooks {
		if err := checkURL(u); err != nil {
			return usageError("--webhook %v", err)
		}
	}
	for _, u := range cfg.Alertmanagers {
		if err := checkURL(u); err != nil {
			return usageError("--alertmanager %v", err)
		}
	}
	if cfg.ExternalURL != "" {
		if err := checkURL(cfg.ExternalURL); err != nil {
			return usageError("--external-url %v", err)
		}
	}
	if cfg.AlertResend <= 0 {
		return usageError("--alert-resend %v: want a positive duration", cfg.AlertResend)
	}
	if !c.demo {
		cfg.Demo = ""
	} else if cfg.Demo == "" {
		cfg.DemoFS = faultline.SeedFailed()
	}
	return nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	c, fs, err := parseServe(args, stdout, stderr)
	if errors.Is(err, pflag.ErrHelp) || errors.Is(err, errPrintConfig) {
		return nil
	}
	if err != nil {
		if _, ok := err.(*exitError); ok {
			return err
		}
		return usageError("%v", err)
	}
	cfg := c.Config
	var level slog.Level
	level.UnmarshalText([]byte(c.logLevel)) // checked by parseServe
	if c.demo && !fs.Changed("data-dir") {
		// A demo must not resume an earlier run's stream and findings.
		dir, err := os.MkdirTemp("", "faultline-demo-data-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.DataDir = dir
	}
	cfg.DemoShip = shipDemo
	cfg.Stdout = stdout
	cfg.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	applyMemoryLimit(int64(*c.memLimit), cfg.Log)
	// SIGHUP reloads the rules (it would otherwise end the process).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	reload := make(chan struct{}, 1)
	cfg.Reload = reload
	hctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for {
			select {
			case <-hctx.Done():
				return
			case <-hup:
				cfg.Log.Info("SIGHUP: reloading the rules")
				select {
				case reload <- struct{}{}:
				default: // a reload is pending already
				}
			}
		}
	}()
	extra, err := c.sinks.build(stdout, cfg.Log)
	if err != nil {
		return err
	}
	defer extra.Close()
	cfg.Sinks = extra
	return server.Run(ctx, cfg)
}

// clusterFlags are serve's scale-out flags (issue 13) and the log stream's
// retention, mapped onto server.Config.Cluster and .Stream.
type clusterFlags struct {
	routes         string
	retentionBytes byteSize
}

func registerClusterFlags(fs *pflag.FlagSet, cfg *server.Config) *clusterFlags {
	f := &clusterFlags{}
	c := &cfg.Cluster
	fs.StringVar(&c.Name, "nats-cluster", "", "cluster the embedded NATS with other analyzers' under this cluster `NAME` and share the log stream's partitions with them (needs --nats-routes; not with --nats)")
	fs.StringVar(&c.Listen, "nats-cluster-listen", "", "`ADDR` (host:port) the embedded NATS takes cluster routes on (default: --nats-listen's host, port 6222; beyond localhost, set --token)")
	fs.StringVar(&f.routes, "nats-routes", "", "cluster addresses of every analyzer's embedded NATS, this one's included: `URLS` nats://host:port, comma-separated")
	fs.IntVar(&c.Partitions, "partitions", 0, fmt.Sprintf("partition the log stream in `N` (1-1024; default %d once clustered; an existing stream keeps its own count); with --nats, share the partitions among the analyzers on that NATS", server.DefaultPartitions))
	fs.IntVar(&c.Replicas, "stream-replicas", 0, "keep `N` copies (1-5) of the log stream and the cluster's state (0: one per NATS server, up to 3)")
	fs.StringVar(&c.Member, "member", "", "this analyzer's `NAME` among its peers (default: its embedded NATS server's name, else the host's)")
	fs.DurationVar(&c.LeaseTTL, "lease-ttl", 0, "a partition whose owner stopped renewing its lease (dead, frozen or cut off) is taken over after `DURATION` (default 5s; 1s-1m; every analyzer of a cluster gives the same)")
	fs.StringVar(&c.Advertise, "advertise", "", "base `URL` other analyzers reach this one's HTTP API at, to search its partitions (default: http:// and --http)")
	fs.DurationVar(&cfg.Stream.MaxAge, "retention-age", 0, "keep log records in the stream for `DURATION` (e.g. 72h; applied to an existing stream too; default: 7 days for a new stream, an existing one's as it is)")
	fs.Var(&f.retentionBytes, "retention-bytes", "keep at most this much of the log stream, the oldest records going first (1GiB, 512MiB; applied to an existing stream too; default: no limit for a new stream, an existing one's as it is)")
	return f
}

// apply checks the flags together and completes cfg.
func (f *clusterFlags) apply(fs *pflag.FlagSet, cfg *server.Config) error {
	c := &cfg.Cluster
	for _, r := range strings.Split(f.routes, ",") {
		if r = strings.TrimSpace(r); r != "" {
			c.Routes = append(c.Routes, r)
		}
	}
	if c.Name == "" {
		for _, name := range []string{"nats-cluster-listen", "nats-routes"} {
			if fs.Changed(name) {
				return fmt.Errorf("--%s needs --nats-cluster", name)
			}
		}
	} else {
		if cfg.NATS.URL != "" {
			return errors.New("--nats-cluster clusters the embedded NATS, --nats uses an external one: not both (on an external NATS cluster, give --partitions)")
		}
		if len(c.Routes) == 0 {
			return errors.New("--nats-cluster needs --nats-routes: the cluster address of every analyzer's NATS, this one's included")
		}
	}
	if fs.Changed("partitions") && (c.Partitions < 1 || c.Partitions > 1024) {
		return fmt.Errorf("--partitions %d: want 1 to 1024", c.Partitions)
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		return fmt.Errorf("--stream-replicas %d: want 1 to 5, or 0 for one per NATS server up to 3", c.Replicas)
	}
	if !c.Enabled() {
		for _, name := range []string{"stream-replicas", "member", "advertise", "lease-ttl"} {
			if fs.Changed(name) {
				return fmt.Errorf("--%s is for analyzers that share the stream: give --nats-cluster (or --partitions with --nats)", name)
			}
		}
	}
	if fs.Changed("lease-ttl") && (c.LeaseTTL < time.Second || c.LeaseTTL > time.Minute) {
		return fmt.Errorf("--lease-ttl %v: want 1s to 1m", c.LeaseTTL)
	}
	if c.Advertise != "" {
		u, err := url.Parse(c.Advertise)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("--advertise %q: want a base URL such as http://10.0.0.5:8080", c.Advertise)
		}
	}
	if cfg.Stream.MaxAge < 0 {
		return fmt.Errorf("--retention-age %v: want a positive duration", cfg.Stream.MaxAge)
	}
	if cfg.Stream.MaxAge > 0 && cfg.Stream.MaxAge < transport.MinRetention {
		return fmt.Errorf("--retention-age %v: want at least %v (the stream would forget records before they are read)", cfg.Stream.MaxAge, transport.MinRetention)
	}
	cfg.Stream.MaxBytes = int64(f.retentionBytes)
	return nil
}
