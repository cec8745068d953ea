package server

import (
	"github.com/faultline/faultline/shipper"

	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/wire"
)

// Stream defaults: the same as the shipper's (shipper.Config.Defaults), so
// whichever side creates FAULTLINE_LOGS first, the stream is the same.
// startEmbedded runs a nats-server with JetStream whose store lives under
// the data dir. It does not install signal handlers: serve owns them.
//
// Credentials given for the analyzer's own connection (--user/--password or
// --token) are also required by the embedded server, so shippers on other
// nodes authenticate with the same flags.
func startEmbedded(listen, storeDir string, auth shipper.NATSOptions) (*natsserver.Server, error) {
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
	st, err := js.Stream(ctx, wire.StreamName)
	if err == nil {
		return st, nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("stream %s: %w", wire.StreamName, err)
	}
	st, err = js.CreateOrUpdateStream(ctx, shipper.StreamOptions{}.StreamConfig(nc.MaxPayload()))
	if err != nil {
		return nil, fmt.Errorf("create stream %s: %w", wire.StreamName, err)
	}
	return st, nil
}

// ensureConsumer creates or updates the durable pull consumer. Explicit acks:
// a message is acknowledged only once its records are evaluated and indexed,
// so a restarted analyzer resumes at the first unfinished message.
func ensureConsumer(ctx context.Context, st jetstream.Stream, name string, ackWait time.Duration) (jetstream.Consumer, error) {
	c, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       name,
		Description:   "Faultline analyzer",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       ackWait,
		FilterSubject: wire.StreamSubjects,
		MaxAckPending: 20000,
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return nil, fmt.Errorf("consumer %s: %w", name, err)
	}
	return c, nil
}
