// Package receivertest sends log files to Faultline's receivers as the
// collectors users run do, for tests and benchmarks: each file's lines
// (container framing removed, as Fluent Bit's docker and cri parsers do) as
// OTLP log records through the OpenTelemetry Go SDK's OTLP/HTTP exporter,
// or as Loki push requests encoded by Loki's own push package.
package receivertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/gogo/protobuf/proto"
	"github.com/grafana/loki/pkg/push"
	"github.com/klauspost/compress/snappy"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"
	collogspb "go.opentelemetry.io/proto/slim/otlp/collector/logs/v1"
	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	logspb "go.opentelemetry.io/proto/slim/otlp/logs/v1"
	resourcepb "go.opentelemetry.io/proto/slim/otlp/resource/v1"
	"google.golang.org/protobuf/encoding/protojson"
	protov2 "google.golang.org/protobuf/proto"

	"github.com/faultline/faultline/parsers"
)

// File is one log file of a node, framed into lines.
type File struct {
	Node  string
	Path  string // as sent: log.file.path, Loki's filename label
	Lines []parsers.Line
	// Written is when each line was written: its container time, else the
	// time in its text, else the line's before. A collector tailing the
	// file live reads each line then, so it is the read time sent (OTLP's
	// observed time, a Loki client's timestamp) and the order of sending.
	Written []time.Time
}

// ReadDir reads a folder of node folders (the seed story's layout) into
// files, each path as prefix joined with the file's path under dir.
func ReadDir(dir, prefix string) ([]File, error) {
	var out []File
	nodes, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		if !n.IsDir() {
			continue
		}
		err := filepath.WalkDir(filepath.Join(dir, n.Name()), func(path string, e fs.DirEntry, err error) error {
			if err != nil || e.IsDir() {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			rel, _ := filepath.Rel(dir, path)
			file := File{Node: n.Name(), Path: filepath.Join(prefix, rel)}
			rd := parsers.NewReader(f, parsers.ReaderOptions{EOFIsEnd: true})
			for {
				l, err := rd.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					return err
				}
				file.Lines = append(file.Lines, l)
				w := l.Time
				if w.IsZero() {
					w = parsers.Parse(parsers.Record{Text: l.Text}).Time
				}
				if w.IsZero() && len(file.Written) > 0 {
					w = file.Written[len(file.Written)-1]
				}
				file.Written = append(file.Written, w)
			}
			out = append(out, file)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// line is one line of files: file i, line k.
type line struct{ i, k int }

// inOrder is every line of files in the order they were written (files
// merged by Written; a file's own order kept).
func inOrder(files []File) []line {
	var out []line
	next := make([]int, len(files))
	for {
		best := -1
		for i, f := range files {
			if next[i] < len(f.Lines) && (best < 0 || f.Written[next[i]].Before(files[best].Written[next[best]])) {
				best = i
			}
		}
		if best < 0 {
			return out
		}
		out = append(out, line{best, next[best]})
		next[best]++
	}
}

// Lines counts the lines of files.
func Lines(files []File) int {
	n := 0
	for _, f := range files {
		n += len(f.Lines)
	}
	return n
}

// OTLPOptions say how SendOTLP sends.
type OTLPOptions struct {
	URL     string // the receiver's /v1/logs
	Token   string // bearer token ("" none)
	Cluster string // faultline.cluster resource attribute ("" none)
	Batch   int    // records per request (default 512, the SDK's)
	Gzip    bool
}

// SendOTLP sends every line of files through the SDK's OTLP/HTTP log
// exporter, one LoggerProvider per node (resource host.name = the node),
// each line a record with its time (when the framing had one), its stream
// as log.iostream, log.file.path and log.file.record_number, as the
// Collector's filelog receiver sends them. It returns once every record
// was exported (the exporter retries 429 and 503 as the specification
// says) or with the first export error.
func SendOTLP(ctx context.Context, o OTLPOptions, files []File) error {
	if o.Batch <= 0 {
		o.Batch = 512
	}
	byNode := map[string][]File{}
	var nodes []string
	for _, f := range files {
		if byNode[f.Node] == nil {
			nodes = append(nodes, f.Node)
		}
		byNode[f.Node] = append(byNode[f.Node], f)
	}
	sort.Strings(nodes)
	for _, node := range nodes {
		opts := []otlploghttp.Option{otlploghttp.WithEndpointURL(o.URL),
			otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: time.Minute})}
		if o.Token != "" {
			opts = append(opts, otlploghttp.WithHeaders(map[string]string{"Authorization": "Bearer " + o.Token}))
		}
		if o.Gzip {
			opts = append(opts, otlploghttp.WithCompression(otlploghttp.GzipCompression))
		}
		exp, err := otlploghttp.New(ctx, opts...)
		if err != nil {
			return err
		}
		attrs := []attribute.KeyValue{attribute.String("host.name", node)}
		if o.Cluster != "" {
			attrs = append(attrs, attribute.String("faultline.cluster", o.Cluster))
		}
		res := resource.NewSchemaless(attrs...)
		errs := &exportErrors{next: exp}
		proc := sdklog.NewBatchProcessor(errs, sdklog.WithExportMaxBatchSize(o.Batch), sdklog.WithMaxQueueSize(1<<20),
			// Batches by size only, so that a send cuts the records the same
			// way every time: the default 1 s interval cut them wherever a
			// loaded machine happened to be (two sends then differed).
			sdklog.WithExportInterval(time.Hour))
		lp := sdklog.NewLoggerProvider(sdklog.WithResource(res), sdklog.WithProcessor(proc))
		logger := lp.Logger("faultline-receivertest")
		nf := byNode[node]
		for _, ref := range inOrder(nf) {
			f, l := &nf[ref.i], nf[ref.i].Lines[ref.k]
			var rec otellog.Record
			if !l.Time.IsZero() {
				rec.SetTimestamp(l.Time)
			}
			rec.SetObservedTimestamp(f.Written[ref.k])
			rec.SetBody(attribute.StringValue(l.Text))
			rec.AddAttributes(attribute.String("log.file.path", f.Path), attribute.Int("log.file.record_number", l.Num))
			if l.Stream != "" {
				rec.AddAttributes(attribute.String("log.iostream", l.Stream))
			}
			logger.Emit(ctx, rec)
		}
		if err := lp.Shutdown(ctx); err != nil {
			return err
		}
		if err := errs.first(); err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
	}
	return nil
}

// exportErrors keeps the first error of an exporter (the batch processor
// only logs them).
type exportErrors struct {
	next sdklog.Exporter
	err  error
}

func (e *exportErrors) Export(ctx context.Context, recs []sdklog.Record) error {
	err := e.next.Export(ctx, recs)
	if err != nil && e.err == nil {
		e.err = err
	}
	return err
}
func (e *exportErrors) Shutdown(ctx context.Context) error   { return e.next.Shutdown(ctx) }
func (e *exportErrors) ForceFlush(ctx context.Context) error { return e.next.ForceFlush(ctx) }
func (e *exportErrors) first() error                         { return e.err }

// LokiRequests are push requests of at most n entries each, in the order
// the lines were written: in each request a stream per file (labels node
// and filename, as Promtail names them, and cluster when given), each
// entry stamped with the time it was written, as a client tailing live
// stamps it. Each request is encoded as Loki clients send it: the
// PushRequest marshalled by Loki's push package, snappy-compressed.
func LokiRequests(files []File, cluster string, n int) [][]byte {
	var out [][]byte
	for _, req := range lokiPushes(files, cluster, n) {
		b, err := proto.Marshal(&req)
		if err != nil {
			panic(err)
		}
		out = append(out, snappy.Encode(nil, b))
	}
	return out
}

func lokiPushes(files []File, cluster string, n int) []push.PushRequest {
	// A stream per file and output stream (Promtail's docker and cri
	// stages label stdout and stderr apart).
	labels := func(f *File, stream string) string {
		l := fmt.Sprintf(`{filename=%q, node=%q`, f.Path, f.Node)
		if cluster != "" {
			l += fmt.Sprintf(`, cluster=%q`, cluster)
		}
		if stream != "" {
			l += fmt.Sprintf(`, stream=%q`, stream)
		}
		return l + "}"
	}
	type key struct {
		file   int
		stream string
	}
	var out []push.PushRequest
	order := inOrder(files)
	for len(order) > 0 {
		k := min(n, len(order))
		var req push.PushRequest
		at := map[key]int{} // file and output stream -> its stream in req
		for _, ref := range order[:k] {
			f := &files[ref.i]
			sk := key{ref.i, f.Lines[ref.k].Stream}
			si, ok := at[sk]
			if !ok {
				si = len(req.Streams)
				at[sk] = si
				req.Streams = append(req.Streams, push.Stream{Labels: labels(f, sk.stream)})
			}
			req.Streams[si].Entries = append(req.Streams[si].Entries, push.Entry{Timestamp: f.Written[ref.k], Line: f.Lines[ref.k].Text})
		}
		out = append(out, req)
		order = order[k:]
	}
	return out
}

// LokiJSON is the files as one JSON push body (LokiRequests' entries).
func LokiJSON(files []File, cluster string) []byte {
	var streams []push.Stream
	for _, req := range lokiPushes(files, cluster, 1<<30) {
		streams = append(streams, req.Streams...)
	}
	return StreamsJSON(streams)
}

// StreamsJSON is Loki push streams as a JSON push body.
func StreamsJSON(streams []push.Stream) []byte {
	type js struct {
		Stream map[string]string `json:"stream"`
		Values [][]string        `json:"values"`
	}
	var body struct {
		Streams []js `json:"streams"`
	}
	for _, st := range streams {
		labels, err := parseLabels(st.Labels)
		if err != nil {
			panic(err)
		}
		s := js{Stream: labels}
		for _, e := range st.Entries {
			s.Values = append(s.Values, []string{strconv.FormatInt(e.Timestamp.UnixNano(), 10), e.Line})
		}
		body.Streams = append(body.Streams, s)
	}
	b, _ := json.Marshal(body)
	return b
}

// parseLabels reads the labels LokiStreams writes.
func parseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	s = s[1 : len(s)-1]
	for s != "" {
		i := bytes.IndexByte([]byte(s), '=')
		name := s[:i]
		s = s[i+1:]
		q, err := strconv.QuotedPrefix(s)
		if err != nil {
			return nil, err
		}
		out[name], _ = strconv.Unquote(q)
		s = s[len(q):]
		if len(s) > 2 && s[:2] == ", " {
			s = s[2:]
		}
	}
	return out, nil
}

// Post sends one push body with Loki's protobuf content type (or JSON) and
// returns the answer's status, as a Loki client does; the caller retries.
func Post(ctx context.Context, url, token, contentType string, body []byte) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", contentType)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

// OTLPBodies are the files as OTLP/HTTP request bodies of at most n
// records each, in the order the lines were written, encoded as the SDK's
// exporter encodes them (protobuf, or the specification's JSON): a
// resource per node (host.name, and faultline.cluster when given), each
// line a record with its time (when the framing had one), the time it was
// written as the observed time, log.file.path, log.file.record_number and
// log.iostream, as SendOTLP sends them. For benchmarks: encoding is done
// before the clock starts.
func OTLPBodies(files []File, cluster string, n int, asJSON bool) [][]byte {
	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	var out [][]byte
	order := inOrder(files)
	for len(order) > 0 {
		k := min(n, len(order))
		req := &collogspb.ExportLogsServiceRequest{}
		byNode := map[string]*logspb.ScopeLogs{}
		for _, ref := range order[:k] {
			f, l := &files[ref.i], files[ref.i].Lines[ref.k]
			sl := byNode[f.Node]
			if sl == nil {
				attrs := []*commonpb.KeyValue{str("host.name", f.Node)}
				if cluster != "" {
					attrs = append(attrs, str("faultline.cluster", cluster))
				}
				sl = &logspb.ScopeLogs{Scope: &commonpb.InstrumentationScope{Name: "faultline-receivertest"}}
				req.ResourceLogs = append(req.ResourceLogs, &logspb.ResourceLogs{Resource: &resourcepb.Resource{Attributes: attrs}, ScopeLogs: []*logspb.ScopeLogs{sl}})
				byNode[f.Node] = sl
			}
			rec := &logspb.LogRecord{
				ObservedTimeUnixNano: uint64(f.Written[ref.k].UnixNano()),
				Body:                 &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: l.Text}},
				Attributes: []*commonpb.KeyValue{str("log.file.path", f.Path),
					{Key: "log.file.record_number", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: int64(l.Num)}}}},
			}
			if !l.Time.IsZero() {
				rec.TimeUnixNano = uint64(l.Time.UnixNano())
			}
			if l.Stream != "" {
				rec.Attributes = append(rec.Attributes, str("log.iostream", l.Stream))
			}
			sl.LogRecords = append(sl.LogRecords, rec)
		}
		var b []byte
		var err error
		if asJSON {
			b, err = protojson.Marshal(req)
		} else {
			b, err = protov2.Marshal(req)
		}
		if err != nil {
			panic(err)
		}
		out = append(out, b)
		order = order[k:]
	}
	return out
}

// LokiJSONRequests are LokiRequests' pushes as JSON bodies.
func LokiJSONRequests(files []File, cluster string, n int) [][]byte {
	var out [][]byte
	for _, req := range lokiPushes(files, cluster, n) {
		out = append(out, StreamsJSON(req.Streams))
	}
	return out
}
