package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/transport"
)

// buildBin builds the command in ../cmd/NAME into a temporary folder.
func buildBin(t *testing.T, name string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/"+name).CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	return bin
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// seedRecords reads the seed scenario into records, interleaved over files
// as if the nodes wrote them at the same time.
func seedRecords(t *testing.T) []parsers.Record {
	t.Helper()
	return seedRecordsOf(t, seedDir)
}

// seedRecordsOf is seedRecords of another folder of the seed story.
func seedRecordsOf(t *testing.T, dir string) []parsers.Record {
	t.Helper()
	var perFile [][]parsers.Record
	for _, node := range []string{"spark-1", "spark-2"} {
		filepath.WalkDir(filepath.Join(dir, node), func(path string, e os.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			var recs []parsers.Record
			id, _ := parsers.FileIdentity(path)
			o := parsers.Origin{Cluster: rule.DefaultCluster, Node: node, File: path, FileID: id}
			if err := parsers.ReadFile(path, o, func(r parsers.Record) { recs = append(recs, r) }, nil); err != nil {
				t.Fatal(err)
			}
			perFile = append(perFile, recs)
			return nil
		})
	}
	var out []parsers.Record
	for more := true; more; {
		more = false
		for i := range perFile {
			if len(perFile[i]) > 0 {
				out = append(out, perFile[i][0])
				perFile[i] = perFile[i][1:]
				more = true
			}
		}
	}
	return out
}

// publishRecords sends recs in batches of up to n, the shipper's wire
// format; a batch holds one cluster's records, as a shipper's do.
func publishRecords(t *testing.T, js jetstream.JetStream, recs []parsers.Record, n int) {
	t.Helper()
	publishBatches(t, js, recs, n, func(a, b *parsers.Record) bool { return a.Cluster == b.Cluster })
}

// publishBatches publishes recs in messages of up to n records that
// together(first, next) says belong in one batch, and says where each
// record landed. At least once, as the shipper does: a publish in flight
// when a server died gets no ack, so it is sent again under the same
// Nats-Msg-Id and the stream's duplicate window drops a second copy.
func publishBatches(t *testing.T, js jetstream.JetStream, recs []parsers.Record, n int, together func(first, next *parsers.Record) bool) []placed {
	t.Helper()
	var out []placed
	for len(recs) > 0 {
		k := 1
		for k < min(n, len(recs)) && together(&recs[0], &recs[k]) {
			k++
		}
		b := recs[:k]
		recs = recs[k:]
		var body []byte
		for i := range b {
			body = transport.AppendRecord(body, &b[i])
		}
		msg := &nats.Msg{Subject: transport.LogsSubject(b[0].Cluster, b[0].Node), Data: body, Header: nats.Header{}}
		msg.Header.Set(transport.HeaderMsgID, transport.MsgID(b[0].ID, len(b)))
		msg.Header.Set(transport.HeaderCount, strconv.Itoa(len(b)))
		deadline := time.Now().Add(30 * time.Second)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			ack, err := js.PublishMsg(ctx, msg, jetstream.WithRetryAttempts(20), jetstream.WithRetryWait(100*time.Millisecond))
			cancel()
			if err == nil {
				for i := range b {
					out = append(out, placed{b[i], ack.Sequence, i})
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("publish: %v", err)
			}
		}
	}
	return out
}

type proc struct {
	cmd    *exec.Cmd
	stdout *testutil.Buffer
}

func startAnalyzer(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	p := &proc{stdout: &testutil.Buffer{}}
	p.cmd = exec.Command(bin, append([]string{"serve"}, args...)...)
	p.cmd.Stdout = p.stdout
	p.cmd.Stderr = testWriter{t}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	return p
}

// TestKillRestart kills the analyzer process with SIGKILL mid-stream and
// restarts it on the same data dir: every record ends up in the index exactly
// once, and no finding is lost or announced twice.
func TestKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the analyzer binary")
	}
	bin := buildBin(t, "analyzer")
	data := t.TempDir()
	natsAddr, httpAddr := freePort(t), freePort(t)
	args := []string{"--data-dir", data, "--nats-listen", natsAddr, "--http", httpAddr, "--log-level", "warn"}
	p1 := startAnalyzer(t, bin, args...)
	url := embeddedURL(t, data, natsAddr)
	nc := connectRetrying(t, url)
	sub := subscribeFindings(t, url)
	js, _ := jetstream.New(nc)
	recs := seedRecords(t)
	half := len(recs) * 2 / 3
	publishRecords(t, js, recs[:half], 3)
	waitFinding(t, sub.all, "ray-node-ip-mismatch", "")
	p1.cmd.Process.Signal(syscall.SIGKILL)
	p1.cmd.Wait()

	p2 := startAnalyzer(t, bin, args...)
	publishRecords(t, js, recs[half:], 3)
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		info, err := js.Consumer(context.Background(), transport.StreamName, "analyzer")
		if err != nil {
			return err
		}
		ci := info.CachedInfo()
		if ci.NumPending != 0 || ci.NumAckPending != 0 {
			return fmt.Errorf("consumer: %d pending, %d awaiting ack", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
	want := verdicts(diagnose(t))
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		got := verdicts(getFindings(t, httpAddr))
		if !slices.Equal(got, want) {
			return fmt.Errorf("after restart\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		return nil
	})
	// Not repeated: every announced version of a finding is announced once.
	seen := map[string]bool{}
	for _, f := range sub.all() {
		k := fmt.Sprintf("%s/%d/%s", f.ID, f.Updates, f.Status)
		if seen[k] {
			t.Errorf("finding %s announced twice", k)
		}
		seen[k] = true
	}
	p2.cmd.Process.Signal(syscall.SIGTERM)
	if err := p2.cmd.Wait(); err != nil {
		t.Fatalf("analyzer exit: %v", err)
	}
	t.Logf("first run stdout:\n%s\nsecond run stdout:\n%s", p1.stdout, p2.stdout)
	idx, err := index.Open(data, index.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	n, err := idx.DocCount()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, r := range recs {
		ids[r.ID] = true
	}
	if int(n) != len(ids) {
		t.Errorf("index holds %d documents, want %d (each record once)", n, len(ids))
	}
	_ = http.Get
}
