package server

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/natstest"
	"github.com/faultline/faultline/internal/testutil"
)

// TestClusterKillAndFreeze is issue 13's acceptance with real processes:
// three analyzers share six partitions on a three-server NATS cluster; mid
// stream one is killed with SIGKILL and, later, another frozen with
// SIGSTOP (and thawed after its partitions moved); at the end the killed
// one restarts on its data dir. Every record is found once by a search on
// any live analyzer, every version of every finding is announced once (so
// IDs did not change across the replays), and the partitions are owned
// again within 10 s each time.
// FAULTLINE_CLUSTER_RECORDS sets the stream's size (default 60,000; the
// issue's figure is 500,000).
func TestClusterKillAndFreeze(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three analyzer processes")
	}
	total := 60000
	if v := os.Getenv("FAULTLINE_CLUSTER_RECORDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("FAULTLINE_CLUSTER_RECORDS=%q: %v", v, err)
		}
		total = n
	}
	bin := buildBin(t, "analyzer")
	c := natstest.StartCluster(t, 3)
	fl := logFindings(t, c.URLs())
	const parts = 6
	var procs []*proc
	var https []string
	var args [][]string
	for i := range 3 {
		h := freePort(t)
		https = append(https, h)
		args = append(args, []string{"--nats", c.URLs(), "--partitions", strconv.Itoa(parts),
			"--member", "a" + strconv.Itoa(i), "--http", h, "--data-dir", t.TempDir(), "--log-level", "warn",
			// The test pages through every record while they are indexed.
			"--search-timeout", "60s"})
		procs = append(procs, startAnalyzer(t, bin, args[i]...))
	}
	owned := func(members ...int) error {
		n := 0
		for _, i := range members {
			k := ownedOf(t, https[i])
			if k < 0 {
				return fmt.Errorf("analyzer %d does not answer", i)
			}
			n += k
		}
		if n != parts {
			var dbg []string
			for _, i := range members {
				resp, err := http.Get("http://" + https[i] + "/metrics")
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					for _, l := range strings.Split(string(b), "\n") {
						if strings.HasPrefix(l, "faultline_partition") {
							dbg = append(dbg, l)
						}
					}
				}
			}
			return fmt.Errorf("%d of %d partitions owned by analyzers %v: %v", n, parts, members, dbg)
		}
		return nil
	}
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error { return owned(0, 1, 2) })

	nc := connectRetrying(t, c.URLs())
	js, _ := jetstream.New(nc)
	clusters := []string{"c1", "c2", "c3", "c4", "c5", "c6"}
	stories := len(clusterInput(t, clusters, 0))
	recs := clusterInput(t, clusters, max(total-stories, 0))
	third := len(recs) / 3
	start := time.Now()
	publishRecords(t, js, recs[:third], 500)

	procs[0].cmd.Process.Signal(syscall.SIGKILL)
	procs[0].cmd.Wait()
	killed := time.Now()
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error { return owned(1, 2) })
	t.Logf("SIGKILL: partitions owned again in %v", time.Since(killed).Round(time.Millisecond))
	publishRecords(t, js, recs[third:2*third], 500)

	procs[1].cmd.Process.Signal(syscall.SIGSTOP)
	frozen := time.Now()
	t.Logf("SIGSTOP at %s", frozen.UTC().Format("15:04:05.000"))
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error { return owned(2) })
	t.Logf("SIGSTOP: partitions owned again in %v", time.Since(frozen).Round(time.Millisecond))
	publishRecords(t, js, recs[2*third:], 500)

	// The one left indexes everything; then the frozen one wakes, finds
	// its leases gone, and takes some partitions back.
	within := 60*time.Second + time.Duration(len(recs))*time.Second/2000
	wantSearchable(t, https[2], recs, within)
	t.Logf("%d records indexed and searchable once, %v after the first publish", len(recs), time.Since(start).Round(time.Second))
	procs[1].cmd.Process.Signal(syscall.SIGCONT)
	testutil.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		if err := owned(1, 2); err != nil {
			return err
		}
		if ownedOf(t, https[1]) == 0 {
			return fmt.Errorf("the thawed analyzer took no partition back")
		}
		return nil
	})

	// Every analyzer merges the same members' parts: a count on the
	// others, the full paging once more after the restart below.
	for _, h := range https[1:] {
		wantTotal(t, h, len(recs), within)
	}

	// The killed one comes back on its data dir: it takes its share again,
	// indexes what it missed, and announces nothing anew.
	startAnalyzer(t, bin, args[0]...)
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		if err := owned(0, 1, 2); err != nil {
			return err
		}
		if ownedOf(t, https[0]) == 0 {
			return fmt.Errorf("the restarted analyzer took no partition back")
		}
		return nil
	})
	wantSearchable(t, https[0], recs, within)
	for _, h := range https[1:] {
		wantTotal(t, h, len(recs), within)
	}

	want := verdicts(diagnose(t))
	wantClusterFindings(t, https[2], clusters, want)
	if announced := fl.check(t); len(announced) != len(clusters)*len(want) {
		t.Errorf("%d findings announced, want %d", len(announced), len(clusters)*len(want))
	}
}
