package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/transport"
)

func getStatus(httpAddr string) (ClusterStatus, error) {
	var st ClusterStatus
	resp, err := http.Get("http://" + httpAddr + "/api/cluster")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("/api/cluster: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// TestClusterStatusAndDrain (issue 22 item 9): /api/cluster on any member
// says who owns each partition, with its epoch, lag and state, and which
// are unowned; a drained member gives every partition up at once and
// takes none while it stays up, and the status says so.
func TestClusterStatusAndDrain(t *testing.T) {
	srv := testutil.RunJetStreamServer(t)
	const parts = 4
	cfg := func(member string) Config {
		return Config{NATS: transport.NATSOptions{URL: srv.ClientURL()}, Durable: "analyzer",
			Cluster: ClusterConfig{Partitions: parts, Member: member, LeaseTTL: 2 * time.Second}}
	}
	a := startServer(t, cfg("a"))
	b := startServer(t, cfg("b"))
	owners := func(st ClusterStatus) map[string]int {
		out := map[string]int{}
		for _, l := range st.Leases {
			out[l.Owner]++
			if l.Epoch == 0 || l.State == "" {
				t.Errorf("partition %d: epoch %d, state %q", l.Partition, l.Epoch, l.State)
			}
		}
		return out
	}
	testutil.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		st, err := getStatus(a.addrs.HTTP)
		if err != nil {
			return err
		}
		if o := owners(st); o["a"] == 0 || o["b"] == 0 || o["a"]+o["b"] != parts || len(st.Unowned) != 0 || len(st.Members) != 2 {
			return fmt.Errorf("owners %v, unowned %v, %d members, unreachable %v", o, st.Unowned, len(st.Members), st.Unreachable)
		}
		return nil
	})

	resp, err := http.Post("http://"+b.addrs.HTTP+"/api/cluster/drain", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("drain: %s", resp.Status)
	}
	drained := time.Now()
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		st, err := getStatus(b.addrs.HTTP)
		if err != nil {
			return err
		}
		if o := owners(st); o["a"] != parts || len(st.Unowned) != 0 {
			return fmt.Errorf("owners %v, unowned %v", o, st.Unowned)
		}
		for _, m := range st.Members {
			if m.ID == "b" && !m.Draining {
				return fmt.Errorf("b not shown draining")
			}
		}
		return nil
	})
	t.Logf("drained: a owns all %d partitions %v after", parts, time.Since(drained).Round(time.Millisecond))
	// It stays drained.
	time.Sleep(3 * time.Second)
	if n := ownedOf(t, b.addrs.HTTP); n != 0 {
		t.Errorf("the drained member owns %d partitions again", n)
	}
}
