package shipper_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/transport"
)

func shipperArgs(url, node, state string, extra ...string) []string {
	return append([]string{"--nats", url, "--cluster", "dgx", "--node", node, "--state-dir", state,
		"--batch-wait", "20ms", "--flush-timeout", "50ms", "--log-level", "debug"}, extra...)
}

// Two shippers on two "nodes" tail files a test appends to: every record
// arrives once, on its node's subject, with its labels and its stable ID.
func TestTwoShippersEveryRecordOnce(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	nodes := []string{"spark-1", "spark-2"}
	for _, n := range nodes {
		// The files do not exist yet when the shippers start.
		os.MkdirAll(filepath.Join(dir, n), 0o755)
		startShipper(t, shipperArgs(s.ClientURL(), n, filepath.Join(dir, n, "state"), "--path", filepath.Join(dir, n, "*.log"))...)
	}
	const n = 3000
	for i := 0; i < n; i += 500 {
		for _, node := range nodes {
			appendLines(t, filepath.Join(dir, node, "ray.log"), node, i, i+500)
		}
	}
	var c *contents
	testutil.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
		c = readStream(t, s.ClientURL())
		if c.distinct() < 2*n {
			return fmt.Errorf("%d distinct records, want %d", c.distinct(), 2*n)
		}
		return nil
	})
	if c.dups() != 0 || len(c.records) != 2*n {
		t.Errorf("%d records stored, %d duplicates; want %d, 0", len(c.records), c.dups(), 2*n)
	}
	for _, node := range nodes {
		if m := missing(c, node, n); len(m) > 0 {
			t.Errorf("node %s: %d lines missing, first %q", node, len(m), m[0])
		}
		if got := c.subjects["faultline.logs.dgx."+node]; got != n {
			t.Errorf("subject of %s has %d records, want %d (subjects %v)", node, got, n, c.subjects)
		}
	}
	for _, r := range c.records {
		if r.Cluster != "dgx" || r.File == "" || r.Line == 0 || r.Text[:len(r.Node)] != r.Node {
			t.Fatalf("bad labels: %+v", r)
		}
		if r.ID != recordID(r) {
			t.Fatalf("record ID %s is not RecordID(node, file_id, offset) = %s", r.ID, recordID(r))
		}
	}
	_ = transport.StreamName
}

// `docker logs -f ... | shipper -`: stdin is shipped and the shipper exits
// at its end once everything is acknowledged.
func TestStdin(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	var in strings.Builder
	for i := 0; i < 500; i++ {
		fmt.Fprintf(&in, "s line %07d INFO something happened here\n", i)
	}
	cmd := exec.Command(shipperBin(t), append(shipperArgs(s.ClientURL(), "spark-1", filepath.Join(dir, "state")), "-")...)
	cmd.Stdin = strings.NewReader(in.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("shipper -: %v\n%s", err, out)
	}
	c := readStream(t, s.ClientURL())
	if m := missing(c, "s", 500); len(m) > 0 || c.dups() != 0 {
		t.Fatalf("%d missing, %d duplicates", len(m), c.dups())
	}
}
