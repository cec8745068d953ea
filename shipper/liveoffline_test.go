package shipper_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
)

// TestLiveMatchesOffline is the acceptance test of one framer: files of
// testdata/logs are read offline (pipeline, as diagnose and ingest read them)
// and live (the shipper binary tailing the files while they are appended to,
// into an embedded JetStream, records decoded from the stream), and both give
// the same records: same IDs, text, labels and parsed fields, and a time for
// every record. The files hold a 1.5 MiB line (plain, and as json-file 16 KiB
// partials), a gzip rotation without ".gz" in its name, a traceback written
// line by line with pauses longer than the joiner's quiet time, a json-file
// log whose container is named by its file name, and timestampless NCCL lines.
//
// What may differ: the time of a record that has no time of its own and no
// earlier record of its process with one. Live it is when the shipper read
// it, offline the file's modification time; both are "when it was read".
func TestLiveMatchesOffline(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	node := filepath.Join(dir, "spark-1")
	if err := os.Mkdir(node, 0o755); err != nil {
		t.Fatal(err)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join("..", "testdata", "logs", p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	jsonLog := filepath.Join(node, "vllm-qwen35-json.log")
	plainLog := filepath.Join(node, "worker.log")
	rotated := plainLog + ".1" // gzip, without ".gz"

	seed := strings.SplitAfter(read("seed/failed/spark-1/vllm-qwen35-json.log"), "\n")
	half := len(seed) / 2
	writeFile(t, jsonLog, strings.Join(seed[:half], ""))
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write([]byte(read("real/62-vllm-ray-tp4-allreduce-watchdog-seq31-remote-worker/vllm.log")))
	zw.Close()
	writeFile(t, rotated, z.String())
	// The NCCL lines have no time: the first takes the time of its process's
	// previous record (the INFO line before it).
	writeFile(t, plainLog, "(RayWorkerWrapper pid=336, ip=192.168.0.83) INFO 02-02 18:00:00 worker.py:1] starting NCCL\n"+
		read("real/75-healthy-vllm-ray-deepseek-r1-roce-gdr-16-ranks/worker-nccl-net.log"))

	startShipper(t, shipperArgs(s.ClientURL(), "spark-1", filepath.Join(dir, "state"), "--path", filepath.Join(node, "*"))...)

	// Appended while the shipper tails: the rest of the json-file log, a
	// 1.5 MiB line in 16 KiB partials, more of the plain log.
	appendFile(t, jsonLog, strings.Join(seed[half:], ""))
	long := strings.Repeat("0123456789abcdef", 3<<15) // 1.5 MiB
	var partials strings.Builder
	for i := 0; i < len(long); i += 16 << 10 {
		piece := long[i:min(i+16<<10, len(long))]
		if i+16<<10 >= len(long) {
			piece += "\n"
		}
		rec, _ := json.Marshal(map[string]string{"log": piece, "stream": "stdout", "time": "2026-04-08T22:50:00.000000001Z"})
		partials.Write(rec)
		partials.WriteByte('\n')
	}
	appendFile(t, jsonLog, partials.String())
	appendFile(t, plainLog, read("real/29-healthy-vllm-tp2-single-node-nccl-socket/vllm.log"))
	// The plain 1.5 MiB line comes in three writes: the shipper sees it
	// without its newline first.
	for i := 0; i < 3; i++ {
		piece := long[i*len(long)/3 : (i+1)*len(long)/3]
		if i == 2 {
			piece += "\n"
		}
		appendFile(t, plainLog, piece)
		time.Sleep(100 * time.Millisecond) // a pause between writes is what is tested
	}
	// A traceback written line by line, each pause three times the
	// shipper's 50 ms quiet time (--flush-timeout).
	for _, l := range []string{
		"ERROR 02-02 18:02:00 engine.py:135] Engine crashed",
		"Traceback (most recent call last):",
		`  File "/usr/lib/python3/dist-packages/vllm/engine.py", line 120, in run`,
		"    self.step()",
		`  File "/usr/lib/python3/dist-packages/vllm/worker.py", line 77, in step`,
		"    raise RuntimeError(\"NCCL error\")",
		"RuntimeError: NCCL error: unhandled system error",
		"INFO 02-02 18:02:01 launcher.py:10] Shutting down",
	} {
		appendFile(t, plainLog, l+"\n")
		time.Sleep(150 * time.Millisecond) // the pause is what is tested
	}

	// Offline: the same files, as diagnose reads them.
	files := []pipeline.File{}
	for _, p := range []string{jsonLog, plainLog, rotated} {
		files = append(files, pipeline.File{Path: p, Node: "spark-1", Container: parsers.ContainerOf(p)})
	}
	mtimes := map[string]time.Time{}
	for _, f := range files {
		fi, err := os.Stat(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		mtimes[f.Path] = fi.ModTime().UTC()
	}
	var offline []parsers.Event
	if _, err := pipeline.ReplayFiles(context.Background(), files, pipeline.Options{Cluster: "dgx"}, func(ev *parsers.Event) error {
		offline = append(offline, *ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	var live *contents
	testutil.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		live = readStream(t, s.ClientURL())
		if live.distinct() < len(offline) {
			return fmt.Errorf("%d records live, %d offline", live.distinct(), len(offline))
		}
		return nil
	})
	if live.distinct() != len(offline) || live.dups() != 0 {
		t.Errorf("%d distinct records live (%d duplicates), %d offline", live.distinct(), live.dups(), len(offline))
	}
	byID := map[string]parsers.Record{}
	for _, r := range live.records {
		byID[r.ID] = r
	}
	seen := map[string]bool{}
	for _, off := range offline {
		seen["file:"+filepath.Base(off.File)] = true
		rec, ok := byID[off.ID]
		if !ok {
			t.Errorf("offline record not shipped: %s:%d %.100q", off.File, off.Line, off.Text)
			continue
		}
		ev := parsers.Parse(rec) // as the analyzer does with what it consumes
		// The record as framed and joined: everything but the time.
		a, b := off.Record, ev.Record
		a.Time, b.Time = time.Time{}, time.Time{}
		if a != b {
			t.Errorf("record differs:\noffline %+v\nlive    %+v", short(a), short(b))
			continue
		}
		if ev.Source != off.Source || ev.Level != off.Level || ev.Component != off.Component || ev.PID != off.PID ||
			ev.Process != off.Process || ev.IP != off.IP || ev.Message != off.Message || !reflect.DeepEqual(ev.Fields, off.Fields) {
			t.Errorf("parsed fields differ for %s:%d:\noffline %s %s %s %v\nlive    %s %s %s %v", off.File, off.Line,
				off.Source, off.Level, off.Component, off.Fields, ev.Source, ev.Level, ev.Component, ev.Fields)
		}
		if ev.Time.IsZero() || off.Time.IsZero() {
			t.Errorf("no time: %s:%d %.80q (live %v, offline %v)", off.File, off.Line, off.Text, ev.Time, off.Time)
			continue
		}
		if !ev.Time.Equal(off.Time) {
			// Allowed only for a time that is the read time on both sides.
			if !off.Time.Equal(mtimes[off.File]) || ev.Time.Before(mtimes[off.File].Add(-time.Minute)) {
				t.Errorf("time differs for %s:%d %.80q: live %v, offline %v", off.File, off.Line, off.Text, ev.Time, off.Time)
			}
			seen["read-time"] = true
		}
		switch {
		case strings.Contains(off.Text, "…[truncated "):
			seen["truncated "+off.Container] = true
		case strings.HasPrefix(off.Text, "Traceback (most recent call last):\n  File \"/usr/lib/python3/dist-packages/vllm"),
			strings.HasPrefix(off.Text, "    self.step()"), strings.HasPrefix(off.Text, "RuntimeError: NCCL error"):
			if !strings.Contains(off.Text, "RuntimeError: NCCL error") {
				t.Errorf("traceback split: %q", off.Text)
			}
			seen["traceback"] = true
		case strings.Contains(off.Text, "NCCL INFO NCCL_IB_DISABLE"):
			if !off.Time.Equal(time.Date(off.Time.Year(), 2, 2, 18, 0, 0, 0, time.UTC)) {
				t.Errorf("NCCL line without a time did not take its process's last time: %v", off.Time)
			}
			seen["process time"] = true
		}
		if off.Container != "" {
			seen["container "+off.Container] = true
		}
	}
	for _, k := range []string{"file:worker.log", "file:worker.log.1", "file:vllm-qwen35-json.log", "truncated ",
		"truncated vllm-qwen35", "traceback", "process time", "container vllm-qwen35"} {
		if !seen[k] {
			t.Errorf("the test input did not cover %q", k)
		}
	}
}

// short prints a record with its text cut.
func short(r parsers.Record) string {
	text, n := r.Text, len(r.Text)
	if n > 120 {
		text = text[:60] + "…" + text[n-60:]
	}
	r.Text = ""
	return fmt.Sprintf("%+v text=%q (%d bytes)", r, text, n)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t *testing.T, path, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
}
