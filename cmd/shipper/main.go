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
	"runtime/debug"
	"runtime/pprof"
	"syscall"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/pflag"

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
	// near 45 MB for ~5% more CPU. GOMEMLIMIT, when set, wins.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(32 << 20)
	}
	if err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "shipper:", err)
		os.Exit(1)
	}
}

// fileConfig is the --config YAML: the same keys as the flags.
type fileConfig struct {
	Path             []string `yaml:"path"`
	Container        []string `yaml:"container"`
	ExcludeContainer []string `yaml:"exclude-container"`
	ContainerPath    []string `yaml:"container-path"`
	DockerRoot       string   `yaml:"docker-root"`
	Cluster          string   `yaml:"cluster"`
	Node             string   `yaml:"node"`
	NATS             string   `yaml:"nats"`
	User             string   `yaml:"user"`
	Password         string   `yaml:"password"`
	Token            string   `yaml:"token"`
	TokenFile        string   `yaml:"token-file"`
	Creds            string   `yaml:"creds"`
	NKey             string   `yaml:"nkey"`
	TLSCA            string   `yaml:"tls-ca"`
	TLSCert          string   `yaml:"tls-cert"`
	TLSKey           string   `yaml:"tls-key"`
	StateDir         string   `yaml:"state-dir"`
	FlushTimeout     duration `yaml:"flush-timeout"`
	BatchBytes       int      `yaml:"batch-bytes"`
	BatchWait        duration `yaml:"batch-wait"`
	MaxInFlight      int      `yaml:"max-in-flight"`
	Compression      string   `yaml:"compression"`
	MetricsAddr      string   `yaml:"metrics-addr"`
	LogLevel         string   `yaml:"log-level"`
	MaxAge           duration `yaml:"stream-max-age"`
	MaxBytes         int64    `yaml:"stream-max-bytes"`
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fc, rest, err := parseArgs(args, stderr)
	if errors.Is(err, pflag.ErrHelp) {
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
		Paths: fc.Path, Containers: fc.Container, ExcludeContainers: fc.ExcludeContainer, ContainerPaths: fc.ContainerPath, DockerRoot: fc.DockerRoot,
		Cluster: fc.Cluster, Node: fc.Node,
		NATS: shipper.NATSOptions{URL: fc.NATS, User: fc.User, Password: fc.Password, Token: fc.Token, Creds: fc.Creds,
			NKey: fc.NKey, TLSCA: fc.TLSCA, TLSCert: fc.TLSCert, TLSKey: fc.TLSKey},
		Stream:   shipper.StreamOptions{MaxAge: time.Duration(fc.MaxAge), MaxBytes: fc.MaxBytes},
		StateDir: fc.StateDir, FlushTimeout: time.Duration(fc.FlushTimeout), BatchBytes: fc.BatchBytes, BatchWait: time.Duration(fc.BatchWait),
		MaxInFlight: fc.MaxInFlight, Compression: fc.Compression, Log: log, Metrics: shipper.NewMetrics(),
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
		mux.Handle("/metrics", promhttp.HandlerFor(cfg.Metrics.Registry, promhttp.HandlerOpts{}))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		defer srv.Close()
		log.Info("metrics", "addr", ln.Addr().String())
	}
	return shipper.Run(ctx, cfg)
}

// parseArgs parses the flags and merges the --config file under them. It
// returns the positional arguments; pflag.ErrHelp once --help printed the
// usage.
func parseArgs(args []string, stderr io.Writer) (fileConfig, []string, error) {
	fs := pflag.NewFlagSet("shipper", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	var fc fileConfig
	host, _ := os.Hostname()
	configFile := fs.String("config", "", "YAML `FILE` with the same keys as the flags (flags win)")
	showVersion := fs.Bool("version", false, "print the version and exit")
	fs.StringArrayVar(&fc.Path, "path", nil, "`GLOB` of log files to tail (plain, Docker json-file or CRI); repeatable")
	fs.StringArrayVar(&fc.Container, "container", nil, "Docker container name `PATTERN` (path.Match); repeatable")
	fs.StringArrayVar(&fc.ExcludeContainer, "exclude-container", nil, "Docker container name `PATTERN` never to tail, e.g. the Faultline stack's own containers; repeatable")
	fs.StringArrayVar(&fc.ContainerPath, "container-path", nil, "`GLOB` inside matched containers (in addition to "+shipper.RaySessionLogs+"); repeatable")
	fs.StringVar(&fc.DockerRoot, "docker-root", "/var/lib/docker", "Docker data root `DIR`")
	fs.StringVar(&fc.Cluster, "cluster", "default", "cluster `NAME`")
	// The default is the host name, shown by pflag as the default value.
	fs.StringVar(&fc.Node, "node", host, "node `NAME`")
	fs.StringVar(&fc.NATS, "nats", "nats://127.0.0.1:4222", "NATS server `URLS`, comma-separated")
	fs.StringVar(&fc.User, "user", "", "NATS `USER`")
	fs.StringVar(&fc.Password, "password", "", "NATS `PASSWORD`")
	fs.StringVar(&fc.Token, "token", "", "NATS `TOKEN` (default $FAULTLINE_TOKEN)")
	fs.StringVar(&fc.TokenFile, "token-file", "", "read the NATS token from this `FILE`")
	fs.StringVar(&fc.Creds, "creds", "", "NATS credentials `FILE` (JWT + nkey)")
	fs.StringVar(&fc.NKey, "nkey", "", "NATS nkey seed `FILE`")
	fs.StringVar(&fc.TLSCA, "tls-ca", "", "CA certificate `FILE` to verify the server")
	fs.StringVar(&fc.TLSCert, "tls-cert", "", "client certificate `FILE`")
	fs.StringVar(&fc.TLSKey, "tls-key", "", "client key `FILE`")
	fs.StringVar(&fc.StateDir, "state-dir", "./shipper-state", "`DIR` where acknowledged offsets are kept")
	fc.FlushTimeout, fc.BatchWait, fc.MaxAge = duration(50*time.Millisecond), duration(25*time.Millisecond), duration(7*24*time.Hour)
	fs.Var(&fc.FlushTimeout, "flush-timeout", "emit a pending multi-line record after this long without a new line")
	fs.IntVar(&fc.BatchBytes, "batch-bytes", 768<<10, "close a batch at this many `BYTES` (capped below the server's max payload)")
	fs.Var(&fc.BatchWait, "batch-wait", "close a batch after this long")
	fs.IntVar(&fc.MaxInFlight, "max-in-flight", 16, "`N` batches awaiting a PubAck before reading stops")
	fs.StringVar(&fc.Compression, "compression", "s2", "`KIND` of compression of the batches: s2, zstd (smaller, more CPU) or none")
	fs.StringVar(&fc.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on this `ADDR`, e.g. 127.0.0.1:9110 (default off)")
	fs.StringVar(&fc.LogLevel, "log-level", "info", "`LEVEL`: debug, info, warn or error")
	fs.Var(&fc.MaxAge, "stream-max-age", "max age of the stream if the shipper creates it")
	fs.Int64Var(&fc.MaxBytes, "stream-max-bytes", 10<<30, "max `BYTES` of the stream if the shipper creates it")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: shipper [flags] [-]\n\nTails logs and publishes them to NATS JetStream; '-' reads stdin.\n\n"+
			"Exit status: 0 stopped by Ctrl-C or SIGTERM, or stdin ended and all of it was acknowledged;\n"+
			"1 a usage, config or fatal error (an unreachable NATS is retried, not fatal).\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return fc, nil, err
	}
	if *showVersion {
		return fc, nil, errVersion
	}
	if *configFile != "" {
		if err := mergeConfig(*configFile, fs, &fc); err != nil {
			return fc, nil, err
		}
	}
	return fc, fs.Args(), nil
}

// errVersion is parseArgs' answer to --version.
var errVersion = errors.New("--version")

// mergeConfig reads the YAML file into fc for every key whose flag was not
// given on the command line.
func mergeConfig(file string, fs *pflag.FlagSet, fc *fileConfig) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("--config: %w", err)
	}
	var y fileConfig
	if err := yaml.UnmarshalWithOptions(b, &y, yaml.Strict()); err != nil {
		// file:line:column: message, like a compiler, rather than the
		// library's "[line:column] message" and source excerpt.
		var ye yaml.Error
		if errors.As(err, &ye) && ye.GetToken() != nil {
			pos := ye.GetToken().Position
			return fmt.Errorf("--config %s:%d:%d: %s", file, pos.Line, pos.Column, ye.GetMessage())
		}
		return fmt.Errorf("--config %s: %w", file, err)
	}
	if err := checkIntegers(file, b); err != nil {
		return err
	}
	set := func(name string, apply func()) {
		if !fs.Changed(name) {
			apply()
		}
	}
	set("path", func() { fc.Path = append(fc.Path, y.Path...) })
	set("container", func() { fc.Container = append(fc.Container, y.Container...) })
	set("exclude-container", func() { fc.ExcludeContainer = append(fc.ExcludeContainer, y.ExcludeContainer...) })
	set("container-path", func() { fc.ContainerPath = append(fc.ContainerPath, y.ContainerPath...) })
	str := map[string][2]*string{"docker-root": {&fc.DockerRoot, &y.DockerRoot}, "cluster": {&fc.Cluster, &y.Cluster},
		"node": {&fc.Node, &y.Node}, "nats": {&fc.NATS, &y.NATS}, "user": {&fc.User, &y.User}, "password": {&fc.Password, &y.Password},
		"token": {&fc.Token, &y.Token}, "token-file": {&fc.TokenFile, &y.TokenFile}, "creds": {&fc.Creds, &y.Creds}, "nkey": {&fc.NKey, &y.NKey}, "tls-ca": {&fc.TLSCA, &y.TLSCA},
		"tls-cert": {&fc.TLSCert, &y.TLSCert}, "tls-key": {&fc.TLSKey, &y.TLSKey}, "state-dir": {&fc.StateDir, &y.StateDir},
		"metrics-addr": {&fc.MetricsAddr, &y.MetricsAddr}, "log-level": {&fc.LogLevel, &y.LogLevel}, "compression": {&fc.Compression, &y.Compression}}
	for name, p := range str {
		if *p[1] != "" {
			set(name, func() { *p[0] = *p[1] })
		}
	}
	dur := map[string][2]*duration{"flush-timeout": {&fc.FlushTimeout, &y.FlushTimeout}, "batch-wait": {&fc.BatchWait, &y.BatchWait},
		"stream-max-age": {&fc.MaxAge, &y.MaxAge}}
	for name, p := range dur {
		if *p[1] != 0 {
			set(name, func() { *p[0] = *p[1] })
		}
	}
	if y.BatchBytes != 0 {
		set("batch-bytes", func() { fc.BatchBytes = y.BatchBytes })
	}
	if y.MaxInFlight != 0 {
		set("max-in-flight", func() { fc.MaxInFlight = y.MaxInFlight })
	}
	if y.MaxBytes != 0 {
		set("stream-max-bytes", func() { fc.MaxBytes = y.MaxBytes })
	}
	return nil
}

// intKeys are the whole-number settings of the config file: the YAML
// library would read batch-bytes: 1.5 as 1 without a word.
var intKeys = map[string]bool{"batch-bytes": true, "max-in-flight": true, "stream-max-bytes": true}

// checkIntegers refuses a value of intKeys that is not a whole number,
// naming its line and column. The file has already been decoded.
func checkIntegers(file string, b []byte) error {
	f, err := parser.ParseBytes(b, 0)
	if err != nil {
		return nil // decoding reported it
	}
	for _, doc := range f.Docs {
		var pairs []*ast.MappingValueNode
		switch body := doc.Body.(type) {
		case *ast.MappingNode:
			pairs = body.Values
		case *ast.MappingValueNode:
			pairs = []*ast.MappingValueNode{body}
		}
		for _, kv := range pairs {
			if !intKeys[kv.Key.String()] {
				continue
			}
			switch kv.Value.(type) {
			case *ast.IntegerNode, *ast.NullNode:
				continue
			}
			pos := kv.Value.GetToken().Position
			return fmt.Errorf("--config %s:%d:%d: %s must be a whole number, not %s", file, pos.Line, pos.Column, kv.Key, kv.Value)
		}
	}
	return nil
}

// duration is a time.Duration flag and --config value. In the file it must
// be a string such as 25ms or 168h; a bad one is reported with its line
// (the YAML library reports time.ParseDuration's error without one).
type duration time.Duration

func (d *duration) String() string { return time.Duration(*d).String() }
func (d *duration) Type() string   { return "duration" }

func (d *duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = duration(v)
	return nil
}

// UnmarshalYAML implements yaml.NodeUnmarshaler.
func (d *duration) UnmarshalYAML(n ast.Node) error {
	switch n := n.(type) {
	case *ast.NullNode:
		return nil // "key:" with no value: not set
	case *ast.StringNode:
		if err := d.Set(n.Value); err != nil {
			return &yaml.SyntaxError{Message: err.Error(), Token: n.GetToken()}
		}
		return nil
	}
	return &yaml.SyntaxError{Message: fmt.Sprintf("%s is not a duration (write e.g. 25ms, 5s or 168h)", n.GetToken().Value), Token: n.GetToken()}
}
