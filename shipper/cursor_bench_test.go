package shipper

import (
	"bufio"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/loggen"
)

// BenchmarkCursorLines is the shipper's per-line CPU without the network:
// read, frame, decode, join, encode the records of a loggen json-file (the
// input of BenchmarkShipper), with the safe point computed once per 256 KiB
// batch as closeBatch does, and the batch's entry appended to the sent log;
// the batch is then dropped instead of published.
// It reports CPU (not wall) time per line and per record: the machine is
// shared.
//
//	go test ./shipper -run '^$' -bench CursorLines -benchtime 3x
func BenchmarkCursorLines(b *testing.B) {
	const lines = 200000
	dir := b.TempDir()
	path := filepath.Join(dir, "bench-json.log")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if _, err := loggen.New(1, loggen.Options{}).WriteLines(w, loggen.DockerJSON, lines); err != nil {
		b.Fatal(err)
	}
	w.Flush()
	f.Close()
	store, err := OpenStore(filepath.Join(dir, "state"), nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Cluster: "bench", Node: "bench"}
	cfg.Defaults()
	sent, err := openSentLog(filepath.Join(dir, "state"), cfg.Log, cfg.Metrics, store.savedOnDisk)
	if err != nil {
		b.Fatal(err)
	}
	defer sent.Close()
	if os.Getenv("FAULTLINE_BENCH_NO_SENT_LOG") != "" {
		sent = nil // the cost of the sent log: this against the default
	}
	sh := &Shipper{cfg: cfg, log: cfg.Log, metrics: cfg.Metrics, store: store, sent: sent, pub: &Publisher{bodyCap: 960 << 10},
		subject: "x", softLimit: 1 << 62, hardLimit: 1 << 62}
	var cpu time.Duration
	records := 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fd, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		c0 := cpuTime()
		c, err := sh.newCursor(source{path: path, display: path}, fd)
		if err != nil {
			b.Fatal(err)
		}
		for {
			n, err := c.fill()
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				break
			}
			c.lines()
			if len(c.body) >= 256<<10 {
				sp, _ := c.safePoint()
				sh.sent.add(&sentBatch{fileID: c.fileID(), msgID: c.firstID, sentAt: c.started, end: sp, records: c.sentRecs})
				c.sentRecs = c.sentRecs[:0]
				records += c.count
				c.body, c.count = c.body[:0], 0
			}
		}
		c.drain() // finish without the publish
		records += c.count
		cpu += cpuTime() - c0
		fd.Close()
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(lines*b.N), "cpu-ns/line")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(records), "cpu-ns/record")
	b.ReportMetric(float64(records)/float64(b.N), "records")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
