package server

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/transport"
)

// startEmbedded runs a nats-server with JetStream whose store lives under
// the data dir. It does not install signal handlers: serve owns them.
//
// Credentials given for the analyzer's own connection (--user/--password or
// --token) are also required by the embedded server, so shippers on other
// nodes authenticate with the same flags.
func startEmbedded(listen, storeDir string, auth transport.NATSOptions) (*natsserver.Server, error) {
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
		ln, err := net.Listen("tcp", listen)
		if err != nil {
			return nil, fmt.Errorf("--nats-listen %s: %w", listen, err)
		}
		ln.Close()
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

// ensureStream creates FAULTLINE_LOGS with the shipper's settings unless it
// exists; an existing stream is left as the operator tuned it.
func ensureStream(ctx context.Context, nc *nats.Conn, js jetstream.JetStream) (jetstream.Stream, error) {
	st, _, err := transport.EnsureStream(ctx, nc, js, transport.StreamOptions{})
	return st, err
}
