package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/faultline/faultline/internal/atomicfile"
	"github.com/faultline/faultline/transport"
)

// startEmbedded runs a nats-server with JetStream whose store lives under
// the data dir. It does not install signal handlers: serve owns them.
//
// Credentials given for the analyzer's own connection (--user/--password or
// --token) are also required by the embedded server, so shippers on other
// nodes authenticate with the same flags.
func startEmbedded(listen, storeDir string, auth transport.NATSOptions) (*natsserver.Server, *natsserver.Options, error) {
	opts, err := embeddedOptions(listen, storeDir, auth)
	if err != nil {
		return nil, nil, err
	}
	ns, err := runEmbedded(opts, listen)
	return ns, opts, err
}

// startNATS starts the embedded server: startEmbedded's on one machine, or,
// with Cluster.Name, one routed to the other analyzers' servers (a JetStream
// cluster) under a name unique and stable per analyzer. It returns the
// server's options too: the store guard reloads them to start JetStream
// again.
func (c *Config) startNATS() (*natsserver.Server, *natsserver.Options, error) {
	if c.Cluster.Name == "" {
		return startEmbedded(c.NATSListen, c.natsStoreDir(), c.NATS)
	}
	opts, err := embeddedOptions(c.NATSListen, c.natsStoreDir(), c.NATS)
	if err != nil {
		return nil, nil, err
	}
	if err := c.clusterOptions(opts); err != nil {
		return nil, nil, err
	}
	if openRoutes(opts) {
		c.Log.Warn("embedded NATS takes cluster routes beyond this host without authentication: anyone who reaches it can join the cluster and read the logs; set --token (every analyzer and shipper passes the same)",
			"cluster_listen", net.JoinHostPort(opts.Cluster.Host, strconv.Itoa(opts.Cluster.Port)))
	}
	ns, err := runEmbedded(opts, c.NATSListen)
	return ns, opts, err
}

// openRoutes: routes are taken beyond this host without authentication.
func openRoutes(opts *natsserver.Options) bool {
	return !loopback(net.JoinHostPort(opts.Cluster.Host, "0")) && opts.Cluster.Username == ""
}

func embeddedOptions(listen, storeDir string, auth transport.NATSOptions) (*natsserver.Options, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("--nats-listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("--nats-listen %q: bad port", listen)
	}
	if port > 0 {
		// nats-server reports a taken port only to its log (off here) and
		// then never becomes ready: find out first, and say it plainly.
		if err := portFree("--nats-listen", listen); err != nil {
			return nil, err
		}
	}
	opts := &natsserver.Options{
		ServerName: "faultline-analyzer",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   storeDir,
		NoSigs:     true,
		NoLog:      true,
	}
	switch {
	case auth.User != "" || auth.Password != "":
		opts.Username, opts.Password = auth.User, auth.Password
	case auth.Token != "":
		opts.Authorization = auth.Token
	}
	return opts, nil
}

func portFree(flag, listen string) error {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, listen, err)
	}
	ln.Close()
	return nil
}

func runEmbedded(opts *natsserver.Options, listen string) (*natsserver.Server, error) {
	ns, err := natsserver.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		ns.Shutdown()
		return nil, fmt.Errorf("embedded nats: not ready after 10s on %s", listen)
	}
	return ns, nil
}

// embeddedClusterSize is how many servers the embedded server's JetStream
// cluster has (its meta group's size, offline members included), 1 when it
// is not clustered. Counting routes instead would count this server twice
// when its own address is among them, as --nats-routes asks. A follower may
// count one less for a moment after the cluster formed (the leader's view
// reaches it with the next peer update): ask once the stream exists.
func embeddedClusterSize(ns *natsserver.Server) int {
	info, err := ns.Jsz(nil)
	if err != nil || info.Meta == nil {
		return 1
	}
	return max(info.Meta.Size, len(info.Meta.Replicas)+1, 1)
}

// routeUser is the route user when clients authenticate with a token:
// routes take a user and password only.
const routeUser = "faultline"

// clusterOptions adds Cluster to opts: the cluster name, the address routes
// come in on (default: --nats-listen's host, port 6222), the routes out,
// and the server's name. Routes authenticate as clients do (the same user
// and password, or the token as a password). JetStream expects as many
// servers as routes are given (two at least) before it elects a leader:
// every analyzer lists all of them, its own included (the server skips a
// route to itself).
func (c *Config) clusterOptions(opts *natsserver.Options) error {
	cl := c.Cluster
	listen := cl.Listen
	if listen == "" {
		listen = net.JoinHostPort(opts.Host, "6222")
	}
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("--nats-cluster-listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port == 0 || port < -1 {
		return fmt.Errorf("--nats-cluster-listen %q: bad port", listen)
	}
	if port > 0 {
		if err := portFree("--nats-cluster-listen", listen); err != nil {
			return err
		}
	}
	opts.Cluster = natsserver.ClusterOpts{Name: cl.Name, Host: host, Port: port}
	switch {
	case c.NATS.User != "" || c.NATS.Password != "":
		opts.Cluster.Username, opts.Cluster.Password = c.NATS.User, c.NATS.Password
	case c.NATS.Token != "":
		opts.Cluster.Username, opts.Cluster.Password = routeUser, c.NATS.Token
	}
	opts.Routes, err = routeURLs(cl.Routes, opts.Cluster.Username, opts.Cluster.Password)
	if err != nil {
		return err
	}
	if len(opts.Routes) == 0 {
		return errors.New("--nats-cluster needs --nats-routes: the cluster address of every analyzer's NATS, this one's included (a JetStream cluster has two servers at least)")
	}
	if cl.Member != "" {
		opts.ServerName = transport.Token(cl.Member)
	} else if opts.ServerName, err = serverName(opts.StoreDir); err != nil {
		return err
	}
	return nil
}

// routeURLs parses routes ("nats://host:port" or "host:port"), adding the
// route credentials to those that carry none.
func routeURLs(routes []string, user, password string) ([]*url.URL, error) {
	var out []*url.URL
	for _, r := range routes {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !strings.Contains(r, "://") {
			r = "nats://" + r
		}
		u, err := url.Parse(r)
		if err != nil || u.Port() == "" || u.Hostname() == "" {
			return nil, fmt.Errorf("--nats-routes: %q: want nats://host:port", redactURLs(r))
		}
		if u.Scheme != "nats" && u.Scheme != "nats-route" {
			return nil, fmt.Errorf("--nats-routes: %q: want nats://host:port", redactURLs(r))
		}
		if u.User == nil && user != "" {
			u.User = url.UserPassword(user, password)
		}
		out = append(out, u)
	}
	return out, nil
}

// serverName is this analyzer's NATS server name, unique in its cluster
// (JetStream tells servers apart by name) and the same across restarts
// (a renamed server is a new peer, its old self a lost replica): made up
// once and kept in the store dir.
func serverName(storeDir string) (string, error) {
	file := filepath.Join(storeDir, "server-name")
	if b, err := os.ReadFile(file); err == nil {
		if name := strings.TrimSpace(string(b)); name != "" {
			return name, nil
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("nats server name: %w", err)
	}
	host, _ := os.Hostname()
	var suffix [4]byte
	rand.Read(suffix[:])
	name := "faultline-" + transport.Token(host) + "-" + hex.EncodeToString(suffix[:])
	if err := os.MkdirAll(storeDir, 0o755); err != nil {
		return "", fmt.Errorf("nats server name: %w", err)
	}
	if err := atomicfile.WriteFile(file, []byte(name+"\n"), 0o644); err != nil {
		return "", fmt.Errorf("nats server name: %w", err)
	}
	return name, nil
}

// ensureStream creates FAULTLINE_LOGS with the shipper's settings unless it
// exists; an existing stream is left as the operator tuned it.
func ensureStream(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) (jetstream.Stream, error) {
	st, _, err := transport.EnsureStream(ctx, nc, js, transport.StreamOptions{})
	return st, err
}

// ensureSingleStream is ensureStream with the retention flags: the stream
// is created with c.Stream's limits, and the limits c.Stream sets
// (--retention-age, --retention-bytes) are applied to an existing one.
// Without those flags it is ensureStream.
func (c *Config) ensureSingleStream(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) (jetstream.Stream, error) {
	st, created, err := transport.EnsureStream(ctx, nc, js, c.Stream)
	if err != nil || created || c.Stream == (transport.StreamOptions{}) {
		return st, err
	}
	if err := transport.ApplyLimits(ctx, js, c.Stream, c.Log); err != nil {
		return nil, err
	}
	return js.Stream(ctx, transport.StreamName)
}

// storeGuard watches the embedded server's JetStream store. A write that
// finds the store's disk full leaves the stream with a write error that
// nats-server keeps (every later write fails at once, no PubAck is sent, and
// nothing is stored even once space returns), or, on a replicated stream,
// stops JetStream altogether; either lasts until the server is restarted.
// The guard says so once (the log, /healthz, metrics) and, once the disk has
// room again, restarts JetStream inside the running server (its options
// reloaded, as nats-server does on a SIGHUP): the streams are read back from
// the store, what was stored is kept, the shippers' retries go through, and
// nothing else is restarted.
type storeGuard struct {
	ns    *natsserver.Server
	opts  *natsserver.Options
	dir   string
	log   *slog.Logger
	every time.Duration

	problem  atomic.Pointer[string] // why JetStream is not storing; nil while it is
	stops    atomic.Int64           // times a write error or a stop was seen
	restarts atomic.Int64           // times the guard started JetStream again
}

func newStoreGuard(ns *natsserver.Server, opts *natsserver.Options, log *slog.Logger) *storeGuard {
	return &storeGuard{ns: ns, opts: opts, dir: opts.StoreDir, log: log, every: time.Second}
}

// Problem is why the embedded JetStream does not store now ("" when it does).
func (g *storeGuard) Problem() string {
	if g == nil {
		return ""
	}
	if p := g.problem.Load(); p != nil {
		return *p
	}
	return ""
}

// roomFor is how much free space the store's disk needs before JetStream is
// started again: a tenth of the disk, between 1 MiB and 64 MiB (started
// again on a disk about as full, it would fail again at once).
func roomFor(total int64) int64 { return max(1<<20, min(64<<20, total/10)) }

// diskSpace is the free and total bytes of the file system holding dir.
func diskSpace(dir string) (free, total int64, err error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, 0, err
	}
	return int64(st.Bavail) * int64(st.Bsize), int64(st.Blocks) * int64(st.Bsize), nil
}

// writeError is what keeps JetStream from storing: stopped, or a stream or
// consumer with a write error ("" when none).
func (g *storeGuard) writeError() string {
	if !g.ns.JetStreamEnabled() {
		return "JetStream stopped"
	}
	h := g.ns.Healthz(&natsserver.HealthzOptions{Details: true})
	for _, e := range h.Errors {
		if strings.Contains(e.Error, "write error") {
			return e.Error
		}
	}
	return ""
}

// run checks the store every g.every until ctx ends.
func (g *storeGuard) run(ctx context.Context) {
	t := time.NewTicker(g.every)
	defer t.Stop()
	var lastErr string
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		werr := g.writeError()
		if werr == "" {
			if g.problem.Load() != nil { // started again by someone else (a reload)
				g.problem.Store(nil)
				g.log.Info("NATS store: JetStream stores again", "store", g.dir)
			}
			continue
		}
		free, total, err := diskSpace(g.dir)
		full := err == nil && free < roomFor(total)
		if g.problem.Load() == nil {
			g.stops.Add(1)
			why := "NATS store: " + werr + "; restarting JetStream"
			if full || strings.Contains(werr, "no space left") {
				why = fmt.Sprintf("NATS store full: %s; JetStream starts again by itself once %s are free on %s",
					werr, humanBytes(roomFor(total)), g.dir)
			}
			g.problem.Store(&why)
			g.log.Error(why, "free", free)
		}
		if err != nil || full {
			continue
		}
		if g.ns.JetStreamEnabled() {
			if err := g.ns.ShutdownJetStream(); err != nil {
				g.log.Warn("NATS store: stopping JetStream to start it again", "err", err)
			}
		}
		o := *g.opts
		if err := g.ns.ReloadOptions(&o); err != nil || g.writeError() != "" {
			if msg := fmt.Sprint(err, g.writeError()); msg != lastErr {
				g.log.Warn("NATS store: JetStream did not start again; retrying", "err", err, "state", g.writeError())
				lastErr = msg
			}
			continue
		}
		lastErr = ""
		g.restarts.Add(1)
		g.problem.Store(nil)
		g.log.Info("NATS store: JetStream started again and stores", "free", free, "store", g.dir)
	}
}

// collectors are the guard's metrics.
func (g *storeGuard) collectors() []prometheus.Collector {
	return []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "faultline_nats_store_ok",
			Help: "1 while the embedded NATS JetStream stores messages, 0 while it is stopped (its disk full: /healthz says so)."},
			func() float64 {
				if g.Problem() != "" {
					return 0
				}
				return 1
			}),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_nats_store_stops_total",
			Help: "Times the embedded JetStream stopped storing (a write found its disk full)."},
			func() float64 { return float64(g.stops.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "faultline_nats_store_restarts_total",
			Help: "Times serve started the embedded JetStream again once its disk had room."},
			func() float64 { return float64(g.restarts.Load()) }),
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KiB", n>>10)
}

// natsTokenFile, in the data dir, holds the token the embedded NATS requires
// when serve is given no credentials.
const natsTokenFile = "nats.token"

// embeddedToken makes the one embedded NATS server require a token when no
// credentials are given: any process of the host could otherwise publish
// into the log stream (a shipper of another run on the default port stored
// 196,039 records in one by accident). The token is made once per data dir
// and kept in DATA_DIR/nats.token (0600), where local shippers read it
// (--token-file); serve, its demo and its Ready address use it. Nothing is
// made when credentials were given, NATS is external, or the server is a
// member of a cluster (its members share the token the operator gives
// them).
func (c *Config) embeddedToken() error {
	n := c.NATS
	if n.URL != "" || c.Cluster.Name != "" || n.User != "" || n.Password != "" || n.Token != "" || n.Creds != "" || n.NKey != "" {
		return nil
	}
	file := filepath.Join(c.DataDir, natsTokenFile)
	b, err := os.ReadFile(file)
	switch {
	case err == nil && strings.TrimSpace(string(b)) != "":
		c.NATS.Token, c.natsTokenFile = strings.TrimSpace(string(b)), file
		return nil
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("nats token: %w", err)
	}
	var raw [24]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return fmt.Errorf("nats token: %w", err)
	}
	tok := hex.EncodeToString(raw[:])
	if err := atomicfile.WriteFile(file, []byte(tok+"\n"), 0o600); err != nil {
		return fmt.Errorf("nats token: %w", err)
	}
	c.NATS.Token, c.natsTokenFile = tok, file
	return nil
}

// tokenURL is a client URL that carries token (nats://TOKEN@host:port).
func tokenURL(clientURL, token string) string {
	u, err := url.Parse(clientURL)
	if err != nil {
		return clientURL
	}
	u.User = url.User(token)
	return u.String()
}
