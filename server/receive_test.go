package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/receivertest"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/receiver"
	"github.com/faultline/faultline/rule"
)

// comparable is what a finding must keep whichever way its logs came:
// rule, cause, severity, nodes, and each evidence line's node, file, time
// and text (and its line, where the client sent line numbers).
func comparable(fs []finding.Finding, lines bool) []string {
	var out []string
	for _, f := range fs {
		if f.Status != finding.Active {
			continue
		}
		var ev []string
		for _, e := range f.Evidence {
			s := fmt.Sprintf("%s %s %s %q", e.Node, e.File, e.Time.UTC().Format(time.RFC3339Nano), e.Text)
			if lines {
				s += fmt.Sprintf(":%d", e.Line)
			}
			ev = append(ev, s)
		}
		sort.Strings(ev)
		nodes := slices.Clone(f.Nodes)
		sort.Strings(nodes)
		out = append(out, fmt.Sprintf("%s|%s|%s|%v|%s", f.Rule, f.Cause, f.Severity, nodes, strings.Join(ev, "; ")))
	}
	sort.Strings(out)
	return out
}

func getAuthJSON(t testing.TB, url, token string, v any) error {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// TestReceiversFindTheSeedStory: the seed story sent to serve over OTLP
// (the OpenTelemetry SDK's exporter) and over Loki push (protobuf encoded
// by Loki's push package, and JSON), line by line as a collector sends a
// tailed file, gives the findings the shipper path gives (diagnose's: the
// same rules, causes, severities, nodes and evidence), behind the same
// token as the rest of HTTP.
func TestReceiversFindTheSeedStory(t *testing.T) {
	files, err := receivertest.ReadDir(seedDir, seedDir)
	if err != nil {
		t.Fatal(err)
	}
	want := diagnose(t)
	const token = "receiver-token"
	for _, c := range []struct {
		name string
		send func(ctx context.Context, base string) error
		line bool
	}{
		{"otlp", func(ctx context.Context, base string) error {
			return receivertest.SendOTLP(ctx, receivertest.OTLPOptions{URL: base + receiver.OTLPPath, Token: token, Cluster: rule.DefaultCluster, Batch: 100}, files)
		}, true},
		{"loki-protobuf", func(ctx context.Context, base string) error {
			for _, b := range receivertest.LokiRequests(files, rule.DefaultCluster, 100) {
				resp, err := receivertest.Post(ctx, base+receiver.LokiPath, token, "application/x-protobuf", b)
				if err != nil {
					return err
				}
				if resp.StatusCode != http.StatusNoContent {
					return fmt.Errorf("push: %s", resp.Status)
				}
			}
			return nil
		}, false},
		{"loki-json", func(ctx context.Context, base string) error {
			resp, err := receivertest.Post(ctx, base+receiver.LokiPath, token, "application/json", receivertest.LokiJSON(files, rule.DefaultCluster))
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusNoContent {
				return fmt.Errorf("push: %s", resp.Status)
			}
			return nil
		}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := startServer(t, Config{HTTPToken: token})
			base := "http://" + r.addrs.HTTP
			// The same token as every other route.
			if resp, err := receivertest.Post(t.Context(), base+receiver.LokiPath, "", "application/json", []byte(`{"streams":[]}`)); err != nil || resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("push without the token: %v %v", resp, err)
			}
			if err := c.send(t.Context(), base); err != nil {
				t.Fatal(err)
			}
			wantV := comparable(want, c.line)
			var got []finding.Finding
			testutil.CheckFor(t, 30*time.Second, 200*time.Millisecond, func() error {
				got = nil
				if err := getAuthJSON(t, base+"/api/findings", token, &got); err != nil {
					return err
				}
				if g := comparable(got, c.line); !slices.Equal(g, wantV) {
					return fmt.Errorf("findings\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(wantV, "\n"))
				}
				return nil
			})
		})
	}
}

// TestReceiverKillAndRetry: serve is killed (SIGKILL) while a Loki push is
// in flight; the client retries each push until it is answered 204, as
// Promtail does, across the restart. Every line is then in the index
// once (nothing lost, nothing doubled) and the seed story's finding is
// there once.
func TestReceiverKillAndRetry(t *testing.T) {
	bin := buildBin(t, "analyzer")
	files, err := receivertest.ReadDir(seedDir, seedDir)
	if err != nil {
		t.Fatal(err)
	}
	pushes := receivertest.LokiRequests(files, rule.DefaultCluster, 25)
	dir := t.TempDir()
	httpAddr, natsAddr := freePort(t), freePort(t)
	start := func() *exec.Cmd {
		cmd := exec.Command(bin, "serve", "--data-dir", dir, "--http", httpAddr, "--nats-listen", natsAddr, "--log-level", "warn")
		cmd.Stdout, cmd.Stderr = testWriter{t}, testWriter{t}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd
	}
	url := "http://" + httpAddr + receiver.LokiPath
	// push is a Loki client's delivery: until 204, retrying errors,
	// 429 and 5xx.
	push := func(ctx context.Context, b []byte) error {
		for {
			resp, err := receivertest.Post(ctx, url, "", "application/x-protobuf", b)
			if err == nil && resp.StatusCode == http.StatusNoContent {
				return nil
			}
			if err == nil && resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusTooManyRequests {
				return fmt.Errorf("push refused: %s", resp.Status)
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("push not taken: %v (%v)", ctx.Err(), err)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := start()
	half := len(pushes) / 2
	for _, b := range pushes[:half] {
		if err := push(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// One push in flight when serve dies: its body streamed, half of it
	// sent, serve's handler reading the rest (its in-flight gauge says so)
	// when the SIGKILL lands. That attempt gets no answer; the client
	// sends the whole push again across the restart.
	b := pushes[half]
	body, bodyW := io.Pipe()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, body)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.ContentLength = int64(len(b)) // announced whole, as Loki clients do
	attempt := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("answered %s", resp.Status)
		}
		attempt <- err
	}()
	go bodyW.Write(b[:len(b)/2])
	testutil.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		if n := metricValue(t, httpAddr, "faultline_receiver_requests_in_flight"); n != 1 {
			return fmt.Errorf("requests in flight %v", n)
		}
		return nil
	})
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	bodyW.CloseWithError(errors.New("serve was killed"))
	if err := <-attempt; err == nil || strings.HasPrefix(err.Error(), "answered") {
		t.Fatalf("the push in flight at the kill: %v, want no answer", err)
	}
	start()
	if err := push(ctx, b); err != nil {
		t.Fatal(err)
	}
	// And the one before it sent again (its answer lost, say).
	for _, b := range pushes[half-1:] {
		if err := push(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// The same pushes into a serve that was not killed: the records to
	// find, by ID.
	ref := startServer(t, Config{})
	refURL := "http://" + ref.addrs.HTTP + receiver.LokiPath
	for _, b := range pushes {
		if resp, err := receivertest.Post(ctx, refURL, "", "application/x-protobuf", b); err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("reference push: %v %v", resp, err)
		}
	}
	want := diagnose(t)
	idsOf := func(addr string) (map[string]int, error) {
		ids, total, err := searchAll(t, addr, "", 1000)
		if err != nil {
			return nil, err
		}
		m := map[string]int{}
		for _, id := range ids {
			m[id]++
		}
		if uint64(len(ids)) != total {
			return nil, fmt.Errorf("%d hits paged, total %d", len(ids), total)
		}
		return m, nil
	}
	var wantIDs map[string]int
	testutil.CheckFor(t, time.Minute, 250*time.Millisecond, func() error {
		var err error
		if wantIDs, err = idsOf(ref.addrs.HTTP); err != nil {
			return err
		}
		// The findings can be complete before the index's last batch is
		// searchable: wait until the reference consumed every record it
		// took and flushed them. (Records, not IDs: a Loki stream's line
		// sent twice with one timestamp is one record, as in Loki.)
		recv := metricValue(t, ref.addrs.HTTP, "faultline_receiver_records_total")
		consumed := metricValue(t, ref.addrs.HTTP, "faultline_records_consumed_total")
		lag := metricValue(t, ref.addrs.HTTP, "faultline_index_lag_records")
		if recv <= 0 || consumed < recv || lag != 0 {
			return fmt.Errorf("reference: %v records received, %v consumed, %v not flushed", recv, consumed, lag)
		}
		if again, err := idsOf(ref.addrs.HTTP); err != nil || len(again) != len(wantIDs) || len(wantIDs) == 0 {
			return fmt.Errorf("reference: %d records searchable, then %d (%v)", len(wantIDs), len(again), err)
		}
		var fs []finding.Finding
		if err := getAuthJSON(t, "http://"+ref.addrs.HTTP+"/api/findings", "", &fs); err != nil {
			return err
		}
		if g, w := comparable(fs, false), comparable(want, false); !slices.Equal(g, w) {
			return fmt.Errorf("reference findings\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
		return nil
	})
	testutil.CheckFor(t, time.Minute, 250*time.Millisecond, func() error {
		got, err := idsOf(httpAddr)
		if err != nil {
			return err
		}
		missing, doubled := 0, 0
		for id := range wantIDs {
			if got[id] == 0 {
				missing++
			}
		}
		for _, n := range got {
			if n > 1 {
				doubled++
			}
		}
		if missing > 0 || doubled > 0 || len(got) != len(wantIDs) {
			return fmt.Errorf("%d records, want %d: %d missing, %d found twice", len(got), len(wantIDs), missing, doubled)
		}
		var fs []finding.Finding
		if err := getAuthJSON(t, "http://"+httpAddr+"/api/findings", "", &fs); err != nil {
			return err
		}
		if g, w := comparable(fs, false), comparable(want, false); !slices.Equal(g, w) {
			return fmt.Errorf("findings\n%s\nwant\n%s", strings.Join(g, "\n"), strings.Join(w, "\n"))
		}
		return nil
	})
}
