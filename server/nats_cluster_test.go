package server

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/transport"
)

// clusterConfigs are n analyzers' configs whose embedded servers route to
// each other on free ports, with token.
func clusterConfigs(t *testing.T, n int, token string) []*Config {
	t.Helper()
	var routes []string
	cfgs := make([]*Config, n)
	for i := range n {
		cl := freePort(t)
		routes = append(routes, "nats://"+cl)
		cfgs[i] = &Config{DataDir: t.TempDir(), NATSListen: freePort(t), NATS: transport.NATSOptions{Token: token},
			Cluster: ClusterConfig{Name: "fl", Listen: cl}, Log: slog.New(slog.DiscardHandler)}
	}
	for _, c := range cfgs {
		c.Cluster.Routes = routes // every server's, its own included, as nats-server configs usually are
	}
	return cfgs
}

func runClusterNATS(t *testing.T, c *Config) *natsserver.Server {
	t.Helper()
	ns, _, err := c.startNATS()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

func waitMetaLeader(t *testing.T, servers ...*natsserver.Server) {
	t.Helper()
	testutil.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		leaders := 0
		for i, s := range servers {
			if !s.JetStreamIsCurrent() {
				return fmt.Errorf("server %d not current", i)
			}
			if s.JetStreamIsLeader() {
				leaders++
			}
		}
		if leaders != 1 {
			return fmt.Errorf("%d meta leaders", leaders)
		}
		return nil
	})
}

// TestEmbeddedCluster: three analyzers' embedded servers form one JetStream
// cluster over token-authenticated routes and hold an R3 partitioned
// stream; each has its own server name, kept across restarts in its data
// dir; a route without credentials is refused.
func TestEmbeddedCluster(t *testing.T) {
	cfgs := clusterConfigs(t, 3, "s3cret")
	servers := make([]*natsserver.Server, len(cfgs))
	names := map[string]bool{}
	for i, c := range cfgs {
		servers[i] = runClusterNATS(t, c)
		if !servers[i].JetStreamIsClustered() {
			t.Fatalf("server %d is not a JetStream cluster member", i)
		}
		names[servers[i].Name()] = true
	}
	if len(names) != 3 {
		t.Fatalf("server names %v, want 3 distinct", names)
	}
	waitMetaLeader(t, servers...)
	testutil.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		for i, s := range servers {
			if n := embeddedClusterSize(s); n != 3 {
				return fmt.Errorf("server %d counts %d servers, want 3", i, n)
			}
		}
		return nil
	})
	nc, err := nats.Connect(servers[0].ClientURL(), nats.Token("s3cret"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if nc.ConnectedClusterName() != "fl" {
		t.Errorf("cluster name %q", nc.ConnectedClusterName())
	}
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	testutil.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		st, err := transport.EnsurePartitionedStream(ctx, nc, js, transport.StreamOptions{}, 12, 3, nil)
		if err != nil {
			return err
		}
		if r := st.CachedInfo().Cluster; r == nil || len(r.Replicas) != 2 {
			return fmt.Errorf("stream cluster %+v, want a leader and 2 replicas", r)
		}
		return nil
	})

	// The name survives a restart, from the data dir.
	name := servers[2].Name()
	servers[2].Shutdown()
	servers[2].WaitForShutdown()
	servers[2] = runClusterNATS(t, cfgs[2])
	if servers[2].Name() != name {
		t.Errorf("restarted as %q, was %q", servers[2].Name(), name)
	}
	if b, err := os.ReadFile(filepath.Join(cfgs[2].natsStoreDir(), "server-name")); err != nil || strings.TrimSpace(string(b)) != name {
		t.Errorf("server-name file: %q, %v", b, err)
	}
	waitMetaLeader(t, servers...)

	if got := routeConnect(t, cfgs[0].Cluster.Listen, ""); !strings.Contains(got, "Authorization Violation") {
		t.Errorf("a route without credentials got %q, want an authorization violation", got)
	}
}

// routeConnect connects to a cluster port as a route with these
// credentials and returns the server's first answer after CONNECT.
func routeConnect(t *testing.T, addr, userPass string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(conn)
	if _, err := r.ReadString('\n'); err != nil { // INFO
		t.Fatal(err)
	}
	fmt.Fprintf(conn, "CONNECT {\"verbose\":false,\"pedantic\":false,\"name\":\"intruder\",\"cluster\":\"fl\"%s}\r\nPING\r\n", userPass)
	line, _ := r.ReadString('\n')
	return line
}

func TestClusterOptions(t *testing.T) {
	for _, c := range []struct {
		name     string
		cfg      Config
		wantErr  string
		routes   []string // redacted
		user     string
		openWarn bool
		server   string // "": generated
	}{
		{name: "token", cfg: Config{NATS: transport.NATSOptions{Token: "tk"}, Cluster: ClusterConfig{Listen: "127.0.0.1:-1", Routes: []string{"nats://h1:6222", "h2:6222", "nats://u:p@h3:6222"}}},
			routes: []string{"nats://faultline:tk@h1:6222", "nats://faultline:tk@h2:6222", "nats://u:p@h3:6222"}, user: "faultline"},
		{name: "user", cfg: Config{NATS: transport.NATSOptions{User: "a", Password: "b"}, Cluster: ClusterConfig{Listen: "127.0.0.1:-1", Routes: []string{"nats-route://h1:1"}}},
			routes: []string{"nats-route://a:b@h1:1"}, user: "a"},
		{name: "open beyond this host", cfg: Config{Cluster: ClusterConfig{Listen: "0.0.0.0:-1", Routes: []string{"h1:1"}}},
			routes: []string{"nats://h1:1"}, openWarn: true},
		{name: "all interfaces with a token", cfg: Config{NATS: transport.NATSOptions{Token: "tk"}, Cluster: ClusterConfig{Listen: ":-1", Routes: []string{"h1:1"}}},
			routes: []string{"nats://faultline:tk@h1:1"}, user: "faultline"},
		{name: "default listen", cfg: Config{Cluster: ClusterConfig{Routes: []string{"h1:1"}}}, routes: []string{"nats://h1:1"}},
		{name: "no port", cfg: Config{Cluster: ClusterConfig{Listen: "127.0.0.1:-1", Routes: []string{"nats://h1"}}}, wantErr: "--nats-routes"},
		{name: "bad scheme", cfg: Config{Cluster: ClusterConfig{Listen: "127.0.0.1:-1", Routes: []string{"http://h1:1"}}}, wantErr: "--nats-routes"},
		{name: "bad listen", cfg: Config{Cluster: ClusterConfig{Listen: "nowhere"}}, wantErr: "--nats-cluster-listen"},
		{name: "no routes", cfg: Config{Cluster: ClusterConfig{Listen: "127.0.0.1:-1"}}, wantErr: "--nats-routes"},
		{name: "member names the server", cfg: Config{Cluster: ClusterConfig{Listen: "127.0.0.1:-1", Routes: []string{"h1:1"}, Member: "a 1"}},
			routes: []string{"nats://h1:1"}, server: "a_1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.DataDir = t.TempDir()
			c.cfg.Cluster.Name = "fl"
			opts := &natsserver.Options{Host: "127.0.0.1", StoreDir: c.cfg.natsStoreDir()}
			err := c.cfg.clusterOptions(opts)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err %v, want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, u := range opts.Routes {
				got = append(got, u.String())
			}
			if fmt.Sprint(got) != fmt.Sprint(c.routes) {
				t.Errorf("routes %v, want %v", got, c.routes)
			}
			if opts.Cluster.Username != c.user || openRoutes(opts) != c.openWarn {
				t.Errorf("route user %q (want %q), open %v (want %v)", opts.Cluster.Username, c.user, openRoutes(opts), c.openWarn)
			}
			if opts.Cluster.Name != "fl" || c.server == "" && !strings.HasPrefix(opts.ServerName, "faultline-") || c.server != "" && opts.ServerName != c.server {
				t.Errorf("cluster %q, server name %q", opts.Cluster.Name, opts.ServerName)
			}
		})
	}
}

// TestServerNameStable: a generated name is kept in the store dir, and two
// data dirs get two names.
func TestServerNameStable(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	n1, err := serverName(a)
	if err != nil {
		t.Fatal(err)
	}
	n2, _ := serverName(a)
	n3, _ := serverName(b)
	if n1 != n2 || n1 == n3 || strings.ContainsAny(n1, " .*>") {
		t.Errorf("names %q %q (same dir), %q (another)", n1, n2, n3)
	}
}

// TestSingleStreamRetention: on one machine, the retention flags set the
// limits of a new stream and change those of an existing one; without
// them an existing stream keeps what it has.
func TestSingleStreamRetention(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if n := embeddedClusterSize(s); n != 1 {
		t.Errorf("a lone server counts %d servers", n)
	}
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, c := range []struct {
		so       transport.StreamOptions
		age      time.Duration
		maxBytes int64
	}{
		{transport.StreamOptions{MaxAge: time.Hour}, time.Hour, -1}, // created
		{transport.StreamOptions{}, time.Hour, -1},                  // no flags: as it is
		{transport.StreamOptions{MaxBytes: 1 << 30}, time.Hour, 1 << 30},
		{transport.StreamOptions{MaxAge: 24 * time.Hour}, 24 * time.Hour, 1 << 30},
	} {
		cfg := Config{Stream: c.so, Log: slog.New(slog.DiscardHandler)}
		st, err := cfg.ensureSingleStream(ctx, nc, js)
		if err != nil {
			t.Fatal(err)
		}
		got := st.CachedInfo().Config
		if got.MaxAge != c.age || got.MaxBytes != c.maxBytes || got.Subjects[0] != transport.StreamSubjects {
			t.Errorf("with %+v: max_age %v, max_bytes %d, subjects %v; want %v, %d", c.so, got.MaxAge, got.MaxBytes, got.Subjects, c.age, c.maxBytes)
		}
	}
}
