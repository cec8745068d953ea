package server

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/natstest"
	"github.com/faultline/faultline/internal/testutil"
)

// TestNATSClusterConfOnOneHost (issue 22 item 9): docs/nats-cluster.conf
// runs three times on one host, as its header says: the addresses from
// the command line, the store in each one's working directory, the routes
// and the token from the environment; the three form a JetStream cluster that keeps a stream in
// three copies.
func TestNATSClusterConfOnOneHost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three nats-server processes")
	}
	bin := natstest.BuildServer(t)
	const token = "c0ffee"
	var ports []int
	for range 6 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
	}
	conf, err := filepath.Abs("../docs/nats-cluster.conf")
	if err != nil {
		t.Fatal(err)
	}
	var stores []string
	env := []string{"FAULTLINE_TOKEN=" + token}
	for i := range 3 {
		env = append(env, fmt.Sprintf("FAULTLINE_NATS_ROUTE_%d=nats://faultline:%s@127.0.0.1:%d", i+1, token, ports[3+i]))
	}
	for i := range 3 {
		cmd := exec.Command(bin, "-c", conf, "--name", "nats"+strconv.Itoa(i+1),
			"-a", "127.0.0.1", "-p", strconv.Itoa(ports[i]), "--cluster", "nats://127.0.0.1:"+strconv.Itoa(ports[3+i]))
		cmd.Env, cmd.Dir = env, t.TempDir() // its store
		stores = append(stores, cmd.Dir)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	testutil.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		nc, err := nats.Connect("nats://127.0.0.1:"+strconv.Itoa(ports[0]), nats.Token(token), nats.Timeout(time.Second))
		if err != nil {
			return err
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		st, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "CONF_TEST", Subjects: []string{"conf.test"}, Replicas: 3})
		if err != nil {
			return err
		}
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		if info.Cluster == nil || len(info.Cluster.Replicas) != 2 {
			return fmt.Errorf("stream placed on %+v, want a leader and two replicas", info.Cluster)
		}
		return nil
	})
	for _, d := range stores {
		if _, err := os.Stat(filepath.Join(d, "jetstream")); err != nil {
			t.Errorf("the store is not in the server's working directory: %v", err)
		}
	}
}
