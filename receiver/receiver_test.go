package receiver_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/grafana/loki/pkg/push"
	"github.com/klauspost/compress/snappy"
	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/receivertest"
	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/receiver"
	"github.com/faultline/faultline/transport"
)

// env is a receiver on a real JetStream server, behind an HTTP server.
type env struct {
	ns   *natsserver.Server
	nc   *nats.Conn
	js   jetstream.JetStream
	pub  *transport.Publisher
	rcv  *receiver.Receiver
	http *httptest.Server
}

func newEnv(t *testing.T, opts receiver.Options, po transport.PublisherOptions) *env {
	t.Helper()
	e := &env{ns: testutil.RunJetStreamServer(t)}
	var err error
	e.nc, err = nats.Connect(e.ns.ClientURL(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.nc.Close)
	e.js, _ = jetstream.New(e.nc)
	if _, _, err := transport.EnsureStream(t.Context(), e.nc, e.js, transport.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	e.pub, err = transport.NewPublisher(e.nc, po)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.pub.Close)
	e.rcv = receiver.New(e.pub, opts)
	mux := http.NewServeMux()
	mux.Handle("POST "+receiver.OTLPPath, e.rcv.OTLP())
	mux.Handle("POST "+receiver.LokiPath, e.rcv.Loki())
	e.http = httptest.NewServer(mux)
	t.Cleanup(e.http.Close)
	return e
}

// stored reads every record of the stream, and how many messages it holds.
func (e *env) stored(t *testing.T) ([]parsers.Record, uint64) {
	t.Helper()
	st, err := e.js.Stream(t.Context(), transport.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var out []parsers.Record
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := st.GetMsg(t.Context(), seq)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := transport.Decode(m.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out, info.State.Msgs
}

func seedFiles(t *testing.T) []receivertest.File {
	t.Helper()
	files, err := receivertest.ReadDir("../testdata/logs/seed/failed", "/logs")
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The shipper's records of the same files: what the receivers must give.
func shipperRecords(t *testing.T, files []receivertest.File) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, f := range files {
		path := strings.Replace(f.Path, "/logs", "../testdata/logs/seed/failed", 1)
		o := parsers.Origin{Cluster: "dgx", Node: f.Node, File: f.Path}
		if err := parsers.ReadFile(path, o, func(r parsers.Record) { out[f.Node+" "+f.Path] = append(out[f.Node+" "+f.Path], r.Text) }, nil); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func byFile(recs []parsers.Record) map[string][]string {
	out := map[string][]string{}
	for _, r := range recs {
		out[r.Node+" "+r.File] = append(out[r.Node+" "+r.File], r.Text)
	}
	return out
}

// TestOTLPExporter: the seed story sent line by line by the OpenTelemetry
// SDK's OTLP/HTTP exporter (gzipped) becomes, in the stream, the records a
// shipper tailing the same files makes (tracebacks and multi-line blocks
// joined), with the node, file and line numbers the client gave, each ID
// once; the files sent again (a collector reading them again from its
// checkpoint: other observed times, the same record numbers) add nothing.
func TestOTLPExporter(t *testing.T) {
	e := newEnv(t, receiver.Options{}, transport.PublisherOptions{})
	files := seedFiles(t)
	o := receivertest.OTLPOptions{URL: e.http.URL + receiver.OTLPPath, Cluster: "dgx", Gzip: true, Batch: 1 << 20}
	if err := receivertest.SendOTLP(t.Context(), o, files); err != nil {
		t.Fatal(err)
	}
	recs, msgs := e.stored(t)
	want := shipperRecords(t, files)
	got := byFile(recs)
	for k, w := range want {
		// The same records; the order is by start here, by close there.
		slices.Sort(w)
		slices.Sort(got[k])
		if !slices.Equal(got[k], w) {
			t.Errorf("%s: %d records, want the shipper's %d", k, len(got[k]), len(w))
		}
	}
	ids := map[string]bool{}
	for _, r := range recs {
		if ids[r.ID] {
			t.Errorf("record ID %s twice", r.ID)
		}
		ids[r.ID] = true
		if r.Cluster != "dgx" || (r.Node != "spark-1" && r.Node != "spark-2") || r.Line <= 0 {
			t.Errorf("record %+v: origin or line not as sent", r)
		}
	}
	if err := receivertest.SendOTLP(t.Context(), o, files); err != nil {
		t.Fatal(err)
	}
	if again, msgs2 := e.stored(t); msgs2 != msgs || len(again) != len(recs) {
		t.Errorf("sent twice: %d messages and %d records, after the first %d and %d", msgs2, len(again), msgs, len(recs))
	}
}

// TestRetryGivesTheSameIDs: a request re-sent as it was (a lost answer)
// is stored once, by JetStream's duplicate window; the same entries cut
// into other requests (a client that re-batches) get the same record IDs,
// so serve and the index take them once.
func TestRetryGivesTheSameIDs(t *testing.T) {
	e := newEnv(t, receiver.Options{}, transport.PublisherOptions{})
	files := seedFiles(t)
	whole := receivertest.LokiRequests(files, "dgx", 1<<20)
	if len(whole) != 1 {
		t.Fatalf("%d requests", len(whole))
	}
	url := e.http.URL + receiver.LokiPath
	for range 2 {
		resp, err := receivertest.Post(t.Context(), url, "", "application/x-protobuf", whole[0])
		if err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("push: %v %v", resp, err)
		}
	}
	first, msgs := e.stored(t)
	if again, _ := receivertest.Post(t.Context(), url, "", "application/json", receivertest.LokiJSON(files, "dgx")); again.StatusCode != http.StatusNoContent {
		t.Fatalf("JSON push: %v", again.Status)
	}
	for _, b := range receivertest.LokiRequests(files, "dgx", 97) {
		if resp, err := receivertest.Post(t.Context(), url, "", "application/x-protobuf", b); err != nil || resp.StatusCode != http.StatusNoContent {
			t.Fatalf("push: %v %v", resp, err)
		}
	}
	all, _ := e.stored(t)
	ids := func(recs []parsers.Record) map[string]int {
		m := map[string]int{}
		for _, r := range recs {
			m[r.ID]++
		}
		return m
	}
	firstIDs := ids(first)
	if len(firstIDs) != len(first) {
		t.Errorf("one push sent twice: %d records, %d IDs (%d messages)", len(first), len(firstIDs), msgs)
	}
	// The JSON push and the re-cut pushes carry the same entries: their
	// records have the IDs of the first push (a multi-line record cut
	// across two requests is the exception: its second part is new).
	for id := range ids(all) {
		if firstIDs[id] == 0 {
			t.Logf("new ID %s after re-batching", id)
		}
	}
	if n := len(ids(all)); n > len(firstIDs)+len(receivertest.LokiRequests(files, "dgx", 97)) {
		t.Errorf("re-sent entries got new IDs: %d distinct after, %d before", n, len(firstIDs))
	}
}

// TestLokiMapping: labels name the cluster, node, container, file and
// stream (docs/receivers.md); a stream without them is the client's host
// in the default cluster.
func TestLokiMapping(t *testing.T) {
	e := newEnv(t, receiver.Options{Cluster: "fallback"}, transport.PublisherOptions{})
	ts := time.Date(2026, 4, 8, 22, 41, 25, 0, time.UTC)
	req := push.PushRequest{Streams: []push.Stream{
		{Labels: `{k8s_cluster_name="kuberay", pod="raycluster-head-x7k2p", container="ray-head", filename="/tmp/ray/session_latest/logs/raylet.out", stream="stderr"}`,
			Entries: []push.Entry{{Timestamp: ts, Line: "line one"}}},
		{Labels: `{job="other"}`, Entries: []push.Entry{{Timestamp: ts, Line: "no names"}}},
	}}
	b, _ := proto.Marshal(&req)
	if resp, err := receivertest.Post(t.Context(), e.http.URL+receiver.LokiPath, "", "application/x-protobuf", snappy.Encode(nil, b)); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("push: %v %v", resp, err)
	}
	recs, _ := e.stored(t)
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	got := map[string]parsers.Record{}
	for _, r := range recs {
		got[r.Text] = r
	}
	if r := got["line one"]; r.Cluster != "kuberay" || r.Node != "raycluster-head-x7k2p" || r.Container != "ray-head" ||
		r.File != "/tmp/ray/session_latest/logs/raylet.out" || r.Stream != "stderr" || !r.Time.Equal(ts) {
		t.Errorf("mapped %+v", r)
	}
	if r := got["no names"]; r.Cluster != "fallback" || r.Node != "127.0.0.1" || r.File != "loki" {
		t.Errorf("unnamed stream %+v", r)
	}
}

// TestRefusals: what a client is told, and that it can retry where it
// should: 413 past the body limit, 415 for another content type, 400 for a
// body that does not decode, 503 with Retry-After while NATS is down.
func TestRefusals(t *testing.T) {
	e := newEnv(t, receiver.Options{MaxBodyBytes: 1 << 10, RetryAfter: 3 * time.Second}, transport.PublisherOptions{})
	post := func(path, ct string, body []byte) *http.Response {
		resp, err := receivertest.Post(t.Context(), e.http.URL+path, "", ct, body)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	big := receivertest.StreamsJSON([]push.Stream{{Labels: `{node="a"}`, Entries: []push.Entry{{Timestamp: time.Now(), Line: strings.Repeat("x", 2<<10)}}}})
	for _, c := range []struct {
		path, ct string
		body     []byte
		code     int
	}{
		{receiver.LokiPath, "application/json", big, http.StatusRequestEntityTooLarge},
		{receiver.LokiPath, "application/x-protobuf", snappy.Encode(nil, bytes.Repeat([]byte{'a'}, 4<<10)), http.StatusRequestEntityTooLarge},
		{receiver.LokiPath, "text/plain", []byte("x"), http.StatusUnsupportedMediaType},
		{receiver.OTLPPath, "application/x-www-form-urlencoded", []byte("a=b"), http.StatusUnsupportedMediaType},
		{receiver.LokiPath, "application/json", []byte(`{"streams":[{"stream":{},"values":[["soon","x"]]}]}`), http.StatusBadRequest},
		{receiver.LokiPath, "application/x-protobuf", []byte("not snappy"), http.StatusBadRequest},
		{receiver.OTLPPath, "application/x-protobuf", []byte{0xff, 0xff}, http.StatusBadRequest},
		{receiver.OTLPPath, "application/json", []byte(`{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"body":{"stringValue":"ok"}}]}]}]}`), http.StatusOK},
	} {
		if resp := post(c.path, c.ct, c.body); resp.StatusCode != c.code {
			t.Errorf("%s %s %.40q: %s, want %d", c.path, c.ct, c.body, resp.Status, c.code)
		}
	}
	e.ns.Shutdown()
	testutil.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if e.nc.IsConnected() {
			return context.DeadlineExceeded
		}
		return nil
	})
	resp := post(receiver.LokiPath, "application/json", receivertest.StreamsJSON([]push.Stream{{Labels: `{node="a"}`, Entries: []push.Entry{{Timestamp: time.Now(), Line: "x"}}}}))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "3" {
		t.Errorf("NATS down: %s, Retry-After %q; want 503 and 3", resp.Status, resp.Header.Get("Retry-After"))
	}
}

// TestBackPressure: with the stream gone, JetStream acknowledges nothing:
// a request waits its ack timeout and is answered 503, one that cannot get
// into the full publish window 429, both with Retry-After; once the stream
// is back the client's retry is taken.
func TestBackPressure(t *testing.T) {
	e := newEnv(t, receiver.Options{AckTimeout: time.Second, WindowWait: 200 * time.Millisecond}, transport.PublisherOptions{MaxInFlight: 1})
	if err := e.js.DeleteStream(t.Context(), transport.StreamName); err != nil {
		t.Fatal(err)
	}
	body := func(line string) []byte {
		return receivertest.StreamsJSON([]push.Stream{{Labels: `{node="a"}`, Entries: []push.Entry{{Timestamp: time.Unix(1, 0), Line: line}}}})
	}
	url := e.http.URL + receiver.LokiPath
	first := make(chan *http.Response, 1)
	go func() {
		resp, err := receivertest.Post(context.Background(), url, "", "application/json", body("first"))
		if err != nil {
			t.Error(err)
		}
		first <- resp
	}()
	time.Sleep(100 * time.Millisecond) // the first holds the one slot
	second, err := receivertest.Post(t.Context(), url, "", "application/json", body("second"))
	if err != nil {
		t.Fatal(err)
	}
	if second.StatusCode != http.StatusTooManyRequests || second.Header.Get("Retry-After") == "" {
		t.Errorf("window full: %s, Retry-After %q", second.Status, second.Header.Get("Retry-After"))
	}
	if r := <-first; r == nil || r.StatusCode != http.StatusServiceUnavailable || r.Header.Get("Retry-After") == "" {
		t.Errorf("no ack in time: %v", r)
	}
	if _, _, err := transport.EnsureStream(t.Context(), e.nc, e.js, transport.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 20*time.Second, 100*time.Millisecond, func() error {
		resp, err := receivertest.Post(t.Context(), url, "", "application/json", body("first"))
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusNoContent {
			return &statusErr{resp.Status}
		}
		return nil
	})
	recs, _ := e.stored(t)
	if len(recs) != 1 || recs[0].Text != "first" {
		t.Errorf("after the retry the stream holds %+v", recs)
	}
}

type statusErr struct{ s string }

func (e *statusErr) Error() string { return e.s }

func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{`{}`, `{a="b"}`, `{a="b", c="d\"e"}`, `{ a = "x\u00e9" ,}`, `{a="b",a="c"}`, `{1a="b"}`, `{a=b}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		labels, err := receiver.ParseLabels(s)
		if err != nil {
			return
		}
		// What parses prints back to the same labels.
		var parts []string
		for k, v := range labels {
			parts = append(parts, k+"="+strconvQuote(v))
		}
		back, err := receiver.ParseLabels("{" + strings.Join(parts, ", ") + "}")
		if err != nil || len(back) != len(labels) {
			t.Fatalf("%q: %v, printed back %v: %v", s, labels, back, err)
		}
		for k, v := range labels {
			if back[k] != v {
				t.Fatalf("%q: %s=%q read back as %q", s, k, v, back[k])
			}
		}
	})
}

func strconvQuote(s string) string { return strconv.Quote(s) }
