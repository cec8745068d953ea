// Command shipper tails the Ray, vLLM and NCCL logs of one GPU node and
// publishes them to NATS JetStream for the Faultline analyzer.
//
//	shipper --cluster dgx --node spark-1 --container 'node-*' --nats nats://head:4222 \
//	        --state-dir /var/lib/faultline-shipper --metrics-addr 127.0.0.1:9110
//	docker logs -f node-1 | shipper --node spark-1 -
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"

	"github.com/faultline/faultline/internal/config"
	"github.com/faultline/faultline/internal/gctune"
	"github.com/faultline/faultline/internal/helpflag"
	"github.com/faultline/faultline/internal/secrets"
	"github.com/faultline/faultline/internal/version"
	"github.com/faultline/faultline/shipper"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// FAULTLINE_CPUPROFILE=file writes a CPU profile (for the benchmark).
	if p := os.Getenv("FAULTLINE_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	// The live heap is the in-flight window (16 batches of 768 KiB) plus
	// buffers; without a soft limit the collector lets the heap double past
	// it and the agent's RSS reaches ~65 MB at full speed. 32 MiB keeps it
	// near 45 MB for ~5% more CPU; with thousands of files followed the
	// live heap is larger (~8 KB a file), and the limit follows it (twice
	// the live heap). GOMEMLIMIT, when set, wins.
	go gctune.FollowLive(ctx, 32<<20, 5*time.Second)
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "shipper:", err)
		os.Exit(1)
	}
}

// settings are the shipper's flags, each also the key of the same name in
// the --config file (package config). To add one: a field here and its line
// in RegisterFlags.
type settings struct {
	Path             []string
	Container        []string
	ExcludeContainer []string
	ContainerLabel   []string
	ContainerPath    []string
	DockerRoot       string
	Cluster          string
	Node             string
	PodAsNode        bool
	NATS             string
	User             string
	Password         string
	Token            string
	TokenFile        string
	Creds            string
	NKey             string
	TLSCA            string
	TLSCert          string
	TLSKey           string
	StateDir         string
	SaveInterval     time.Duration
	FlushTimeout     time.Duration
	BatchBytes       int
	BatchWait        time.Duration
	MaxInFlight      int
	MaxOpenFiles     int
	Compression      string
	MetricsAddr      string
	LogLevel         string
	MaxAge           time.Duration
	MaxBytes         int64
}

// RegisterFlags defines every setting as a flag of fs, with its default.
func (c *settings) RegisterFlags(fs *pflag.FlagSet) {
	host, _ := os.Hostname()
	fs.StringArrayVar(&c.Path, "path", nil, "`GLOB` of log files to tail (plain, Docker json-file or CRI); repeatable")
	fs.StringArrayVar(&c.Container, "container", nil, "Docker container name `PATTERN` (path.Match); repeatable")
	fs.StringArrayVar(&c.ExcludeContainer, "exclude-container", nil, "Docker container name `PATTERN` never to tail, e.g. the Faultline stack's own containers; repeatable")
	fs.StringArrayVar(&c.ContainerLabel, "container-label", nil, "tail only matched containers that carry this `LABEL` (KEY, any value, or KEY=VALUE; docker run --label); repeatable: all of them")
	fs.StringArrayVar(&c.ContainerPath, "container-path", nil, "`GLOB` inside matched containers (in addition to "+shipper.RaySessionLogs+"); repeatable")
	fs.StringVar(&c.DockerRoot, "docker-root", "/var/lib/docker", "Docker data root `DIR`")
	fs.StringVar(&c.Cluster, "cluster", "default", "cluster `NAME`")
	// The default is the host name, shown by pflag as the default value.
	fs.StringVar(&c.Node, "node", host, "node `NAME`")
	fs.BoolVar(&c.PodAsNode, "pod-as-node", false, "name the records of kubelet pod logs (/var/log/pods/NAMESPACE_POD_UID/CONTAINER/N.log) by their pod instead of --node: a Ray node is a pod")
	fs.StringVar(&c.NATS, "nats", "nats://127.0.0.1:4222", "NATS server `URLS`, comma-separated")
	fs.StringVar(&c.User, "user", "", "NATS `USER`")
	fs.StringVar(&c.Password, "password", "", "NATS `PASSWORD`")
	fs.StringVar(&c.Token, "token", "", "NATS `TOKEN` (default $FAULTLINE_TOKEN)")
	fs.StringVar(&c.TokenFile, "token-file", "", "read the NATS token from this `FILE`")
	fs.StringVar(&c.Creds, "creds", "", "NATS credentials `FILE` (JWT + nkey)")
	fs.StringVar(&c.NKey, "nkey", "", "NATS nkey seed `FILE`")
	fs.StringVar(&c.TLSCA, "tls-ca", "", "CA certificate `FILE` to verify the server")
	fs.StringVar(&c.TLSCert, "tls-cert", "", "client certificate `FILE`")
	fs.StringVar(&c.TLSKey, "tls-key", "", "client key `FILE`")
	fs.StringVar(&c.StateDir, "state-dir", "./shipper-state", "`DIR` where acknowledged offsets are kept")
	fs.DurationVar(&c.SaveInterval, "save-interval", 50*time.Millisecond, "write acknowledged offsets to the state dir at most this often (each write is an fsync; after a crash what was acknowledged since is sent again, and dropped by the server as duplicates)")
	fs.DurationVar(&c.FlushTimeout, "flush-timeout", 50*time.Millisecond, "emit a pending multi-line record after this long without a new line")
	fs.IntVar(&c.BatchBytes, "batch-bytes", 768<<10, "close a batch at this many `BYTES` (capped below the server's max payload)")
	fs.DurationVar(&c.BatchWait, "batch-wait", 25*time.Millisecond, "close a batch after this long")
	fs.IntVar(&c.MaxInFlight, "max-in-flight", 16, "`N` batches awaiting a PubAck before reading stops")
	fs.IntVar(&c.MaxOpenFiles, "max-open-files", 1024, "hold at most `N` files open (and never more than the descriptor limit less 64); the others are closed until written")
	fs.StringVar(&c.Compression, "compression", "s2", "`KIND` of compression of the batches: s2, zstd (smaller, more CPU) or none")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics (/metrics) and health (/healthz: 200, or 503 with what is wrong) on this `ADDR`, e.g. 127.0.0.1:9110 (default off)")
	fs.StringVar(&c.LogLevel, "log-level", "info", "`LEVEL`: debug, info, warn or error")
	fs.DurationVar(&c.MaxAge, "stream-max-age", 7*24*time.Hour, "max age of the stream if the shipper creates it")
	fs.Int64Var(&c.MaxBytes, "stream-max-bytes", 10<<30, "max `BYTES` of the stream if the shipper creates it")
	config.Secret(fs, "token", "password")
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if helpflag.Asked(args) {
		stderr = stdout // the usage is what was asked for: on stdout, for | less
	}
	fc, rest, err := parseArgs(args, stdout, stderr)
	if errors.Is(err, pflag.ErrHelp) || errors.Is(err, errPrintConfig) {
		return nil
	}
	if errors.Is(err, errVersion) {
		fmt.Fprintln(stdout, "shipper", version.Get())
		return nil
	}
	if err != nil {
		return err
	}
	if fc.Token, err = secrets.Resolve("token", fc.Token, fc.TokenFile, "FAULTLINE_TOKEN"); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(fc.LogLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := shipper.Config{
		Paths: fc.Path, Containers: fc.Container, ExcludeContainers: fc.ExcludeContainer, ContainerLabels: fc.ContainerLabel, ContainerPaths: fc.ContainerPath, DockerRoot: fc.DockerRoot,
		Cluster: fc.Cluster, Node: fc.Node, PodAsNode: fc.PodAsNode,
		NATS: shipper.NATSOptions{URL: fc.NATS, User: fc.User, Password: fc.Password, Token: fc.Token, Creds: fc.Creds,
			NKey: fc.NKey, TLSCA: fc.TLSCA, TLSCert: fc.TLSCert, TLSKey: fc.TLSKey},
		Stream:   shipper.StreamOptions{MaxAge: fc.MaxAge, MaxBytes: fc.MaxBytes},
		StateDir: fc.StateDir, SaveInterval: fc.SaveInterval, FlushTimeout: fc.FlushTimeout, BatchBytes: fc.BatchBytes, BatchWait: fc.BatchWait,
		MaxInFlight: fc.MaxInFlight, MaxOpenFiles: fc.MaxOpenFiles, Compression: fc.Compression, Log: log, Metrics: shipper.NewMetrics(),
	}
	for _, a := range rest {
		if a != "-" {
			return fmt.Errorf("unexpected argument %q (use --path)", a)
		}
		cfg.Stdin = stdin
	}
	if fc.MetricsAddr != "" {
		ln, err := net.Listen("tcp", fc.MetricsAddr)
		if err != nil {
			return fmt.Errorf("--metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		cfg.Health = shipper.NewHealth(cfg.Metrics)
		mux.Handle("/metrics", promhttp.HandlerFor(cfg.Metrics.Registry, promhttp.HandlerOpts{}))
		mux.Handle("/healthz", cfg.Health)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		log.Info("metrics", "addr", ln.Addr().String())
	}
	err = shipper.Run(ctx, cfg)
	if errors.Is(err, nats.ErrAuthorization) && fc.Token == "" && fc.User == "" && fc.Creds == "" && fc.NKey == "" {
		// The likely case: a local analyzer's embedded NATS, which makes
		// a token of its own when given none.
		return fmt.Errorf("%w (analyzer serve's embedded NATS requires the token it keeps in DATA_DIR/nats.token when given none: pass --token-file DATA_DIR/nats.token)", err)
	}
	return err
}

// parseArgs parses the flags and applies the --config file under them. It
// returns the positional arguments; pflag.ErrHelp once --help printed the
// usage, errPrintConfig once --print-config printed the settings on stdout.
func parseArgs(args []string, stdout, stderr io.Writer) (settings, []string, error) {
	fs := pflag.NewFlagSet("shipper", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var c settings
	c.RegisterFlags(fs)
	configFile := fs.String(config.Flag, "", "YAML `FILE` whose keys are these flags' names (flags on the command line win; --print-config writes one)")
	printConfig := fs.Bool("print-config", false, "print the settings (defaults, --config and flags applied) as a --config file and exit")
	showVersion := fs.Bool("version", false, "print the version and exit")
	config.NotInFile(fs, config.Flag, "print-config", "version")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: shipper [flags] [-]\n\nTails logs and publishes them to NATS JetStream; '-' reads stdin.\n\n"+
			"Exit status: 0 stopped by Ctrl-C or SIGTERM, or stdin ended and all of it was acknowledged;\n"+
			"1 a usage, config or fatal error (an unreachable NATS is retried, not fatal).\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	if *showVersion {
		return c, nil, errVersion
	}
	if *configFile != "" {
		if err := config.Apply(fs, *configFile); err != nil {
			return c, nil, err
		}
	}
	if *printConfig {
		if err := config.Print(stdout, fs); err != nil {
			return c, nil, err
		}
		return c, nil, errPrintConfig
	}
	return c, fs.Args(), nil
}

// errVersion and errPrintConfig are parseArgs' answers to --version and
// --print-config.
var (
	errVersion     = errors.New("--version")
	errPrintConfig = errors.New("--print-config")
)
