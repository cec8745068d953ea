package receiver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/loggen"
	"github.com/faultline/faultline/internal/receivertest"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/receiver"
	"github.com/faultline/faultline/transport"
)

// BenchmarkReceivers is the ingest throughput of each receiver beside the
// shipper path, in one run on one machine: the same Docker json-file logs
// (loggen, ~180 bytes a line, FAULTLINE_BENCH_NODES files of one node
// each, FAULTLINE_BENCH_LINES lines in all) go into a fresh JetStream
// server (file store, in this process) until JetStream acknowledged every
// record,
//
//   - shipper: the real shipper binary tailing the files (done when its
//     saved offsets reach the files' ends), as BenchmarkShipper runs it;
//   - otlp-proto, otlp-json, loki-proto, loki-json: the receiver (package
//     receiver with transport's publisher, what serve mounts on its HTTP)
//     in a process of its own (this test binary in receiver mode), sent the
//     files' lines as collectors send them: one client per node, each
//     request of FAULTLINE_BENCH_BATCH lines (default 1000) sent after the
//     previous one was answered, the bodies encoded before the clock
//     starts (OTLP as the SDK exporter encodes it, Loki's push protobuf
//     snappy-compressed, Loki's JSON).
//
// The ingesting process runs with GOMAXPROCS=1; its CPU time and peak RSS
// come from the kernel (wait4 rusage). Rates are per input line. The
// stream's record count is the same for every receiver (the same requests,
// framing and joining: nothing lost, nothing doubled) and the shipper's
// within the request boundaries (a multi-line record that a client splits
// across two requests is two records, docs/receivers.md).
//
//	go test ./receiver -run '^$' -bench Receivers -benchtime 1x
//	bash bench/receivers.sh   (the table only)
func BenchmarkReceivers(b *testing.B) {
	lines := envInt("FAULTLINE_BENCH_LINES", 400_000)
	nodes := envInt("FAULTLINE_BENCH_NODES", 4)
	batch := envInt("FAULTLINE_BENCH_BATCH", 1000)
	dir := b.TempDir()
	logs := filepath.Join(dir, "logs")
	var paths []string
	var size int64
	for i := range nodes {
		path := filepath.Join(logs, fmt.Sprintf("node-%d", i), "bench-json.log")
		os.MkdirAll(filepath.Dir(path), 0o755)
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w := bufio.NewWriterSize(f, 1<<20)
		n, err := loggen.New(int64(i+1), loggen.Options{}).WriteLines(w, loggen.DockerJSON, lines/nodes)
		if err == nil {
			err = w.Flush()
		}
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
		size += n
		paths = append(paths, path)
	}
	lines = lines / nodes * nodes
	files, err := receivertest.ReadDir(logs, "/var/log/bench")
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("input: %d lines in %d files, %d bytes (%.0f bytes/line), requests of %d lines", lines, nodes, size, float64(size)/float64(lines), batch)
	perNode := func(enc func([]receivertest.File) [][]byte) [][][]byte {
		var out [][][]byte
		for _, f := range files {
			out = append(out, enc([]receivertest.File{f}))
		}
		return out
	}
	kinds := []struct {
		name, path, contentType string
		bodies                  [][][]byte
	}{
		{"otlp-proto", receiver.OTLPPath, "application/x-protobuf",
			perNode(func(f []receivertest.File) [][]byte { return receivertest.OTLPBodies(f, "bench", batch, false) })},
		{"otlp-json", receiver.OTLPPath, "application/json",
			perNode(func(f []receivertest.File) [][]byte { return receivertest.OTLPBodies(f, "bench", batch, true) })},
		{"loki-proto", receiver.LokiPath, "application/x-protobuf",
			perNode(func(f []receivertest.File) [][]byte { return receivertest.LokiRequests(f, "bench", batch) })},
		{"loki-json", receiver.LokiPath, "application/json",
			perNode(func(f []receivertest.File) [][]byte { return receivertest.LokiJSONRequests(f, "bench", batch) })},
	}
	shipper := shipperBinary(b, dir)
	for i := 0; i < b.N; i++ {
		var rows []benchRow
		rows = append(rows, benchShipper(b, shipper, paths, size, lines, dir))
		for _, k := range kinds {
			rows = append(rows, benchReceiver(b, k.name, k.path, k.contentType, k.bodies, lines))
		}
		table := fmt.Sprintf("%-11s %8s %10s %14s %12s %9s %12s", "path", "seconds", "lines/s", "CPU-s/million", "peak RSS MB", "records", "sent B/line")
		for _, r := range rows {
			table += "\n" + r.String()
			// The receivers got the same requests: the same records. The
			// shipper's joins differ a little, within 1%: a multi-line
			// record split by a request boundary is two records, and the
			// receivers join by the lines' written times as a shipper
			// tailing live would (loggen's are up to seconds apart), the
			// shipper by when it reads a backlog, all at once.
			if r.name != "shipper" && r.records != rows[1].records {
				b.Errorf("%s: %d records in the stream, %s's %d", r.name, r.records, rows[1].name, rows[1].records)
			}
			if d := r.records - rows[0].records; d > rows[0].records/100 || -d > rows[0].records/100 {
				b.Errorf("%s: %d records in the stream, the shipper's %d", r.name, r.records, rows[0].records)
			}
		}
		b.Logf("\n%s", table)
		for _, r := range rows {
			b.ReportMetric(r.rate, r.name+"-lines/s")
			b.ReportMetric(r.cpuPerM, r.name+"-CPU-s/M")
		}
	}
}

type benchRow struct {
	name                      string
	secs, rate, cpuPerM, rssM float64
	records                   int
	sentPerLine               float64
}

func (r benchRow) String() string {
	return fmt.Sprintf("%-11s %8.2f %10.0f %14.2f %12.1f %9d %12.0f", r.name, r.secs, r.rate, r.cpuPerM, r.rssM, r.records, r.sentPerLine)
}

// peakRSS is VmHWM of /proc/PID/status in MB (0 where there is none).
func peakRSS(pid int) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	return 0
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// shipperBinary is FAULTLINE_SHIPPER_BIN, else the shipper built from this
// tree.
func shipperBinary(b *testing.B, dir string) string {
	if p := os.Getenv("FAULTLINE_SHIPPER_BIN"); p != "" {
		return p
	}
	bin := filepath.Join(dir, "shipper")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/faultline/faultline/cmd/shipper").CombinedOutput(); err != nil {
		b.Fatalf("go build shipper: %v\n%s", err, out)
	}
	return bin
}

// measured runs cmd (GOMAXPROCS=1) until wait returns, then stops it
// (stop, which returns at once; it exits by itself then) and gives its
// figures.
func measured(b *testing.B, name string, cmd *exec.Cmd, lines int, wait, stop func()) benchRow {
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = append(cmd.Env, "GOMAXPROCS=1")
	cmd.Stderr = os.Stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	wait()
	elapsed := time.Since(start)
	// The peak RSS of the process's own memory: wait4's ru_maxrss counts
	// the parent's pages the child shared before exec (this process holds
	// the encoded requests).
	hwm := peakRSS(cmd.Process.Pid)
	stop()
	cmd.Wait()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	return benchRow{name: name, secs: elapsed.Seconds(), rate: float64(lines) / elapsed.Seconds(),
		cpuPerM: cpu / (float64(lines) / 1e6), rssM: hwm}
}

func benchShipper(b *testing.B, bin string, paths []string, size int64, lines int, dir string) benchRow {
	s := testutil.RunJetStreamServer(b)
	state := filepath.Join(dir, "shipper-state")
	os.RemoveAll(state)
	args := []string{"--nats", s.ClientURL(), "--node", "bench", "--cluster", "bench", "--state-dir", state, "--log-level", "warn"}
	for _, p := range paths {
		args = append(args, "--path", p)
	}
	cmd := exec.Command(bin, args...)
	row := measured(b, "shipper", cmd, lines, func() {
		// Done when every file's acknowledged offset is its size.
		for deadline := time.Now().Add(10 * time.Minute); savedOffsets(state) < size; {
			if time.Now().After(deadline) {
				b.Fatal("the shipper did not ship the files in 10 minutes")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}, func() { cmd.Process.Signal(syscall.SIGTERM) })
	row.records = streamRecords(b, s.ClientURL())
	row.sentPerLine = float64(size) / float64(lines)
	return row
}

// savedOffsets is the sum of the shipper's saved offsets.
func savedOffsets(state string) int64 {
	data, err := os.ReadFile(filepath.Join(state, "offsets.json"))
	if err != nil {
		return 0
	}
	var doc struct {
		Files map[string]struct{ Offset int64 } `json:"files"`
	}
	json.Unmarshal(data, &doc)
	var n int64
	for _, e := range doc.Files {
		n += e.Offset
	}
	return n
}

func benchReceiver(b *testing.B, name, path, contentType string, bodies [][][]byte, lines int) benchRow {
	s := testutil.RunJetStreamServer(b)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestReceiverProcess$")
	cmd.Env = append(os.Environ(), "FAULTLINE_RECEIVER_NATS="+s.ClientURL())
	if file := os.Getenv("FAULTLINE_RECEIVER_CPUPROFILE"); file != "" {
		cmd.Env = append(cmd.Env, "FAULTLINE_RECEIVER_CPUPROFILE="+file+"."+name) // one profile per receiver
	}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var sent int64
	row := measured(b, name, cmd, lines, func() {
		sc := bufio.NewScanner(stdout)
		addr := ""
		for sc.Scan() {
			if a, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				addr = a
				break
			}
		}
		if addr == "" {
			b.Fatal("the receiver process did not start")
		}
		go io.Copy(io.Discard, stdout)
		url := "http://" + addr + path
		var wg sync.WaitGroup
		var mu sync.Mutex
		var first error
		for _, node := range bodies {
			wg.Go(func() {
				for _, body := range node {
					if err := post(url, contentType, body); err != nil {
						mu.Lock()
						first = cmpErr(first, err)
						mu.Unlock()
						return
					}
					mu.Lock()
					sent += int64(len(body))
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if first != nil {
			b.Fatal(first)
		}
	}, func() { stdin.Close() })
	row.records = streamRecords(b, s.ClientURL())
	row.sentPerLine = float64(sent) / float64(lines)
	return row
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// post sends one body as a client does: again after 429 and 503.
func post(url, contentType string, body []byte) error {
	for attempt := 0; ; attempt++ {
		resp, err := http.Post(url, contentType, bytes.NewReader(body))
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			return nil
		case (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && attempt < 100:
			time.Sleep(100 * time.Millisecond)
		default:
			return fmt.Errorf("POST %s: %s", url, resp.Status)
		}
	}
}

// streamRecords counts the records in the log stream (each message's
// record count header).
func streamRecords(b *testing.B, url string) int {
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := js.Stream(ctx, transport.StreamName)
	if err != nil {
		b.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{HeadersOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	total := 0
	for seq := uint64(0); seq < info.State.LastSeq; {
		m, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			b.Fatal(err)
		}
		n, _ := strconv.Atoi(m.Headers().Get(transport.HeaderCount))
		total += n
		md, _ := m.Metadata()
		seq = md.Sequence.Stream
	}
	return total
}

// TestReceiverProcess is BenchmarkReceivers' receiver process, not a test:
// with FAULTLINE_RECEIVER_NATS set it serves the receivers on a free port
// of 127.0.0.1, publishing to that NATS server, says "listening ADDR" on
// stdout and exits when stdin closes.
func TestReceiverProcess(t *testing.T) {
	url := os.Getenv("FAULTLINE_RECEIVER_NATS")
	if url == "" {
		t.Skip("BenchmarkReceivers' receiver process (runs only as its child)")
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, _, err := transport.EnsureStream(t.Context(), nc, js, transport.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	pub, err := transport.NewPublisher(nc, transport.PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := receiver.New(pub, receiver.Options{})
	mux := http.NewServeMux()
	mux.Handle("POST "+receiver.OTLPPath, r.OTLP())
	mux.Handle("POST "+receiver.LokiPath, r.Loki())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go http.Serve(ln, mux)
	// FAULTLINE_RECEIVER_CPUPROFILE=FILE: where this process's CPU goes
	// (BenchmarkReceivers writes FILE.otlp-proto and so on).
	if file := os.Getenv("FAULTLINE_RECEIVER_CPUPROFILE"); file != "" {
		f, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	fmt.Printf("listening %s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin)
}
