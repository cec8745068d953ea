package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/cluster"
	"github.com/faultline/faultline/server"
	"github.com/faultline/faultline/transport"
)

// TestClusterStatusCommand: `analyzer cluster status` prints the members,
// each partition's owner, epoch, lag and state, the unowned ones, and
// which partition --cluster maps to; drain POSTs to the member.
func TestClusterStatusCommand(t *testing.T) {
	var drained bool
	st := server.ClusterStatus{Member: "a", Partitions: 4,
		Members: []cluster.Member{{ID: "a", HTTP: "http://a", Owned: []int{0, 1}, Since: time.Unix(0, 0)}, {ID: "b", HTTP: "http://b", Owned: []int{2}, Draining: true}},
		Leases: []server.LeaseStatus{{Partition: 0, Owner: "a", Epoch: 7, Lag: 3, State: "live", Indexed: 90},
			{Partition: 1, Owner: "a", Epoch: 8, State: "re-indexing", Indexed: 10, Target: 80},
			{Partition: 2, Owner: "b", Epoch: 9, State: "live"}},
		Unowned: []int{3}, Unreachable: []string{"c: connection refused"}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "GET /api/cluster":
			json.NewEncoder(w).Encode(st)
		case "POST /api/cluster/drain":
			drained = true
			w.Write([]byte(`{"member":"a","draining":true}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	out, errs, code := runCmd(t, "cluster", "status", "--server", srv.URL, "--cluster", "c1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"b ", "draining", "re-indexing (to seq 80)", "3 ", "unowned", "not answering: c: connection refused",
		"cluster c1 is in partition " + strconv.Itoa(transport.PartitionOf("c1", 4)) + " of 4"} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	if _, _, code := runCmd(t, "cluster", "drain", "--server", srv.URL); code != 0 || !drained {
		t.Errorf("drain: exit %d, drained %v", code, drained)
	}
	if _, _, code := runCmd(t, "cluster", "status"); code == 0 {
		t.Error("status without --server succeeded")
	}
}
