package natstest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/testutil"
)

// Procs are nats-server processes routed to each other: unlike Cluster's
// in-process servers they can be frozen (SIGSTOP) as a stalled server is,
// and killed.
type Procs struct {
	t     testing.TB
	cmds  []*exec.Cmd
	names []string
	ports []int
}

// BuildServer builds the nats-server of go.mod into a temporary folder and
// returns its path.
func BuildServer(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "nats-server")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/nats-io/nats-server/v2").CombinedOutput()
	if err != nil {
		t.Fatalf("natstest: go build nats-server: %v\n%s", err, out)
	}
	return bin
}

// StartProcs runs n JetStream servers of bin on 127.0.0.1, random ports,
// and returns once JetStream answers on all of them. They are killed when
// the test ends (thawed first).
func StartProcs(t testing.TB, bin string, n int) *Procs {
	t.Helper()
	ports := freePorts(t, 2*n)
	routes := make([]string, n)
	for i := range n {
		routes[i] = "nats://127.0.0.1:" + strconv.Itoa(ports[n+i])
	}
	p := &Procs{t: t, ports: ports[:n]}
	t.Cleanup(p.shutdown)
	for i := range n {
		name := fmt.Sprintf("P-%d", i+1)
		cmd := exec.Command(bin, "-js", "-sd", t.TempDir(), "-a", "127.0.0.1", "-p", strconv.Itoa(ports[i]),
			"-n", name, "--cluster_name", ClusterName, "--cluster", routes[i], "--routes", strings.Join(routes, ","))
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if !testing.Verbose() {
			cmd.Stdout, cmd.Stderr = nil, nil
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("natstest: nats-server %d: %v", i, err)
		}
		p.cmds, p.names = append(p.cmds, cmd), append(p.names, name)
	}
	for i := range n {
		p.waitJetStream(i)
	}
	p.waitPlacement(n)
	return p
}

// waitPlacement waits until a stream with one replica per server can be
// made: a meta leader answers account info before it has heard from every
// peer, and a test's first R3 bucket then fails with "no suitable peers
// for placement, peer offline" (2 of 3 runs of a test on a loaded machine).
func (p *Procs) waitPlacement(n int) {
	p.t.Helper()
	testutil.CheckFor(p.t, readyTimeout, 50*time.Millisecond, func() error {
		nc, err := nats.Connect(p.URL(0), nats.Timeout(time.Second))
		if err != nil {
			return err
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		const name = "natstest_placement"
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{"natstest.placement"}, Replicas: n, Storage: jetstream.MemoryStorage}); err != nil {
			return fmt.Errorf("a stream of %d replicas: %w", n, err)
		}
		return js.DeleteStream(ctx, name)
	})
}

func (p *Procs) waitJetStream(i int) {
	p.t.Helper()
	testutil.CheckFor(p.t, readyTimeout, 50*time.Millisecond, func() error {
		nc, err := nats.Connect(p.URL(i), nats.Timeout(time.Second))
		if err != nil {
			return err
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err = js.AccountInfo(ctx)
		return err
	})
}

// URL is server i's client URL.
func (p *Procs) URL(i int) string { return "nats://127.0.0.1:" + strconv.Itoa(p.ports[i]) }

// URLs are every server's client URL, server first first.
func (p *Procs) URLs(first int) string {
	var urls []string
	for k := range p.ports {
		urls = append(urls, p.URL((first+k)%len(p.ports)))
	}
	return strings.Join(urls, ",")
}

// Name is server i's name.
func (p *Procs) Name(i int) string { return p.names[i] }

// Index is the index of the server named name, -1 if none.
func (p *Procs) Index(name string) int {
	for i, n := range p.names {
		if n == name {
			return i
		}
	}
	return -1
}

// Freeze stops server i (SIGSTOP): its connections stay open, nothing
// answers.
func (p *Procs) Freeze(i int) { p.signal(i, syscall.SIGSTOP) }

// Thaw lets server i run again (SIGCONT).
func (p *Procs) Thaw(i int) { p.signal(i, syscall.SIGCONT) }

func (p *Procs) signal(i int, sig syscall.Signal) {
	p.t.Helper()
	if err := p.cmds[i].Process.Signal(sig); err != nil {
		p.t.Fatalf("natstest: %v to server %d: %v", sig, i, err)
	}
}

func (p *Procs) shutdown() {
	for _, c := range p.cmds {
		c.Process.Signal(syscall.SIGCONT)
		c.Process.Kill()
		c.Wait()
	}
}
