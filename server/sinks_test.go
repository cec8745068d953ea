package server

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/sink"
)

// Every sink of serve gets every finding of the seed: the store
// (/api/findings), NATS, the web UI's live stream (SSE), a sink the caller
// added (Config.Sinks, a JSON-lines writer) and the terminal, which shows
// each finding in full once.
func TestLiveSinksGetEveryFinding(t *testing.T) {
	var jsonl testutil.Buffer
	srv := startServer(t, Config{Sinks: []sink.Sink{sink.NewJSON(&jsonl, nil)}})
	sub := subscribeFindings(t, srv.addrs.NATS)

	// The live stream, read from before the records are published.
	resp, err := http.Get("http://" + srv.addrs.HTTP + "/api/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sseMu sync.Mutex
	sse := map[string]bool{}
	go func() {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		inFinding := false
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "event: finding":
				inFinding = true
			case inFinding && strings.HasPrefix(line, "data: "):
				var f finding.Finding
				if json.Unmarshal([]byte(line[len("data: "):]), &f) == nil {
					sseMu.Lock()
					sse[f.ID] = true
					sseMu.Unlock()
				}
				inFinding = false
			}
		}
	}()

	nc, err := nats.Connect(srv.addrs.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	publishRecords(t, js, seedRecords(t), 50)

	var want []string
	for _, f := range diagnose(t) {
		want = append(want, f.ID)
	}
	slices.Sort(want)
	idsOf := func(fs []finding.Finding) []string {
		set := map[string]bool{}
		for _, f := range fs {
			set[f.ID] = true
		}
		var out []string
		for id := range set {
			out = append(out, id)
		}
		slices.Sort(out)
		return out
	}
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		var lines []finding.Finding
		for _, l := range strings.Split(strings.TrimSpace(jsonl.String()), "\n") {
			var f finding.Finding
			if json.Unmarshal([]byte(l), &f) == nil {
				lines = append(lines, f)
			}
		}
		sseMu.Lock()
		var live []finding.Finding
		for id := range sse {
			live = append(live, finding.Finding{ID: id})
		}
		sseMu.Unlock()
		sub.mu.Lock()
		published := slices.Clone(sub.got)
		sub.mu.Unlock()
		for name, got := range map[string][]string{
			"store": idsOf(getFindings(t, srv.addrs.HTTP)), "nats": idsOf(published),
			"sse": idsOf(live), "Config.Sinks": idsOf(lines),
		} {
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s has %v, want %v", name, got, want)
			}
		}
		return nil
	})
	out := srv.stdout.String()
	for _, f := range diagnose(t) {
		if n := strings.Count(out, "] "+f.Rule+" — "); n != 1 {
			t.Errorf("terminal shows %s in full %d times, want once:\n%s", f.Rule, n, out)
		}
	}
}
