package cluster

import (
	"time"

	"github.com/nats-io/nats.go"
)

// ConnOptions are the NATS client options a member's connection needs: a
// dead or frozen server noticed in about two pings of TTL/10 (the client's
// default is two of 2 minutes, during which a member's leases all lapse and
// it stays a zombie), and reconnection to any server, without end.
func ConnOptions(ttl time.Duration) []nats.Option {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	ping := min(max(ttl/10, 100*time.Millisecond), 2*time.Second)
	return []nats.Option{
		// A frozen server still completes the TCP handshake (the kernel
		// does) but never sends INFO: a reconnect attempt to it waits
		// this long, 2 s by default, while the leases run down.
		nats.Timeout(max(2*ping, 500*time.Millisecond)),
		nats.PingInterval(ping),
		nats.MaxPingsOutstanding(2),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(ping),
	}
}
