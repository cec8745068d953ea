package shipper_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/transport"
)

// The real binary runs from a --config file (path, node, cluster, nats,
// state-dir, batch-wait); flags on the command line win over it.
func TestConfigFile(t *testing.T) {
	tests := []struct {
		name      string
		batchWait string   // in the file
		args      []string // besides --config
		node      string   // the records' node
	}{
		{"file-only", "20ms", nil, "spark-1"},
		// The file's batch-wait of an hour would hold the records back:
		// they arrive because --batch-wait wins, like --node.
		{"flags-win", "1h", []string{"--node", "spark-9", "--batch-wait", "20ms"}, "spark-9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := testutil.RunJetStreamServer(t)
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			config := filepath.Join(dir, "shipper.yaml")
			yaml := fmt.Sprintf("# test shipper\npath:\n  - %s\nnode: spark-1\ncluster: dgx\nnats: %s\nstate-dir: %s\nbatch-wait: %s\nlog-level: debug\n",
				filepath.Join(dir, "*.log"), s.ClientURL(), state, tt.batchWait)
			if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			// The file appears after the start: a live file, whose batches
			// close on batch-wait, not at its end.
			startShipper(t, append([]string{"--config", config}, tt.args...)...)
			appendLines(t, filepath.Join(dir, "a.log"), "a", 0, 100)
			var c *contents
			testutil.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
				c = readStream(t, s.ClientURL())
				if c.distinct() != 100 {
					return fmt.Errorf("%d records", c.distinct())
				}
				return nil
			})
			if got, subject := c.subjects[transport.LogsSubject("dgx", tt.node)], transport.LogsSubject("dgx", tt.node); got != 100 {
				t.Errorf("%d records on %s, want 100 (subjects %v)", got, subject, c.subjects)
			}
			// The acknowledged offsets are kept in the file's state-dir.
			testutil.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
				b, err := os.ReadFile(filepath.Join(state, "offsets.json"))
				if err != nil {
					return err
				}
				if !strings.Contains(string(b), filepath.Join(dir, "a.log")) {
					return fmt.Errorf("a.log not in offsets.json: %s", b)
				}
				return nil
			})
		})
	}
}

// A config file the shipper cannot use stops it at once, naming the file and
// line.
func TestConfigFileRejected(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, want string
	}{
		{"unknown-key", "node: spark-1\nbatch_wait: 20ms\n", `:2:1: unknown key "batch_wait"`},
		{"malformed", "node: spark-1\npath: [a.log\n", `:2:7: sequence end token ']' not found`},
		// (not batch-wait: the command line gives it, and wins)
		{"bad-duration", "stream-max-age: 20\n", `:1:17: 20 is not a duration`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, tt.name+".yaml")
			os.WriteFile(file, []byte(tt.content), 0o600)
			configError(t, "shipper: --config "+file+tt.want, "--config", file)
		})
	}
}
