package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/faultline/faultline/cluster"
	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/version"
	"github.com/faultline/faultline/lane"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/receiver"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
	"github.com/faultline/faultline/web"
)

// server is one run of serve: its connections, its lanes (package lane)
// and the state the HTTP handlers read.
type server struct {
	cfg           Config
	log           *slog.Logger
	nc            *nats.Conn
	ns            *natsserver.Server // the embedded NATS server (nil with an external one)
	natsStore     *storeGuard        // restarts its JetStream after a full disk (nil with an external one)
	running       *rule.Engine       // the rules running now (it observes nothing): /api/rules, metrics, new lanes
	idx           index.Store        // Bleve on disk today
	outboxes      []*outbox          // one per webhook and Alertmanager (outbox.go)
	streamCreated time.Time
	progress      *progress
	dropMu        sync.Mutex    // a moved partition's copy dropped, or a lane reading where it starts (prune.go)
	pruned        atomic.Uint64 // records dropped from the index: past the stream's retention, or of moved partitions
	// single is the whole stream's lane, on one machine; on a cluster
	// (partitions.go) this member and its partitions' lanes, and what the
	// HTTP API searches (the fan-out across members).
	single *lane.Lane
	node   atomic.Pointer[cluster.Node]
	lanes  laneSet
	// search answers the API; searchLocal a peer's local=1 (only the
	// partitions owned here).
	search, searchLocal searchSwitch

	// warming is set until the warm-up replay is done (warmLast is the
	// stream's last sequence it replays to).
	warming  atomic.Bool
	warmLast atomic.Uint64
	ckpt     checkpointer // where the warm-up starts (checkpoint.go)

	// The live path's shared parts: counters of every lane, the committer
	// (acks after an index flush) and the announcer (sinks.go).
	counters  lane.Counters
	commit    *lane.Committer
	announcer *lane.Announcer
	reloads   reloadState // the last rule reload (reload.go)

	connErr    atomic.Value // string: the last failed NATS connection attempt's error, "" once connected
	natsErrors atomic.Int64 // asynchronous NATS errors (slow consumer drops, permissions)
	cons       atomic.Value // jetstream.Consumer, once created

	stages *stageMetrics // per-stage latency of live batches (stages.go)

	receiver *receiver.Receiver // OTLP and Loki push (receive.go); nil when off

	// shippers says when two shipper processes publish under one node
	// name (every lane's batches).
	shippers *lane.Shippers

	// Live feeds of the web UI (Server-Sent Events); Publish never blocks.
	liveEvents   *web.Hub[*parsers.Event]
	liveFindings *web.Hub[finding.Finding]
}

// Run serves until ctx is done. It is wiring: each component has a start
// function that returns its stop, and they stop in the reverse order.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	if err := cfg.Stream.Validate(); err != nil {
		// Retrying the stream's creation would fail the same way forever.
		return fmt.Errorf("log stream: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	if err := cfg.embeddedToken(); err != nil {
		return err
	}
	// HTTP first: /healthz answers while the rules load, the NATS store
	// recovers and the index opens (starting.go); the full handler takes
	// over below.
	front, err := listenEarly(cfg)
	if err != nil {
		return err
	}
	defer front.close()
	// The state of the rule files the running rules come from, taken
	// before they are read: an edit after this point is a change to reload.
	rulesState := dirsDigest(cfg.RuleDirs)
	rules, err := rule.Load(cfg.RuleDirs, cfg.RulesOnly)
	if err != nil {
		return err
	}
	s := &server{
		cfg: cfg, log: cfg.Log, running: rule.NewEngine(rules),
		liveEvents: web.NewHub[*parsers.Event](1024), liveFindings: web.NewHub[finding.Finding](64),
		stages: newStageMetrics(), shippers: lane.NewShippers(0, cfg.Log),
	}
	s.reloads.succeeded(time.Now())

	// The index first: its lock is what tells a second serve on this
	// --data-dir to go away, before its embedded NATS opens the same store.
	stop, err := s.openIndex()
	if err != nil {
		return err
	}
	defer stop()
	stop, natsURL, err := s.startNATS()
	if err != nil {
		return err
	}
	defer stop()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer s.startStoreGuard(runCtx)()
	if err := s.startReceiver(); err != nil {
		return err
	}
	if err := s.newOutboxes(front); err != nil {
		return err
	}
	s.commit = lane.NewCommitter(s.idx.Flush, cfg.AckInterval, s.saveCheckpoints, s.log)

	s.warming.Store(true)
	// HTTP comes up before NATS is known to work: while an external server
	// cannot be reached, /healthz says so and the stored findings are served.
	addrs := Addrs{NATS: natsURL}
	if s.cfg.natsTokenFile != "" {
		addrs.NATS = tokenURL(natsURL, s.cfg.NATS.Token) // for local clients (tests, a wrapping command)
	}
	if addrs.HTTP, err = s.startHTTP(front); err != nil {
		return err
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	var consume func(context.Context) error
	if s.cfg.Cluster.Enabled() {
		consume, stop, err = s.startCluster(runCtx, js, natsURL, addrs.HTTP)
	} else {
		consume, stop, err = s.startSingle(runCtx, js, natsURL)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: the next start does it again
		}
		return err
	}
	defer stop() // the announcer and the committer
	defer s.startPruner(runCtx, js)()
	s.warming.Store(false)

	defer s.startOutboxes(runCtx)()
	defer s.startRuleWatcher(runCtx, rulesState)()
	defer s.startDemo(runCtx, natsURL, addrs.HTTP)()
	if cfg.Ready != nil {
		cfg.Ready(addrs)
	}
	s.log.Info("serving", "nats", natsURL, "consumer", cfg.Durable, "clustered", s.node.Load() != nil)
	return consume(runCtx)
}

// startNATS starts the embedded NATS server (unless an external one is
// configured) and connects to it; stop closes the connection and the
// server.
func (s *server) startNATS() (stop func(), natsURL string, err error) {
	cfg := s.cfg
	natsURL = cfg.NATS.URL
	var opts []nats.Option
	stopServer := func() {}
	if natsURL == "" {
		ns, nsOpts, err := cfg.startNATS()
		if err != nil {
			return nil, "", err
		}
		s.ns = ns
		s.natsStore = newStoreGuard(ns, nsOpts, s.log)
		stopServer = func() { ns.Shutdown(); ns.WaitForShutdown() }
		if !loopback(cfg.NATSListen) && cfg.NATS.User == "" && cfg.NATS.Token == "" {
			s.log.Warn("embedded NATS listens beyond this host without authentication: anyone who reaches it can publish logs; set --token (shippers pass the same --token)", "listen", cfg.NATSListen)
		}
		auth, err := cfg.NATS.Options()
		if err != nil {
			stopServer()
			return nil, "", err
		}
		opts = append(opts, auth...)
		natsURL = ns.ClientURL()
		opts = append(opts, nats.InProcessServer(ns))
		if cfg.natsTokenFile != "" {
			s.log.Info("embedded nats", "url", natsURL, "store", cfg.natsStoreDir(), "token_file", cfg.natsTokenFile)
			if !loopback(cfg.NATSListen) {
				s.log.Info("embedded NATS listens beyond this host and requires the token in its token file: shippers on other nodes pass it (--token-file, or $FAULTLINE_TOKEN)", "token_file", cfg.natsTokenFile)
			}
		} else {
			s.log.Info("embedded nats", "url", natsURL, "store", cfg.natsStoreDir())
		}
	} else {
		auth, err := cfg.NATS.Options()
		if err != nil {
			return nil, "", err
		}
		opts = append(auth, nats.RetryOnFailedConnect(true), nats.MaxReconnects(-1),
			// Failed attempts, the first connection's included, say why,
			// once per distinct error rather than every retry.
			nats.ReconnectErrHandler(func(_ *nats.Conn, err error) {
				if err == nil {
					return
				}
				if old, _ := s.connErr.Swap(err.Error()).(string); old != err.Error() {
					s.log.Warn("NATS unreachable, retrying", "nats", redactURLs(natsURL), "err", err)
				}
			}),
			nats.ConnectHandler(func(*nats.Conn) { s.connErr.Store("") }),
			nats.ReconnectHandler(func(*nats.Conn) { s.connErr.Store("") }))
	}
	if cfg.Cluster.Enabled() {
		// A member must notice a dead or frozen server in seconds, before
		// its leases lapse, and reconnect to another (the client's default
		// is two pings of 2 minutes: a zombie member for minutes).
		opts = append(opts, cluster.ConnOptions(cfg.Cluster.LeaseTTL)...)
	}
	opts = append(opts, nats.Name("faultline-analyzer"),
		// Asynchronous errors (a slow consumer dropping messages, a
		// permission refused) are logged and counted, never silent.
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			s.natsErrors.Add(1)
			subj := ""
			if sub != nil {
				subj = sub.Subject
			}
			s.log.Warn("NATS error", "err", err, "subject", subj)
		}))
	s.nc, err = nats.Connect(natsURL, opts...)
	if err != nil {
		stopServer()
		return nil, "", fmt.Errorf("nats %s: %w", natsURL, err)
	}
	return func() { s.nc.Close(); stopServer() }, natsURL, nil
}

// openIndex opens the index under the data dir; stop closes it.
func (s *server) openIndex() (stop func(), err error) {
	// Safe batches: a message is acked only once its records are on disk,
	// so a kill -9 never loses an acknowledged record.
	// Partitioned: on a cluster every document carries its partition,
	// 0 included, so that a search can keep to the partitions owned here.
	s.idx, err = index.Open(s.cfg.DataDir, index.Options{Safe: true, FlushInterval: s.cfg.AckInterval,
		SearchTimeout: s.cfg.SearchTimeout, Logger: s.log, Partitioned: s.cfg.Cluster.Enabled()})
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	s.search.local, s.searchLocal.local = s.idx, s.idx
	return func() { s.idx.Close() }, nil
}

// startHTTP hands the early listener serve's full handler; it returns the
// address it listens on ("" without HTTP). The listener is closed by Run's
// front.close.
func (s *server) startHTTP(front *earlyHTTP) (string, error) {
	if front == nil {
		return "", nil
	}
	h, err := s.handler()
	if err != nil {
		return "", err
	}
	front.serve(h)
	addr := front.addr()
	s.log.Info("http", "addr", addr)
	if !loopback(addr) && s.cfg.HTTPToken == "" {
		s.log.Warn("HTTP listens beyond this host without a token: anyone who reaches it can read the logs and findings; set FAULTLINE_HTTP_TOKEN or --http-token-file", "listen", addr)
	}
	return addr, nil
}

// startStoreGuard watches the embedded NATS store (a full disk) until
// stopped.
func (s *server) startStoreGuard(ctx context.Context) (stop func()) {
	if s.natsStore == nil {
		return func() {}
	}
	return goUntilStopped(ctx, s.natsStore.run)
}

// startOutboxes delivers the outboxes until stopped.
func (s *server) startOutboxes(ctx context.Context) (stop func()) {
	var stops []func()
	for _, o := range s.outboxes {
		stops = append(stops, goUntilStopped(ctx, o.run))
	}
	return func() {
		for _, stop := range stops {
			stop()
		}
	}
}

// startRuleWatcher reloads the rules on a change of their files or a
// signal until stopped.
func (s *server) startRuleWatcher(ctx context.Context, state [32]byte) (stop func()) {
	return goUntilStopped(ctx, func(ctx context.Context) { s.watchRules(ctx, state) })
}

// startDemo replays the demo's nodes through in-process shippers (with
// --demo) until stopped.
func (s *server) startDemo(ctx context.Context, natsURL, httpAddr string) (stop func()) {
	if s.cfg.Demo == "" && s.cfg.DemoFS == nil {
		return func() {}
	}
	return goUntilStopped(ctx, func(ctx context.Context) {
		if err := s.runDemo(ctx, natsURL, httpAddr); err != nil {
			s.log.Error("demo", "err", err)
		}
	})
}

// goUntilStopped runs fn in a goroutine; stop cancels its context and
// waits for it.
func goUntilStopped(ctx context.Context, fn func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { fn(ctx) })
	return func() { cancel(); wg.Wait() }
}

// newEngine is a lane's rule engine: it forgets findings with their
// launches (the ledger keeps them) and reports slow rules.
func (s *server) newEngine(rules []*rule.Rule) *rule.Engine {
	e := rule.NewEngine(rules)
	e.ForgetFindings()
	s.reportSlowRules(e)
	return e
}

// laneConfig is what every lane of this process shares.
func (s *server) laneConfig(part int, engine *rule.Engine, seen *lane.Seen) lane.Config {
	return lane.Config{Part: part, Engine: engine, Seen: seen, Index: s.idx, Announcer: s.announcer, Committer: s.commit,
		Counters: &s.counters, Metrics: s.stages, Live: s.liveEvents.Publish, NewEngine: s.newEngine, Shippers: s.shippers, Log: s.log}
}

// startSingle is the one-machine way: one lane over the whole stream, its
// engine replayed from the checkpoint (the warm-up), then fed by one
// durable consumer whose acknowledgements say what the index holds. The
// stop it returns stops the announcer and the committer.
func (s *server) startSingle(ctx context.Context, js jetstream.JetStream, natsURL string) (consume func(context.Context) error, stop func(), err error) {
	st, err := s.waitStream(ctx, natsURL, func(ctx context.Context) (jetstream.Stream, error) {
		return s.cfg.ensureSingleStream(ctx, s.nc, js)
	})
	if err != nil {
		return nil, nil, err
	}
	// Before the warm-up: it may announce findings the last run had not.
	if err := s.openOutboxes(ctx, js); err != nil {
		return nil, nil, err
	}
	stop = s.startAnnouncer(ctx, sink.NewStoreLedger(s.idx), false)
	if err := s.warmUp(ctx, st); err != nil {
		stop()
		return nil, nil, err
	}
	cons, err := transport.NewConsumer(ctx, st, transport.ConsumerOptions{Durable: s.cfg.Durable, AckWait: s.cfg.AckWait,
		MaxPayload: int(s.nc.MaxPayload()), Log: s.log})
	if err != nil {
		stop()
		return nil, nil, err
	}
	s.cons.Store(cons.JetStream())
	return func(ctx context.Context) error {
		defer cons.Close()
		return s.single.Follow(ctx, cons)
	}, stop, nil
}

// startAnnouncer makes the announcer (through ledger, to serve's sinks)
// and starts it and the committer; the stop it returns stops both, the
// committer first. withStore: the stored findings are a sink (on a
// cluster; on one machine they are the ledger).
func (s *server) startAnnouncer(ctx context.Context, ledger sink.Ledger, withStore bool) (stop func()) {
	s.announcer = lane.NewAnnouncer(ledger, s.sinkList(ledger.Findings(), withStore), lane.AnnouncerOptions{
		Settle: s.cfg.Settle, Metrics: s.stages, Log: s.log})
	stopAnnouncer := s.announcer.Start(ctx)
	stopCommit := s.commit.Start(ctx)
	return func() { stopCommit(); stopAnnouncer() }
}

// reportSlowRules logs, once a minute per rule, an evaluation of e's rules
// over --rule-budget.
func (s *server) reportSlowRules(e *rule.Engine) {
	e.OnSlowRule(s.cfg.RuleBudget, func(id string, took time.Duration, ev *parsers.Event) {
		s.log.Warn("rule over its time budget: one event took longer than --rule-budget (a costly regex or condition; see faultline_rule_evaluation_seconds_total)",
			"rule", id, "took", took, "budget", s.cfg.RuleBudget, "node", ev.Node, "file", ev.File, "line", ev.Line)
	})
}

// waitStream makes sure the stream exists (ensure), retrying while an
// external server is not reachable yet (the analyzer may start before NATS
// in compose, and a NATS cluster needs a moment to elect its leaders).
func (s *server) waitStream(ctx context.Context, natsURL string, ensure func(context.Context) (jetstream.Stream, error)) (jetstream.Stream, error) {
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := ensure(cctx)
		cancel()
		if err == nil {
			return st, nil
		}
		if ce, _ := s.connErr.Load().(string); !s.nc.IsConnected() && ce != "" {
			// Why the stream is out of reach: the connection's error, not
			// the request's timeout.
			err = errors.New(ce)
		}
		s.log.Warn("NATS stream not ready, retrying", "nats", redactURLs(natsURL), "connected", s.nc.IsConnected(), "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// warmUp makes the single lane and replays the stream into its engine
// before consuming, without indexing (the durable consumer redelivers what
// the index may lack): facts proven before a restart must still join facts
// that arrive after it, and the engine keeps its state in memory only. It
// starts where the engine's checkpoint says its kept launches began
// (checkpoint.go). Findings it re-derives equal the stored ones and are not
// announced again (the ledger has them).
func (s *server) warmUp(ctx context.Context, st jetstream.Stream) error {
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream info: %w", err)
	}
	last := info.State.LastSeq
	s.warmLast.Store(last)
	engine := s.newEngine(s.running.Rules())
	cp, occ := s.startWarmUp(info, engine)
	cfg := s.laneConfig(-1, engine, lane.NewSeen(1<<18))
	cfg.Reopen = func(ctx context.Context, from uint64) (lane.Source, error) {
		return openOrdered(ctx, st, fromSeq(jetstream.OrderedConsumerConfig{FilterSubjects: []string{transport.StreamSubjects}}, from), nil, nil)
	}
	s.single = lane.New(cfg, lane.Resume{Checkpoint: cp})
	if s.cfg.beforeWarmUp != nil {
		s.cfg.beforeWarmUp()
	}
	if info.State.Msgs == 0 {
		return nil
	}
	src, err := openOrdered(ctx, st, occ, nil, nil)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	defer src.Close()
	n, err := s.single.Replay(ctx, src, last)
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	s.log.Info("warm-up done", "records", n, "from_seq", s.ckpt.from.Load(), "last_seq", last)
	return nil
}

// findings returns the stored findings (root causes first): on a cluster,
// every member's.
func (s *server) findings() []finding.Finding {
	var fs []finding.Finding
	if n := s.node.Load(); n != nil {
		fs = n.Findings()
	} else {
		fs = s.idx.Findings()
	}
	if fs == nil {
		fs = []finding.Finding{}
	}
	return fs
}

// handler is serve's HTTP: the web package's one surface (UI, API, SSE,
// /metrics, login) with serve's own routes added, all behind its token
// check; /healthz stays open for probes and says more to the token holder.
func (s *server) handler() (*web.Handler, error) {
	h, err := web.NewHandler(web.Config{
		Index: &s.search, Local: &s.searchLocal, Findings: s.findings, LiveEvents: s.liveEvents, LiveFindings: s.liveFindings,
		Token: s.cfg.HTTPToken, Logger: s.log, Registry: s.registry(),
		Routes: append([]web.Route{
			{Pattern: "GET /api/rules", Handler: web.JSON(s.rules)},
			{Pattern: "GET /api/launches", Handler: web.JSON(s.launches)},
			{Pattern: "GET /version", Handler: web.JSON(version.Get)},
			{Pattern: "GET /api/cluster", Handler: http.HandlerFunc(s.clusterStatus)},
			{Pattern: "POST /api/cluster/drain", Handler: http.HandlerFunc(s.drain)},
			{Pattern: "GET /healthz", Open: true, Handler: http.HandlerFunc(s.healthz)},
			{Pattern: "GET /readyz", Open: true, Handler: http.HandlerFunc(s.readyz)},
		}, s.receiverRoutes()...),
	})
	if err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	if s.cfg.onHTTP != nil {
		s.cfg.onHTTP(h)
	}
	return h, nil
}

// healthz answers 200 (ok, or warming while the rules replay the stream)
// or 503; the counts only to a request with the token.
func (s *server) healthz(w http.ResponseWriter, r *http.Request) {
	status, code := "ok", http.StatusOK
	if !s.nc.IsConnected() {
		status, code = "nats disconnected", http.StatusServiceUnavailable
	} else if p := s.natsStore.Problem(); p != "" {
		status, code = p, http.StatusServiceUnavailable
	} else if why := s.memberProblem(); why != "" {
		// Connected or not, a member whose heartbeats are not stored is
		// no member: its partitions are given up (a zombie).
		status, code = why, http.StatusServiceUnavailable
	} else if stalled := s.idx.Stats().Stalled; stalled != "" {
		// A full disk: records are not acknowledged until they are indexed.
		status, code = stalled, http.StatusServiceUnavailable
	}
	body := map[string]any{"status": status}
	if code == http.StatusOK && s.warming.Load() {
		// Up and serving the stored findings and index; the rules are
		// still replaying the stream (a liveness probe must not kill
		// a long warm-up, hence 200).
		body["status"] = "warming"
		body["warm_up"] = map[string]uint64{"from": s.ckpt.from.Load(), "seq": s.warmSeq(), "last": s.warmLast.Load()}
	}
	// Probes need no token; with a token set, the counts are for those
	// who hold it.
	if web.Authorized(r) {
		// records: what the index holds, earlier runs included (the
		// consumed counter starts at 0 with every run).
		consumed := s.counters.Records.Load()
		records := consumed
		if n, err := s.idx.DocCount(); err == nil {
			records = int64(n)
		}
		body["records"], body["consumed"], body["index_lag"] = records, consumed, s.commit.Unindexed()
	} else if code != http.StatusOK {
		body = map[string]any{"status": "not ok"}
	} else {
		body = map[string]any{"status": "ok"} // warming included: up, and nothing more to tell
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body)
}

// memberProblem says why this analyzer is not a working cluster member
// ("" when it is, or outside cluster mode).
func (s *server) memberProblem() string {
	n := s.node.Load()
	if n == nil {
		return ""
	}
	if d := n.SinceHeartbeat(); d > n.TTL() {
		return fmt.Sprintf("cluster member cut off: no heartbeat stored for %v, its partitions given up", d.Round(100*time.Millisecond))
	}
	return ""
}

// redactURLs hides the passwords of a comma-separated list of NATS URLs.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := url.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			if _, has := u.User.Password(); !has {
				u.User = url.User("xxxxx") // a token alone
			}
			parts[i] = u.Redacted()
		}
	}
	return strings.Join(parts, ",")
}

// registry is what /metrics serves: newRegistry's collectors and serve's own.
func (s *server) registry() *prometheus.Registry {
	reg := newRegistry(s.engines)
	reg.MustRegister(s.collectors()...)
	reg.MustRegister(s.stages.collectors()...)
	reg.MustRegister(s.reloads.collectors()...)
	reg.MustRegister(s.receiverCollectors()...)
	reg.MustRegister(newFindingCollector(s.findings), newShippersCollector(s.shippers))
	return reg
}

// loopback reports whether a listen address stays on this host.
func loopback(listen string) bool {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// ruleInfo is one loaded rule as GET /api/rules lists it.
type ruleInfo struct {
	ID       string `json:"id"`
	Cause    string `json:"cause"`
	Severity string `json:"severity"`
	Title    string `json:"title"`
	File     string `json:"file"` // where it was loaded from: a built-in pack file or one under --rules
}

// rules lists the rules the engine runs now (after any reload), by id.
func (s *server) rules() []ruleInfo {
	out := []ruleInfo{}
	for _, r := range s.running.Rules() {
		out = append(out, ruleInfo{ID: r.ID, Cause: r.Cause, Severity: string(r.MaxSeverity()), Title: r.TitleText(), File: r.File})
	}
	slices.SortFunc(out, func(a, b ruleInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}
