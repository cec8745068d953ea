package natstest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/testutil"
)

// TestClusterStopRestart: three routed servers form one JetStream cluster
// (an R3 stream is placed on all of them); a stopped server's URL stops
// answering, and once restarted with its name, ports and store it serves
// clients again and catches up on what was stored meanwhile.
func TestClusterStopRestart(t *testing.T) {
	c := StartCluster(t, 3)
	if got := strings.Count(c.URLs(), ",") + 1; got != 3 {
		t.Fatalf("URLs %q", c.URLs())
	}
	nc, err := nats.Connect(c.URLs())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if nc.ConnectedClusterName() != ClusterName {
		t.Errorf("cluster name %q, want %q", nc.ConnectedClusterName(), ClusterName)
	}
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "t.1", []byte("before")); err != nil {
		t.Fatal(err)
	}
	name := c.Server(1).Name()
	c.Stop(1)
	if c.Server(1) != nil {
		t.Fatal("a stopped server is still returned")
	}
	if conn, err := nats.Connect(c.URL(1), nats.Timeout(time.Second)); err == nil {
		conn.Close()
		t.Fatal("a stopped server still takes clients")
	}
	// Each try has its own deadline: a publish sent while the stream
	// elects a new leader may never be acknowledged. The message ID keeps a
	// try that was stored after all from counting twice.
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := js.Publish(pctx, "t.2", []byte("while down"), jetstream.WithMsgID("t.2"))
		return err
	})
	c.Restart(1)
	if got := c.Server(1).Name(); got != name {
		t.Errorf("restarted as %q, want %q", got, name)
	}
	direct, err := nats.Connect(c.URL(1))
	if err != nil {
		t.Fatalf("restarted server on its old URL: %v", err)
	}
	direct.Close()
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		info, err := st.Info(ctx)
		if err != nil {
			return err
		}
		if info.State.Msgs != 2 {
			return fmt.Errorf("%d messages", info.State.Msgs)
		}
		for _, r := range info.Cluster.Replicas {
			if r.Name == name && r.Current {
				return nil
			}
		}
		return fmt.Errorf("%s is not a current replica: leader %s, replicas %+v", name, info.Cluster.Leader, info.Cluster.Replicas)
	})
}
