package server

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
)

// Two shippers left at one node name (the default --node is the host
// name: two hosts cloned with one name) used to merge silently into one
// node: the fix read "on vm: VLLM_HOST_IP=..." twice and nothing said why.
// Each shipper process names itself on its batches; serve says it when two
// publish under one name at once: in its log, in faultline_node_shippers,
// and in a note on the findings of that node. The seed story's two nodes
// are shipped here as node "vm" by two shippers.
func TestTwoShippersUnderOneNodeName(t *testing.T) {
	srv := startServer(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := t.TempDir()
	for _, node := range []string{"spark-1", "spark-2"} {
		dir := filepath.Join(live, node)
		os.MkdirAll(dir, 0o755)
		startShipper(t, ctx, srv.addrs.NATS, "", "vm", dir, false)
		go replayNode(ctx, filepath.Join(seedDir, node), dir, 2*time.Second)
	}

	var f finding.Finding
	testutil.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error {
		for _, g := range getFindings(t, srv.addrs.HTTP) {
			if g.Rule == "ray-node-ip-mismatch" && len(g.Notes) > 0 {
				f = g
				return nil
			}
		}
		return fmt.Errorf("no ray-node-ip-mismatch finding with a note yet: %v", getFindings(t, srv.addrs.HTTP))
	})
	if len(f.Notes) != 1 || !strings.Contains(f.Notes[0], "node vm: 2 shipper processes publish under this name") ||
		!strings.Contains(f.Notes[0], "--node") {
		t.Errorf("finding's notes: %q", f.Notes)
	}
	if !strings.Contains(srv.log.String(), "two shipper processes publish under one node name") ||
		!strings.Contains(srv.log.String(), "node=vm") {
		t.Errorf("serve's log does not say it:\n%s", srv.log)
	}
	_, metrics := get(t, "http://"+srv.addrs.HTTP+"/metrics", "")
	if !strings.Contains(metrics, `faultline_node_shippers{cluster="default",node="vm"} 2`) {
		t.Errorf("/metrics lacks faultline_node_shippers of node vm:\n%s", grepLines(metrics, "faultline_node"))
	}
	// The terminal says it too.
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		if !strings.Contains(srv.stdout.String(), "2 shipper processes publish under this name") {
			return fmt.Errorf("terminal lacks the note:\n%s", srv.stdout)
		}
		return nil
	})
}

// Shippers of their own node names raise no note and no series.
func TestShippersOfTheirOwnNodesAreNotNoted(t *testing.T) {
	srv := startServer(t, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := t.TempDir()
	for _, node := range []string{"spark-1", "spark-2"} {
		dir := filepath.Join(live, node)
		os.MkdirAll(dir, 0o755)
		startShipper(t, ctx, srv.addrs.NATS, "", node, dir, false)
		go replayNode(ctx, filepath.Join(seedDir, node), dir, 2*time.Second)
	}
	f := waitFinding(t, func() []finding.Finding { return getFindings(t, srv.addrs.HTTP) }, "ray-node-ip-mismatch", "high")
	if len(f.Notes) != 0 {
		t.Errorf("notes on a finding of two shippers of their own names: %q", f.Notes)
	}
	if code, metrics := get(t, "http://"+srv.addrs.HTTP+"/metrics", ""); code != http.StatusOK || strings.Contains(metrics, "faultline_node_shippers{") {
		t.Errorf("/metrics (%d) has a faultline_node_shippers series:\n%s", code, grepLines(metrics, "faultline_node"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
