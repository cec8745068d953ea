package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/secrets"
	"github.com/faultline/faultline/web"
)

func runUI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("ui", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: analyzer ui [flags]\n\n"+
			"Serve the web UI and the HTTP API over an index made by `analyzer ingest` (offline; for a\n"+
			"live index, `analyzer serve` serves the same UI).\n\n"+
			"Exit status: 0 stopped by Ctrl-C or SIGTERM, 1 an error.\n\nflags:")
		fs.PrintDefaults()
	}
	dataDir := fs.String("data-dir", "./faultline-data", "index `DIR` (shared with serve, ingest, search)")
	addr := fs.String("http", "127.0.0.1:8080", "listen `ADDR`; keep it on loopback unless a token is set")
	token := fs.String("http-token", "", "require this `TOKEN` on every route but /healthz (default $FAULTLINE_HTTP_TOKEN): as a bearer header, or a browser signs in on the login page (or opens ?token= once)")
	tokenFile := fs.String("http-token-file", "", "read the HTTP bearer token from this `FILE`")
	searchTimeout := fs.Duration("search-timeout", index.DefaultSearchTimeout, "stop a search of the HTTP API after this long")
	memLimit := memoryLimitFlag(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError("%v", err)
	}
	if fs.NArg() > 0 {
		return usageError("unexpected arguments %q", fs.Args())
	}
	var err error
	if *token, err = secrets.Resolve("http-token", *token, *tokenFile, "FAULTLINE_HTTP_TOKEN"); err != nil {
		return usageError("%v", err)
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	applyMemoryLimit(int64(*memLimit), log)
	idx, err := openIndex(ctx, *dataDir, index.Options{ReadOnly: true, SearchTimeout: *searchTimeout})
	if errors.Is(err, errInterrupted) {
		return err
	}
	if err != nil {
		return usageError("%v", err)
	}
	defer idx.Close()
	h, err := uiHandler(idx, *token, log)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return usageError("--http: %v", err)
	}
	if host, _, err := net.SplitHostPort(ln.Addr().String()); err == nil && *token == "" {
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			log.Warn("serving on a non-loopback address without --http-token: anyone who can reach it can read the logs", "addr", ln.Addr())
		}
	}
	url := "http://" + ln.Addr().String() + "/"
	fmt.Fprintf(stdout, "Faultline UI on %s (index %s); Ctrl-C to stop\n", url, *dataDir)
	if *token != "" {
		// The token is not printed: terminals are logged and shared.
		fmt.Fprintf(stdout, "It wants the HTTP token: sign in on the page, or open %s?token=TOKEN once\n", url)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close() // SSE clients hold connections open
	}
	return nil
}

// uiHandler is ui's HTTP surface: the web package's, over an index on disk
// (tests walk its routes).
func uiHandler(idx *index.Index, token string, log *slog.Logger) (*web.Handler, error) {
	return web.NewHandler(web.Config{Index: idx, Token: token, Logger: log})
}
