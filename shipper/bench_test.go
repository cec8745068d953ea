package shipper_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/loggen"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/transport"
)

// BenchmarkShipper is the benchmark: a 2-million-line json-file log
// (loggen, ~180 bytes a line) shipped into a local JetStream server (file
// store, in this test process) until every batch is acknowledged, by the
// real shipper binary as a separate process, whose CPU time and peak RSS
// come from the kernel (wait4 rusage). The floor, measured in the same run,
// is a separate process too (this test binary in floor mode) that only
// reads, decodes (parsers.Decoder) and publishes the lines with the same
// async window: no joining, no records, no offsets.
//
//	go test ./shipper -run '^$' -bench Shipper -benchtime 1x
//	FAULTLINE_BENCH_LINES=200000 go test ... (smaller run)
func BenchmarkShipper(b *testing.B) {
	lines := 2_000_000
	if v, err := strconv.Atoi(os.Getenv("FAULTLINE_BENCH_LINES")); err == nil && v > 0 {
		lines = v
	}
	dir := b.TempDir()
	log := filepath.Join(dir, "bench-json.log")
	f, err := os.Create(log)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	size, err := loggen.New(1, loggen.Options{}).WriteLines(w, loggen.DockerJSON, lines)
	if err == nil {
		err = w.Flush()
	}
	f.Close()
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("input: %d lines, %d bytes (%.0f bytes/line)", lines, size, float64(size)/float64(lines))

	// FAULTLINE_SHIPPER_BASE=path also runs that binary (a build of an
	// earlier commit) in each round, before this tree's, so that a change
	// is measured against its base in the same run on the same machine.
	base := os.Getenv("FAULTLINE_SHIPPER_BASE")
	var sum, baseSum result
	for i := 0; i < b.N; i++ {
		floor := runMeasured(b, "floor", exec.Command(os.Args[0], "-test.run", "^TestFloorProcess$"), func(s *serverHandle) {}, log, dir, lines, true)
		rows := []result{floor}
		if base != "" {
			r := runMeasured(b, "base", exec.Command(base), nil, log, dir, lines, false)
			baseSum.add(r)
			rows = append(rows, r)
		}
		ship := runMeasured(b, "shipper", nil, nil, log, dir, lines, false)
		sum.add(ship)
		rows = append(rows, ship)
		table := fmt.Sprintf("%-8s %10s %12s %14s %12s", "run", "seconds", "lines/s", "CPU-s/million", "peak RSS MB")
		for _, r := range rows {
			table += "\n" + r.String()
		}
		b.Logf("\n%s", table)
		b.ReportMetric(floor.rate, "floor-records/s")
		b.ReportMetric(floor.cpuPerM, "floor-CPU-s/Mrec")
	}
	n := float64(b.N)
	b.ReportMetric(sum.rate/n, "records/s")
	b.ReportMetric(sum.cpuPerM/n, "CPU-s/Mrec")
	b.ReportMetric(sum.rssMB/n, "peakRSS-MB")
	b.ReportMetric(sum.storedRatio/n, "stored/raw")
	if base != "" {
		b.ReportMetric(baseSum.rate/n, "base-records/s")
		b.ReportMetric(baseSum.cpuPerM/n, "base-CPU-s/Mrec")
		b.ReportMetric(baseSum.rssMB/n, "base-peakRSS-MB")
	}
}

func (r *result) add(o result) {
	r.rate += o.rate
	r.cpuPerM += o.cpuPerM
	r.rssMB += o.rssMB
	r.storedRatio += o.storedRatio
}

type serverHandle struct{ url string }

type result struct {
	name                string
	secs, rate, cpuPerM float64
	rssMB               float64
	storedRatio         float64 // bytes stored in JetStream / raw log bytes (shipper run only)
}

func (r result) String() string {
	return fmt.Sprintf("%-8s %10.2f %12.0f %14.2f %12.1f", r.name, r.secs, r.rate, r.cpuPerM, r.rssMB)
}

// runMeasured runs one process against a fresh JetStream server until the
// whole file is acknowledged and returns its figures.
func runMeasured(b *testing.B, name string, cmd *exec.Cmd, _ func(*serverHandle), log, dir string, lines int, floor bool) result {
	s := testutil.RunJetStreamServer(b)
	state := filepath.Join(dir, name+"-state")
	os.RemoveAll(state) // each round from the start
	if cmd == nil || !floor {
		bin := shipperBin(b)
		if cmd != nil {
			bin = cmd.Path
		}
		cmd = exec.Command(bin, "--nats", s.ClientURL(), "--node", "bench", "--cluster", "bench",
			"--path", log, "--state-dir", state, "--log-level", "warn")
	}
	cmd.Env = append(os.Environ(), "FLOOR_FILE="+log, "FLOOR_URL="+s.ClientURL())
	cmd.Stderr = os.Stderr
	if floor {
		cmd.Stdout = os.Stderr
	}
	fi, _ := os.Stat(log)
	var ru0 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	if !floor {
		// Done when the acknowledged offset saved for the file is its size.
		for {
			if off := savedOffset(state); off >= fi.Size() {
				break
			}
			select {
			case <-done:
				b.Fatalf("shipper exited early")
			case <-time.After(20 * time.Millisecond):
			}
		}
		cmd.Process.Signal(syscall.SIGTERM)
	}
	<-done
	elapsed := time.Since(start)
	// The NATS server runs in this process: its CPU competes for the
	// same two cores (so does anything else running on the machine).
	var ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	b.Logf("%s: CPU of the process, user %.2fs sys %.2fs; of the NATS server (this process) user %.2fs sys %.2fs", name,
		time.Duration(cmd.ProcessState.SysUsage().(*syscall.Rusage).Utime.Nano()).Seconds(), time.Duration(cmd.ProcessState.SysUsage().(*syscall.Rusage).Stime.Nano()).Seconds(),
		time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()).Seconds(), time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano()).Seconds())
	if !cmd.ProcessState.Success() && floor {
		b.Fatalf("%s failed: %v", name, cmd.ProcessState)
	}
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	if !floor {
		// Records in the stream, for the record count of the rate.
		// Lines joined into multi-line records make fewer records than
		// lines; rates are per input line, as Fluent Bit's figure is.
		n, stored := streamRecordCount(b, s.ClientURL())
		b.Logf("%s: %d lines became %d records in the stream", name, lines, n)
		b.Logf("%s: the stream stores %d bytes for %d raw log bytes: %.3fx", name, stored, fi.Size(), float64(stored)/float64(fi.Size()))
		res := result{name: name, secs: elapsed.Seconds(), rate: float64(lines) / elapsed.Seconds(),
			cpuPerM: cpu / (float64(lines) / 1e6), rssMB: float64(ru.Maxrss) / 1024}
		res.storedRatio = float64(stored) / float64(fi.Size())
		return res
	}
	return result{name: name, secs: elapsed.Seconds(), rate: float64(lines) / elapsed.Seconds(),
		cpuPerM: cpu / (float64(lines) / 1e6), rssMB: float64(ru.Maxrss) / 1024}
}

func savedOffset(state string) int64 {
	b, err := os.ReadFile(filepath.Join(state, "offsets.json"))
	if err != nil {
		return 0
	}
	var doc struct {
		Files map[string]struct{ Offset int64 } `json:"files"`
	}
	json.Unmarshal(b, &doc)
	for _, e := range doc.Files {
		return e.Offset
	}
	return 0
}

// streamRecordCount sums Faultline-Count over the stream's messages; it
// also returns the bytes the stream stores (JetStream's own count: bodies,
// headers, subjects and per-message overhead).
func streamRecordCount(b *testing.B, url string) (int, uint64) {
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, transport.StreamName)
	if err != nil {
		b.Fatal(err)
	}
	info, _ := s.Info(ctx)
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{HeadersOnly: true})
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
	return total, info.State.Bytes
}

// TestFloorProcess is the floor of the benchmark when run as a child process
// (FLOOR_FILE set): read lines, decode the json-file framing, publish them
// as NDJSON-ish batches of the same size with the same async window, wait
// for every ack. Without FLOOR_FILE it does nothing.
func TestFloorProcess(t *testing.T) {
	path := os.Getenv("FLOOR_FILE")
	if path == "" {
		t.Skip("benchmark helper: runs only as BenchmarkShipper's child")
	}
	nc, err := nats.Connect(os.Getenv("FLOOR_URL"))
	if err != nil {
		t.Fatal(err)
	}
	js, _ := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(16))
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: transport.StreamName, Subjects: []string{transport.StreamSubjects},
		Storage: jetstream.FileStorage}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	dec := parsers.NewDecoder(parsers.FormatDockerJSON)
	body := make([]byte, 0, 256<<10)
	var off int64
	n := 0
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			n++
			l, ok, _ := dec.Decode(line, off, int64(len(line)), n)
			off += int64(len(line))
			if ok {
				body = append(body, l.Text...)
				body = append(body, '\n')
			}
			if len(body) >= 256<<10 {
				if _, err := js.PublishAsync("faultline.logs.floor.bench", body, jetstream.WithStallWait(time.Minute)); err != nil {
					t.Fatal(err)
				}
				body = make([]byte, 0, 256<<10)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(body) > 0 {
		js.PublishAsync("faultline.logs.floor.bench", body)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(time.Minute):
		t.Fatal("floor: acks not complete")
	}
	nc.Close()
}
