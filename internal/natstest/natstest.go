// Package natstest runs an in-process NATS JetStream cluster for tests, as
// nats-server's own tests do: real servers on random ports, each with its
// store in a temporary directory, torn down when the test ends. Servers can
// be stopped and restarted (same name, ports and store) to test failover.
package natstest

import (
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/faultline/faultline/internal/testutil"
)

// ClusterName is the name of the clusters StartCluster runs.
const ClusterName = "faultline-test"

// readyTimeout bounds a server's start and the cluster's election.
const readyTimeout = 20 * time.Second

// Cluster is n JetStream servers routed to each other.
type Cluster struct {
	t       testing.TB
	opts    []*server.Options // what each server was started with (ports fixed)
	servers []*server.Server  // nil while stopped
}

// StartCluster starts n routed JetStream servers on 127.0.0.1 and returns
// once JetStream has a meta leader that every server follows. They are shut
// down when the test ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("natstest: a cluster of %d servers", n)
	}
	// Routes need every cluster port before any server starts: take free
	// ones from the kernel. Client ports too, so that Restart keeps them.
	ports := freePorts(t, 2*n)
	routes := make([]string, n)
	for i := range n {
		routes[i] = "nats-route://127.0.0.1:" + strconv.Itoa(ports[n+i])
	}
	c := &Cluster{t: t, opts: make([]*server.Options, n), servers: make([]*server.Server, n)}
	t.Cleanup(c.shutdown)
	for i := range n {
		c.opts[i] = &server.Options{
			ServerName: fmt.Sprintf("S-%d", i+1),
			Host:       "127.0.0.1",
			Port:       ports[i],
			JetStream:  true,
			StoreDir:   t.TempDir(),
			NoSigs:     true,
			NoLog:      true,
			Cluster:    server.ClusterOpts{Name: ClusterName, Host: "127.0.0.1", Port: ports[n+i]},
			Routes:     server.RoutesFromStr(strings.Join(routes, ",")),
		}
		c.start(i)
	}
	c.WaitReady()
	return c
}

// freePorts returns n distinct ports nothing listens on (a tiny race with
// other processes is possible; nats-server's tests accept the same).
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports := make([]int, n)
	lns := make([]net.Listener, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("natstest: free port: %v", err)
		}
		lns[i], ports[i] = ln, ln.Addr().(*net.TCPAddr).Port
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

func (c *Cluster) start(i int) {
	c.t.Helper()
	o := *c.opts[i]
	s, err := server.NewServer(&o)
	if err != nil {
		c.t.Fatalf("natstest: server %d: %v", i, err)
	}
	go s.Start()
	if !s.ReadyForConnections(readyTimeout) {
		s.Shutdown()
		c.t.Fatalf("natstest: server %d not ready after %v", i, readyTimeout)
	}
	c.servers[i] = s
}

// WaitReady waits until the running servers agree on a JetStream meta
// leader and each is current with it.
func (c *Cluster) WaitReady() {
	c.t.Helper()
	testutil.CheckFor(c.t, readyTimeout, 20*time.Millisecond, func() error {
		leaders := 0
		for i, s := range c.servers {
			if s == nil {
				continue
			}
			if !s.JetStreamIsCurrent() {
				return fmt.Errorf("server %d: JetStream not current", i)
			}
			if s.JetStreamIsLeader() {
				leaders++
			}
		}
		if leaders != 1 {
			return fmt.Errorf("%d JetStream meta leaders", leaders)
		}
		return nil
	})
}

// Server is server i (nil while stopped).
func (c *Cluster) Server(i int) *server.Server { return c.servers[i] }

// URL is server i's client URL (the same across restarts).
func (c *Cluster) URL(i int) string {
	return "nats://127.0.0.1:" + strconv.Itoa(c.opts[i].Port)
}

// URLs are every server's client URL, comma-separated (nats.Connect's form).
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.opts))
	for i := range c.opts {
		urls[i] = c.URL(i)
	}
	return strings.Join(urls, ",")
}

// Stop shuts server i down and waits until it is gone.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	s := c.servers[i]
	if s == nil {
		c.t.Fatalf("natstest: server %d is already stopped", i)
	}
	c.servers[i] = nil
	s.Shutdown()
	s.WaitForShutdown()
}

// Restart starts server i again with its name, ports and store, and waits
// until the cluster is ready again.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if c.servers[i] != nil {
		c.Stop(i)
	}
	c.start(i)
	c.WaitReady()
}

// StreamLeader is the index of the server leading stream (of the global
// account, where clients without accounts are), for tests that stop it.
func (c *Cluster) StreamLeader(stream string) (int, error) {
	for i, s := range c.servers {
		if s != nil && s.JetStreamIsStreamLeader(server.DEFAULT_GLOBAL_ACCOUNT, stream) {
			return i, nil
		}
	}
	return -1, fmt.Errorf("stream %s has no leader", stream)
}

func (c *Cluster) shutdown() {
	for i, s := range c.servers {
		if s != nil {
			s.Shutdown()
			s.WaitForShutdown()
			c.servers[i] = nil
		}
	}
}
