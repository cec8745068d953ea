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
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/receiver"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/sink"
	"github.com/faultline/faultline/transport"
	"github.com/faultline/faultline/web"
)

// server is one run of serve: its connections and the state shared by the
// consumer, the acker and the HTTP handlers.
type server struct {
	cfg           Config
	log           *slog.Logger
	nc            *nats.Conn
	engine        *rule.Engine // the whole stream's; on a cluster, only the running rules (each partition has its own)
	idx           index.Store  // Bleve on disk today
	hook          *webhook
	seen          *seenSet
	single        *lane              // the whole stream, on one machine
	ns            *natsserver.Server // the embedded NATS server (nil with an external one)
	natsStore     *storeGuard        // restarts its JetStream after a full disk (nil with an external one)
	streamCreated time.Time
	progress      *progress
	// On a cluster (partitions.go): this member, its partitions' lanes,
	// and what the HTTP API searches (the fan-out across members).
	node  atomic.Pointer[cluster.Node]
	lanes laneSet
	// search answers the API; searchLocal a peer's local=1 (only the
	// partitions owned here).
	search, searchLocal searchSwitch

	// warming is set until the warm-up replay is done; warmSeq of warmLast
	// is how far it got.
	warming           atomic.Bool
	warmSeq, warmLast atomic.Uint64
	ckpt              checkpointer // where the warm-up starts (checkpoint.go)

	acks      chan transport.AckFunc // of handled batches, settled after an index flush
	unindexed atomic.Int64           // records evaluated but not yet known flushed (the index lag)
	records   atomic.Int64
	connErr   atomic.Value // string: the last failed NATS connection attempt's error, "" once connected
	// For /metrics (servemetrics.go).
	evaluated   atomic.Int64
	badMessages atomic.Int64
	natsErrors  atomic.Int64 // asynchronous NATS errors (slow consumer drops, permissions)
	cons        atomic.Value // jetstream.Consumer, once created

	// announcer passes new and changed findings on to the sinks (sinks.go).
	announcer sink.Sink
	stages    *stageMetrics // per-stage latency of live batches (stages.go)

	receiver *receiver.Receiver // OTLP and Loki push (receive.go); nil when off

	// Live feeds of the web UI (Server-Sent Events); Publish never blocks.
	liveEvents   *web.Hub[*parsers.Event]
	liveFindings *web.Hub[finding.Finding]
}

// Run serves until ctx is done.
func Run(ctx context.Context, cfg Config) error {
	cfg.defaults()
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return fmt.Errorf("data dir: %w", err)
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
		cfg: cfg, log: cfg.Log, engine: rule.NewEngine(rules),
		seen: newSeenSet(1 << 18), acks: make(chan transport.AckFunc, 4096),
		liveEvents: web.NewHub[*parsers.Event](1024), liveFindings: web.NewHub[finding.Finding](64),
		stages: newStageMetrics(),
	}
	s.engine.ForgetFindings() // the store keeps them
	s.single = &lane{part: -1, engine: s.engine, seen: s.seen}
	s.reportSlowRules(s.engine)

	natsURL := cfg.NATS.URL
	var opts []nats.Option
	if natsURL == "" {
		ns, nsOpts, err := cfg.startNATS()
		if err != nil {
			return err
		}
		s.ns = ns
		s.natsStore = newStoreGuard(ns, nsOpts, s.log)
		if !loopback(cfg.NATSListen) && cfg.NATS.User == "" && cfg.NATS.Token == "" {
			s.log.Warn("embedded NATS listens beyond this host without authentication: anyone who reaches it can publish logs; set --token (shippers pass the same --token)", "listen", cfg.NATSListen)
		}
		auth, err := cfg.NATS.Options()
		if err != nil {
			return err
		}
		opts = append(opts, auth...)
		defer func() { ns.Shutdown(); ns.WaitForShutdown() }()
		natsURL = ns.ClientURL()
		opts = append(opts, nats.InProcessServer(ns))
		s.log.Info("embedded nats", "url", natsURL, "store", cfg.natsStoreDir())
	} else {
		auth, err := cfg.NATS.Options()
		if err != nil {
			return err
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
		return fmt.Errorf("nats %s: %w", natsURL, err)
	}
	defer s.nc.Close()

	// Safe batches: a message is acked only once its records are on disk,
	// so a kill -9 never loses an acknowledged record.
	// Partitioned: on a cluster every document carries its partition,
	// 0 included, so that a search can keep to the partitions owned here.
	s.idx, err = index.Open(cfg.DataDir, index.Options{Safe: true, FlushInterval: cfg.AckInterval,
		SearchTimeout: cfg.SearchTimeout, Logger: s.log, Partitioned: cfg.Cluster.Enabled()})
	if err != nil {
		return fmt.Errorf("index: %w", err)
	}
	defer s.idx.Close()
	s.search.local, s.searchLocal.local = s.idx, s.idx
	if err := s.startReceiver(); err != nil {
		return err
	}
	s.hook = newWebhook(cfg.Webhook, cfg.WebhookBackoff, s.log)
	s.announcer = s.newSinks()

	var wg sync.WaitGroup
	runCtx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); wg.Wait() }()
	if s.natsStore != nil {
		wg.Go(func() { s.natsStore.run(runCtx) })
	}
	s.warming.Store(true)
	// HTTP comes up before NATS is known to work: while an external server
	// cannot be reached, /healthz says so and the stored findings are served.
	addrs := Addrs{NATS: natsURL}
	if front != nil {
		h, err := s.handler()
		if err != nil {
			return err
		}
		front.serve(h)
		addrs.HTTP = front.addr()
		s.log.Info("http", "addr", addrs.HTTP)
		if !loopback(addrs.HTTP) && cfg.HTTPToken == "" {
			s.log.Warn("HTTP listens beyond this host without a token: anyone who reaches it can read the logs and findings; set FAULTLINE_HTTP_TOKEN or --http-token-file", "listen", addrs.HTTP)
		}
	}
	js, err := jetstream.New(s.nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	var consume func(context.Context) error
	if s.cfg.Cluster.Enabled() {
		consume, err = s.startCluster(ctx, js, natsURL, addrs.HTTP)
	} else {
		consume, err = s.startSingle(ctx, js, natsURL)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped while starting: the next start does it again
		}
		return err
	}
	s.warming.Store(false)

	wg.Go(func() { s.hook.run(runCtx) })
	wg.Go(func() { s.ackLoop(runCtx) })
	wg.Go(func() { s.watchRules(runCtx, rulesState) })
	if cfg.Demo != "" || cfg.DemoFS != nil {
		wg.Go(func() {
			if err := s.runDemo(runCtx, natsURL, addrs.HTTP); err != nil {
				s.log.Error("demo", "err", err)
			}
		})
	}
	if cfg.Ready != nil {
		cfg.Ready(addrs)
	}
	s.log.Info("serving", "nats", natsURL, "consumer", cfg.Durable, "clustered", s.node.Load() != nil)
	return consume(ctx)
}

// startSingle is the one-machine way: the whole stream, replayed into the
// engine from the checkpoint, then read by one durable consumer.
func (s *server) startSingle(ctx context.Context, js jetstream.JetStream, natsURL string) (func(context.Context) error, error) {
	st, err := s.waitStream(ctx, natsURL, func(ctx context.Context) (jetstream.Stream, error) {
		return s.cfg.ensureSingleStream(ctx, s.nc, js)
	})
	if err != nil {
		return nil, err
	}
	// Before the warm-up: it may announce findings the last run had not.
	if err := s.hook.open(ctx, js); err != nil {
		return nil, err
	}
	if err := s.warmUp(ctx, st); err != nil {
		return nil, err
	}
	cons, err := transport.NewConsumer(ctx, st, transport.ConsumerOptions{Durable: s.cfg.Durable, AckWait: s.cfg.AckWait,
		MaxPayload: int(s.nc.MaxPayload()), Log: s.log})
	if err != nil {
		return nil, err
	}
	s.cons.Store(cons.JetStream())
	return func(ctx context.Context) error {
		defer cons.Close()
		return s.consume(ctx, cons)
	}, nil
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

// warmUp replays the stream into the engine before consuming, without
// indexing or alerting anew: facts proven before a restart must still join
// facts that arrive after it, and the engine keeps its state in memory only.
// It starts where the engine's checkpoint says its kept launches began
// (checkpoint.go). Findings it re-derives equal the stored ones and are not
// announced again.
func (s *server) warmUp(ctx context.Context, st jetstream.Stream) error {
	info, err := st.Info(ctx)
	if err != nil {
		return fmt.Errorf("stream info: %w", err)
	}
	last := info.State.LastSeq
	s.warmLast.Store(last)
	cp, occ := s.startWarmUp(info, []string{transport.StreamSubjects})
	if s.cfg.beforeWarmUp != nil {
		s.cfg.beforeWarmUp()
	}
	if info.State.Msgs == 0 {
		return nil
	}
	oc, err := st.OrderedConsumer(ctx, occ)
	if err != nil {
		return fmt.Errorf("warm-up consumer: %w", err)
	}
	it, err := oc.Messages()
	if err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	n := 0
	for {
		msg, err := it.Next()
		if err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		recs, _ := transport.Decode(msg.Data())
		for i := range recs {
			ev := parsers.Parse(recs[i])
			if s.warmRecord(cp, md.Sequence.Stream, i, &ev) {
				n++
			}
		}
		s.warmSeq.Store(md.Sequence.Stream)
		if md.Sequence.Stream >= last {
			s.log.Info("warm-up done", "records", n, "from_seq", s.ckpt.from.Load(), "last_seq", last)
			return nil
		}
	}
}

// handle evaluates and indexes the records of one batch of lane l and hands
// its ack to the acker, which acks it once the index has flushed it. Every
// record's rules run before any is indexed (Add builds the document and may
// wait for the index's writers): a finding does not wait for the batch's
// indexing.
func (s *server) handle(l *lane, b transport.Batch, ack transport.AckFunc) {
	got := time.Now()
	// A partition's replay is not live: its latencies and events are old.
	live := b.Seq == 0 || b.Seq > l.replayTo
	if live {
		s.stages.consumed(&b, got)
	}
	if b.Err != nil {
		// The good records before the fault are still used; a
		// redelivery would fail the same way, so the batch is acked.
		s.log.Warn("bad message", "subject", b.Subject, "seq", b.Seq, "err", b.Err)
		s.badMessages.Add(1)
	}
	seq := b.Seq // its stream sequence (0: unknown, the next warm-up replays everything)
	evs := make([]parsers.Event, 0, len(b.Records))
	var announcing time.Duration
	for i := range b.Records {
		ev := parsers.Parse(b.Records[i])
		if ev.ID == "" {
			continue
		}
		pos := streamPos(seq, i)
		if l.skip.Skip(ev.Cluster, pos) {
			// Before its cluster's checkpoint launch: the replay of a
			// new owner does not observe it (checkpoint.go).
			l.seen.add(ev.ID)
		} else if l.seen.add(ev.ID) {
			if fs := l.engine.ObserveAt(&ev, pos); len(fs) > 0 {
				start := time.Now()
				s.announce(fs)
				now := time.Now()
				announcing += now.Sub(start)
				if live {
					s.stages.announce.Observe(now.Sub(start).Seconds())
					s.stages.found(&b, len(fs), now)
				}
			}
			s.evaluated.Add(1)
			if s.liveEvents != nil && live {
				live := ev
				s.liveEvents.Publish(&live)
			}
		}
		if seq != 0 && seq < l.indexFrom {
			continue // indexed here before (a replay of a partition taken back)
		}
		ev.Partition = max(l.part, 0)
		evs = append(evs, ev)
	}
	indexing := time.Now()
	s.stages.rules.Observe((indexing.Sub(got) - announcing).Seconds())
	for i := range evs {
		if err := s.idx.Add(&evs[i]); err != nil {
			s.log.Error("index add", "id", evs[i].ID, "err", err)
		}
		s.unindexed.Add(1)
		s.records.Add(1)
	}
	s.stages.index.Observe(time.Since(indexing).Seconds())
	s.acks <- ack
}

// lane is one rule engine and what feeds it: the whole stream on one
// machine, one partition on a cluster.
type lane struct {
	part   int // -1: the whole stream
	engine *rule.Engine
	seen   *seenSet
	// skip leaves out the records before each cluster's checkpoint launch
	// (a replay from a checkpoint); indexFrom is the first stream sequence
	// not known to be in the index already.
	skip      rule.Checkpoint
	indexFrom uint64
	// replayTo is the stream's last sequence when a partition was taken:
	// up to it, batches are a replay.
	replayTo uint64
	saved    rule.Checkpoint // the checkpoint last saved (under saveMu)
	saveMu   sync.Mutex
	// For a partition: its lease, and the messages left after the last
	// one read (its lag).
	lease   *cluster.Lease
	pending atomic.Uint64
}

// ackLoop acknowledges messages in batches after an index flush, so an
// acknowledged record is always in the index (Benthos style: the ack
// travels with the message until its work is done).
func (s *server) ackLoop(ctx context.Context) {
	t := time.NewTicker(s.cfg.AckInterval)
	defer t.Stop()
	var pending []transport.AckFunc
	flush := func() {
		if len(pending) == 0 {
			return
		}
		n := s.unindexed.Load()
		if err := s.idx.Flush(ctx); err != nil {
			s.log.Warn("index flush; acks delayed", "err", err)
			return
		}
		for _, ack := range pending {
			if err := ack(ctx, nil); err != nil {
				s.log.Warn("ack", "err", err)
			}
		}
		s.unindexed.Add(-n)
		pending = pending[:0]
		if s.node.Load() != nil {
			s.saveLanes(ctx)
		} else {
			s.saveCheckpoint() // what the engine observed is in the stream: safe to start there
		}
	}
	for {
		select {
		case <-ctx.Done():
			return // unacked messages are redelivered to the next run
		case m := <-s.acks:
			pending = append(pending, m)
			if len(pending) >= 1000 {
				flush()
			}
		case <-t.C:
			flush()
		}
	}
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
	}
	body := map[string]any{"status": status}
	if code == http.StatusOK && s.warming.Load() {
		// Up and serving the stored findings and index; the rules are
		// still replaying the stream (a liveness probe must not kill
		// a long warm-up, hence 200).
		body["status"] = "warming"
		body["warm_up"] = map[string]uint64{"from": s.ckpt.from.Load(), "seq": s.warmSeq.Load(), "last": s.warmLast.Load()}
	}
	// Probes need no token; with a token set, the counts are for those
	// who hold it.
	if web.Authorized(r) {
		// records: what the index holds, earlier runs included (the
		// consumed counter starts at 0 with every run).
		records := s.records.Load()
		if n, err := s.idx.DocCount(); err == nil {
			records = int64(n)
		}
		body["records"], body["consumed"], body["index_lag"] = records, s.records.Load(), s.unindexed.Load()
	} else if code != http.StatusOK {
		body = map[string]any{"status": "not ok"}
	} else {
		body = map[string]any{"status": "ok"} // warming included: up, and nothing more to tell
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(body)
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
	reg.MustRegister(s.receiverCollectors()...)
	reg.MustRegister(newFindingCollector(s.findings))
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
	for _, r := range s.engine.Rules() {
		out = append(out, ruleInfo{ID: r.ID, Cause: r.Cause, Severity: r.Severity, Title: r.Title, File: r.File})
	}
	slices.SortFunc(out, func(a, b ruleInfo) int { return strings.Compare(a.ID, b.ID) })
	return out
}

// seenSet remembers the last n record IDs, so a redelivered record is not
// evaluated twice. Bounded: older IDs fall out in insertion order.
type seenSet struct {
	ids  map[string]struct{}
	ring []string
	next int
}

func newSeenSet(n int) *seenSet {
	return &seenSet{ids: make(map[string]struct{}, n), ring: make([]string, n)}
}

// add reports whether id is new.
func (s *seenSet) add(id string) bool {
	if _, ok := s.ids[id]; ok {
		return false
	}
	if old := s.ring[s.next]; old != "" {
		delete(s.ids, old)
	}
	s.ring[s.next] = id
	s.ids[id] = struct{}{}
	s.next = (s.next + 1) % len(s.ring)
	return true
}
