package index

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
)

// TestDiskFullStallsAndResumes: an index on a file system that fills up
// while events keep coming stalls its writes instead of dying (Bleve's zap
// panicked with "assignment to entry in nil map" a moment after the first
// failed batch), says why in Health and Stats, logs it once, and when space
// returns resumes by itself with every event indexed, none twice, after a
// reopen too. With the free-space reserve (writes wait before Bleve could
// meet a full disk) and without it (Bleve's batches fail, and the shard is
// reopened and indexed again from the chunk store).
func TestDiskFullStallsAndResumes(t *testing.T) {
	for _, c := range []struct {
		name    string
		reserve int64
	}{{"reserve", 4 << 20}, {"no reserve", -1}} {
		t.Run(c.name, func(t *testing.T) {
			disk := testutil.SmallDisk(t, filepath.Join(t.TempDir(), "fs"), 48<<20)
			var logs testutil.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			dir := filepath.Join(disk.Dir, "data")
			x, err := Open(dir, Options{Shards: 2, Safe: true, FlushInterval: 20 * time.Millisecond, BatchSize: 2000,
				DiskReserve: c.reserve, Logger: log})
			if err != nil {
				t.Fatal(err)
			}
			var evs []*parsers.Event
			genEvents(17, 120000, nil, func(e *parsers.Event) { evs = append(evs, e) })
			disk.Fill(t, 6<<20)

			var wg sync.WaitGroup
			wg.Go(func() {
				for _, e := range evs {
					if err := x.Add(e); err != nil {
						t.Error(err)
						return
					}
				}
				if err := x.Flush(context.Background()); err != nil {
					t.Errorf("flush after space returned: %v", err)
				}
			})
			testutil.CheckFor(t, 60*time.Second, 20*time.Millisecond, func() error {
				if x.Stats().Stalled == "" {
					return errors.New("writes not stalled yet")
				}
				return nil
			})
			herr := x.Health()
			if herr == nil || !strings.Contains(herr.Error(), "stalled") ||
				!(strings.Contains(herr.Error(), "disk full") || strings.Contains(herr.Error(), "no space")) {
				t.Errorf("health while the disk is full: %v", herr)
			}
			time.Sleep(500 * time.Millisecond) // retries go on meanwhile
			if n := strings.Count(logs.String(), "index writes are failing"); n != 1 {
				t.Errorf("the stall logged %d times, want once:\n%s", n, logs.String())
			}
			if c.reserve < 0 {
				t.Logf("failures: %d in the chunk store, %d in Bleve", strings.Count(logs.String(), "chunk store: write"), strings.Count(logs.String(), "batch of"))
			}
			disk.Free(t)
			wg.Wait()
			if err := x.Health(); err != nil {
				t.Errorf("health after space returned: %v", err)
			}
			if !strings.Contains(logs.String(), "index writes resumed") {
				t.Errorf("no resume logged:\n%s", logs.String())
			}
			check := func(x *Index) {
				t.Helper()
				if n, _ := x.DocCount(); n != uint64(len(evs)) {
					t.Errorf("%d events indexed of %d", n, len(evs))
				}
				res, err := x.Search(context.Background(), Query{Size: -1, Facets: true})
				if err != nil || res.Total != uint64(len(evs)) {
					t.Errorf("search: %d hits, err %v", res.Total, err)
				}
				// Terms too, not only the catalog: every event has a level
				// word or a source-specific one; count the messages' terms.
				res, err = x.Search(context.Background(), Query{Text: "RayWorkerWrapper OR NCCL OR throughput OR RayActorError", Size: -1})
				want := 0
				for _, e := range evs {
					if strings.Contains(e.Message, "RayWorkerWrapper") || strings.Contains(e.Message, "NCCL") ||
						strings.Contains(e.Message, "throughput") || strings.Contains(e.Message, "RayActorError") {
						want++
					}
				}
				if err != nil || res.Total != uint64(want) {
					t.Errorf("term search: %d hits, want %d (err %v)", res.Total, want, err)
				}
			}
			check(x)
			if err := x.Close(); err != nil {
				t.Fatal(err)
			}
			y, err := Open(dir, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer y.Close()
			check(y)
		})
	}
}

// TestFindingsDiskFull (issue 27: the findings store on a full disk): a put
// that meets a full disk fails and stalls (logged once, said by Health),
// leaves nothing torn behind, and once space returns the retried put and the
// next ones succeed without a restart; every version written is read back at
// the next open. Before, the cut-short line stayed in the log, the next put
// was appended to it, and both were skipped as one unreadable line at open:
// the version put after space returned was lost.
func TestFindingsDiskFull(t *testing.T) {
	disk := testutil.SmallDisk(t, filepath.Join(t.TempDir(), "fs"), 16<<20)
	var logs testutil.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := filepath.Join(disk.Dir, "data")
	x, err := Open(dir, Options{Shards: 1, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	version := func(id string, rev int, size int) finding.Finding {
		return finding.Finding{ID: id, Rule: "r", Cause: "c", Severity: finding.Critical, Revision: rev,
			Title: id, Summary: strings.Repeat("s", size), Status: finding.Active}
	}
	if err := x.PutFindings([]finding.Finding{version("a", 1, 100)}); err != nil {
		t.Fatal(err)
	}
	disk.Fill(t, 0)
	// Bigger than what is left of the log's last page: the write starts,
	// then meets the full disk.
	big := version("a", 2, 64<<10)
	if err := x.PutFindings([]finding.Finding{big}); err == nil {
		t.Fatal("a put on a full disk succeeded")
	}
	if err := x.PutFindings([]finding.Finding{big}); err == nil {
		t.Fatal("the retried put on a full disk succeeded")
	}
	if h := x.Health(); h == nil || !strings.Contains(h.Error(), "findings") {
		t.Errorf("health while findings cannot be written: %v", h)
	}
	if n := strings.Count(logs.String(), "index writes are failing"); n != 1 {
		t.Errorf("the stall logged %d times, want once:\n%s", n, logs.String())
	}
	disk.Free(t)
	if err := x.PutFindings([]finding.Finding{big}); err != nil {
		t.Fatalf("the put after space returned: %v", err)
	}
	if err := x.PutFindings([]finding.Finding{version("b", 1, 100)}); err != nil {
		t.Fatal(err)
	}
	if h := x.Health(); h != nil {
		t.Errorf("health after space returned: %v", h)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	var logs2 testutil.Buffer
	x, err = Open(dir, Options{Shards: 1, Logger: slog.New(slog.NewTextHandler(&logs2, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	got := map[string]int{}
	for _, f := range x.Findings() {
		got[f.ID] = f.Revision
	}
	if got["a"] != 2 || got["b"] != 1 || len(got) != 2 {
		t.Errorf("findings at the next open: %v, want a at revision 2 and b", got)
	}
	if strings.Contains(logs2.String(), "skipped") || strings.Contains(logs2.String(), "dropped") {
		t.Errorf("the log had a torn line:\n%s", logs2.String())
	}
}
