package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
)

// diagnoseDir is diagnose of a seed story folder (spark-1 and spark-2).
func diagnoseDir(t *testing.T, dir string) []finding.Finding {
	t.Helper()
	rules, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	e := rule.NewEngine(rules)
	inputs, err := pipeline.ParseArgs([]string{"spark-1=" + dir + "/spark-1", "spark-2=" + dir + "/spark-2"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pipeline.Replay(context.Background(), inputs, pipeline.Options{Cluster: rule.DefaultCluster},
		func(ev *parsers.Event) error { e.Observe(ev); return nil }); err != nil {
		t.Fatal(err)
	}
	return e.Findings()
}

// findingView is what live must share with diagnose: id, cause, launch,
// status, facts, the lines of the evidence (node, file under the node's
// folder, line: the shippers tail copies elsewhere), the words and the fix.
func findingView(fs []finding.Finding) []string {
	var out []string
	for _, f := range fs {
		if f.Status == finding.Retracted {
			continue
		}
		var ev []string
		for _, e := range f.Evidence {
			file := e.File
			if _, rest, ok := strings.Cut(file, "/"+e.Node+"/"); ok {
				file = rest
			}
			ev = append(ev, fmt.Sprintf("%s:%s:%d", e.Node, file, e.Line))
		}
		out = append(out, fmt.Sprintf("%s %s launch_id %s %s facts %v evidence %v\n%s\n%s", f.ID, f.Cause, f.LaunchID, f.Status,
			f.Facts, ev, f.Summary, f.Remediation))
	}
	slices.Sort(out)
	return out
}

var reFixNode = regexp.MustCompile(`on (\S+): VLLM_HOST_IP=(\S+)`)

// Issue 22 item 7: live equals offline when the records arrive out of time
// order, through real shippers: one node's files shipped first (the seed's
// failed and fixed launches: the head's Ray start arrives after the
// worker's records of both launches), and a shipper started late on a
// backlog. Same finding IDs, one per cause, same facts, evidence and fix as
// diagnose's, and no announced revision whose fix names a node with
// another node's address. Fails where the launch boundary follows arrival
// (the launch split in two, evidence of one launch in the other) and facts
// are listed as they arrive.
func TestLiveEqualsOfflineOnReorderedArrival(t *testing.T) {
	for _, tc := range []struct {
		name, story string
		ship        func(t *testing.T, ctx context.Context, url, story, live string)
	}{
		{"spark-2's files shipped first", "both", func(t *testing.T, ctx context.Context, url, story, live string) {
			for _, node := range []string{"spark-2", "spark-1"} {
				dir := filepath.Join(live, node)
				if err := replayNode(ctx, filepath.Join(story, node), dir, time.Millisecond); err != nil {
					t.Fatal(err)
				}
				startShipper(t, ctx, url, "", node, dir, true)
				time.Sleep(time.Second) // its records in before the next node's
			}
		}},
		{"spark-1's shipper started late on a backlog", "failed", func(t *testing.T, ctx context.Context, url, story, live string) {
			done := make(chan struct{})
			for _, node := range []string{"spark-1", "spark-2"} {
				dir := filepath.Join(live, node)
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				go func() {
					defer func() { done <- struct{}{} }()
					replayNode(ctx, filepath.Join(story, node), dir, 2*time.Second)
				}()
			}
			startShipper(t, ctx, url, "", "spark-2", filepath.Join(live, "spark-2"), true)
			time.Sleep(time.Second)
			startShipper(t, ctx, url, "", "spark-1", filepath.Join(live, "spark-1"), true)
			<-done
			<-done
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			story := filepath.Join("../testdata/logs/seed", tc.story)
			offline := diagnoseDir(t, story)
			want := findingView(offline)
			truth := map[string]string{}
			for _, f := range offline {
				for _, m := range reFixNode.FindAllStringSubmatch(f.Remediation, -1) {
					truth[m[1]] = m[2]
				}
			}
			srv := startServer(t, Config{})
			sub := subscribeFindings(t, srv.addrs.NATS)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			tc.ship(t, ctx, srv.addrs.NATS, story, t.TempDir())
			testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
				if got := findingView(getFindings(t, srv.addrs.HTTP)); !slices.Equal(got, want) {
					return fmt.Errorf("live findings\n%s\nwant (diagnose)\n%s", strings.Join(got, "\n\n"), strings.Join(want, "\n\n"))
				}
				return nil
			})
			causes := map[string]int{}
			for _, f := range getFindings(t, srv.addrs.HTTP) {
				if f.Status != finding.Retracted {
					causes[f.Cause+" "+f.LaunchID]++
				}
			}
			for c, n := range causes {
				if n > 1 {
					t.Errorf("%s raised under %d IDs", c, n)
				}
			}
			revisions := map[string]int{}
			for _, f := range sub.all() {
				revisions[f.ID]++
				for _, m := range reFixNode.FindAllStringSubmatch(f.Remediation, -1) {
					if truth[m[1]] != m[2] {
						t.Errorf("revision %d of %s announced %q; %s is %s", f.Revision, f.Rule, m[0], m[1], truth[m[1]])
					}
				}
			}
			t.Logf("versions announced per finding: %v", revisions)
		})
	}
}
