// Package receiver takes logs over HTTP from the collectors users already
// run (Fluent Bit, the OpenTelemetry Collector, Alloy, Vector, Promtail):
// OTLP/HTTP logs (/v1/logs, protobuf and JSON) and the Loki push API
// (/loki/api/v1/push, JSON and snappy-compressed protobuf).
//
// Records take the shipper's data path from the line on: each stream's
// lines are framed and joined into records by package parsers (a Python
// traceback sent line by line is one record, as tailed from a file),
// encoded into batches by transport.Encoder and published by
// transport.Publisher to the log stream, which serve consumes as it does a
// shipper's. A request is answered 2xx only once JetStream acknowledged
// every record of it; otherwise 429 (the publish window stayed full) or 503
// (NATS unreachable, or no acknowledgement in time), both with Retry-After,
// so the client sends it again.
//
// Record IDs are stable across such a retry: an ID is a hash of the
// stream's identity (cluster, node, container, file and the labels or
// resource attributes that name the stream), the position the client gives
// (log.record.uid when sent; else log.file.record_number and
// log.file.record_offset when sent, the same whenever the client reads the
// file again; else the record's time, or the time the client observed it),
// the entry's text, and how many identical entries came before it in the
// same request. The same request sent again
// gives the same records in the same batches under the same Nats-Msg-Id
// (JetStream drops them within its duplicate window) and records of the same
// IDs (serve drops and the index overwrites them after it). The limit: two
// byte-identical entries of one stream with the same time and no other
// position, sent in two different requests, are one record.
package receiver

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/transport"
)

// Publisher is where records go: transport.Publisher.
type Publisher interface {
	Publish(ctx context.Context, m *transport.Message, onAck func()) error
	MaxPayload() int
	Connected() bool
}

// Options configure a Receiver. Zero values take the defaults.
type Options struct {
	// Cluster is the cluster of records whose client names none
	// (default "default", as the shipper's --cluster).
	Cluster string
	// MaxBodyBytes bounds a request's body, before and after
	// decompression (default DefaultMaxBodyBytes); larger is a 413.
	MaxBodyBytes int64
	// WindowWait is how long a request waits for room in the publish
	// window before it is answered 429 (default 2s).
	WindowWait time.Duration
	// AckTimeout is how long a request waits for JetStream to acknowledge
	// its records before it is answered 503 (default 10s).
	AckTimeout time.Duration
	// RetryAfter is the Retry-After of 429 and 503 answers (default 2s).
	RetryAfter time.Duration
	// BatchBytes closes a batch at this size (default 768 KiB, the
	// shipper's).
	BatchBytes int
	Log        *slog.Logger
}

// DefaultMaxBodyBytes is the default bound of a request body: Loki's own
// default push limit is 4 MiB per stream-batch, Fluent Bit and the
// Collector send far less per request.
const DefaultMaxBodyBytes = 16 << 20

// Receiver answers the OTLP and Loki push endpoints.
type Receiver struct {
	pub  Publisher
	opts Options
	log  *slog.Logger

	// For metrics: requests by outcome, records published, requests
	// being handled (their body read, their records published).
	Requests struct{ OK, Rejected, Busy, Unavailable atomic.Int64 }
	Records  atomic.Int64
	InFlight atomic.Int64
}

// track counts h's requests in InFlight while they are handled.
func (r *Receiver) track(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.InFlight.Add(1)
		defer r.InFlight.Add(-1)
		h(w, req)
	})
}

// New returns a Receiver publishing with pub.
func New(pub Publisher, opts Options) *Receiver {
	if opts.Cluster == "" {
		opts.Cluster = "default"
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.WindowWait <= 0 {
		opts.WindowWait = 2 * time.Second
	}
	if opts.AckTimeout <= 0 {
		opts.AckTimeout = 10 * time.Second
	}
	if opts.RetryAfter <= 0 {
		opts.RetryAfter = 2 * time.Second
	}
	if opts.BatchBytes <= 0 {
		opts.BatchBytes = 768 << 10
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	return &Receiver{pub: pub, opts: opts, log: opts.Log}
}

// Paths of the endpoints.
const (
	OTLPPath = "/v1/logs"
	LokiPath = "/loki/api/v1/push"
)

// entry is one log entry as a client sent it.
type entry struct {
	time time.Time
	// readTime: time is only when the client read the line (OTLP's
	// observed time), not when it was written. Such a line takes the time
	// in its text, else the one of its process's record before, as a
	// tailed plain file does (parsers.JoinOptions.ReadTime).
	readTime bool
	text     string
	stream   string // stdout or stderr, when the client says
	uid      string // log.record.uid: the client's own identity of the entry
	line     int    // log.file.record_number (0: not given)
	offset   int64  // log.file.record_offset (-1: not given)
}

// stream is the entries of one origin (one file of one container of one
// node, as the client names them), in the client's order.
type stream struct {
	origin  parsers.Origin
	entries []entry
}

// streams gathers entries by origin, in the order origins first appear.
type streams struct {
	list  []*stream
	index map[string]*stream
}

func (ss *streams) add(o parsers.Origin, e entry) {
	if ss.index == nil {
		ss.index = map[string]*stream{}
	}
	st := ss.index[o.FileID]
	if st == nil {
		st = &stream{origin: o}
		ss.index[o.FileID] = st
		ss.list = append(ss.list, st)
	}
	st.entries = append(st.entries, e)
}

// statusError is an answer other than 2xx.
type statusError struct {
	code  int
	retry bool // send Retry-After
	err   error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

func badRequest(format string, args ...any) error {
	return &statusError{code: http.StatusBadRequest, err: fmt.Errorf(format, args...)}
}

// body reads the request body within the size limit, gunzipped when the
// client says so.
func (r *Receiver) body(w http.ResponseWriter, req *http.Request) ([]byte, error) {
	limit := r.opts.MaxBodyBytes
	rd := io.Reader(http.MaxBytesReader(w, req.Body, limit))
	switch enc := strings.ToLower(strings.TrimSpace(req.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(rd)
		if err != nil {
			return nil, badRequest("gzip body: %v", err)
		}
		defer zr.Close()
		rd = zr
	default:
		return nil, &statusError{code: http.StatusUnsupportedMediaType, err: fmt.Errorf("content encoding %q: want gzip or none", enc)}
	}
	b, err := io.ReadAll(io.LimitReader(rd, limit+1))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || int64(len(b)) > limit {
		return nil, &statusError{code: http.StatusRequestEntityTooLarge, err: fmt.Errorf("body over %d bytes", limit)}
	}
	if err != nil {
		return nil, badRequest("reading the body: %v", err)
	}
	return b, nil
}

// fail answers err; the error is logged at debug (a client that sends bad
// data is told, not the operator once per request).
func (r *Receiver) fail(w http.ResponseWriter, path string, err error) {
	se := &statusError{code: http.StatusInternalServerError, err: err}
	errors.As(err, &se)
	switch se.code {
	case http.StatusTooManyRequests:
		r.Requests.Busy.Add(1)
	case http.StatusServiceUnavailable:
		r.Requests.Unavailable.Add(1)
	default:
		r.Requests.Rejected.Add(1)
	}
	if se.retry {
		w.Header().Set("Retry-After", strconv.Itoa(int((r.opts.RetryAfter+time.Second-1)/time.Second)))
	}
	r.log.Debug("receiver: request refused", "path", path, "status", se.code, "err", se.err)
	http.Error(w, se.err.Error(), se.code)
}

// publish turns the streams into records, publishes them, and returns once
// JetStream acknowledged all of them, or with the status to answer.
func (r *Receiver) publish(ctx context.Context, ss *streams) error {
	if !r.pub.Connected() {
		return &statusError{code: http.StatusServiceUnavailable, retry: true, err: errors.New("the log stream is unreachable (NATS disconnected); retry")}
	}
	msgs := r.batches(records(ss))
	acked := make(chan struct{}, len(msgs))
	for _, m := range msgs {
		wctx, cancel := context.WithTimeout(ctx, r.opts.WindowWait)
		err := r.pub.Publish(wctx, m, func() { acked <- struct{}{} })
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return &statusError{code: http.StatusTooManyRequests, retry: true, err: errors.New("publishing is behind (the window to JetStream is full); retry")}
		}
	}
	t := time.NewTimer(r.opts.AckTimeout)
	defer t.Stop()
	for range msgs {
		select {
		case <-acked:
		case <-t.C:
			return &statusError{code: http.StatusServiceUnavailable, retry: true, err: errors.New("JetStream did not acknowledge the records in time; retry")}
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for _, m := range msgs {
		r.Records.Add(int64(m.Count))
	}
	r.Requests.OK.Add(1)
	return nil
}

// records joins each stream into records and orders each node's records
// by time across its streams (each stream's order kept: a merge of the
// streams, not a sort), as a shipper tailing the node's files live sends
// them; nodes follow each other in the order they first appear.
func records(ss *streams) []parsers.Record {
	type joined struct {
		recs  []parsers.Record
		times []time.Time
	}
	var nodes []string
	byNode := map[string][]*joined{}
	for _, st := range ss.list {
		j := &joined{}
		j.recs, j.times = joinStream(st, nil, nil)
		key := st.origin.Cluster + "\x00" + st.origin.Node
		if byNode[key] == nil {
			nodes = append(nodes, key)
		}
		byNode[key] = append(byNode[key], j)
	}
	var out []parsers.Record
	for _, key := range nodes {
		js := byNode[key]
		for {
			best := -1
			for i, j := range js {
				if len(j.recs) > 0 && (best < 0 || j.times[0].Before(js[best].times[0])) {
					best = i
				}
			}
			if best < 0 {
				break
			}
			j := js[best]
			out = append(out, j.recs[0])
			j.recs, j.times = j.recs[1:], j.times[1:]
		}
	}
	return out
}

// joinStream frames and joins the entries of st into records as the
// shipper does for a file (parsers.Decoder, parsers.Joiner), appended to
// out, and gives each its stable ID; times gets the client's time of each
// record's first entry, for ordering.
func joinStream(st *stream, out []parsers.Record, times []time.Time) ([]parsers.Record, []time.Time) {
	occ := occurrences(st.entries)
	dec := parsers.NewDecoder(parsers.FormatAuto)
	first := len(out)
	var clock time.Time // the read time of the line being added
	j := parsers.NewJoiner(st.origin, parsers.JoinOptions{ReadTime: true, Now: func() time.Time {
		if clock.IsZero() {
			return time.Now()
		}
		return clock
	}}, func(rec parsers.Record) { out = append(out, rec) })
	add := func(l parsers.Line, e *entry) {
		clock = e.time
		if l.Time.IsZero() && !e.readTime {
			l.Time = e.time
		}
		if l.Stream == "" {
			l.Stream = e.stream
		}
		j.Add(l)
	}
	for i := range st.entries {
		e := &st.entries[i]
		text := strings.TrimSuffix(strings.TrimSuffix(e.text, "\n"), "\r")
		for k, line := range strings.Split(text, "\n") {
			// The position of a line: its entry and its line in the
			// entry, recovered from the record's Offset below.
			l, ok, _ := dec.Decode([]byte(line), int64(i)<<20|int64(min(k, 1<<20-1)), 1, i+1)
			if ok {
				add(l, e)
			}
		}
	}
	if l, ok := dec.Flush(); ok {
		add(l, &st.entries[len(st.entries)-1])
	}
	j.Flush()
	// In the order their first lines came: the joiner emits a record when
	// it closes, and with a request's lines all there at once a record
	// kept open for more (a traceback's start) closes after later ones;
	// a shipper tailing live emits it a moment after it was written.
	sortByOffset(out[first:])
	for n := first; n < len(out); n++ {
		rec := &out[n]
		i, k := int(rec.Offset>>20), rec.Offset&(1<<20-1)
		e := &st.entries[i]
		rec.ID = recordID(st.origin, e, occ[i], k)
		rec.Offset, rec.Size, rec.Line = max(e.offset, 0), 0, e.line
		times = append(times, e.time)
	}
	return out, times
}

// sortByOffset sorts recs by Offset, stably: an order of indexes is
// sorted and the records moved once (sorting the records themselves moved
// each of them log n times, a tenth of a request's CPU).
func sortByOffset(recs []parsers.Record) {
	if slices.IsSortedFunc(recs, func(a, b parsers.Record) int { return cmp.Compare(a.Offset, b.Offset) }) {
		return
	}
	idx := make([]int32, len(recs))
	for i := range idx {
		idx[i] = int32(i)
	}
	slices.SortStableFunc(idx, func(a, b int32) int { return cmp.Compare(recs[a].Offset, recs[b].Offset) })
	sorted := make([]parsers.Record, len(recs))
	for i, k := range idx {
		sorted[i] = recs[k]
	}
	copy(recs, sorted)
}

// occurrences counts, for each entry, the identical entries (same
// position, same text) before it in the request.
func occurrences(es []entry) []int {
	type key struct {
		t      int64
		uid    string
		line   int
		offset int64
		text   string
	}
	seen := map[key]int{}
	out := make([]int, len(es))
	for i, e := range es {
		k := key{e.time.UnixNano(), e.uid, e.line, e.offset, e.text}
		out[i] = seen[k]
		seen[k]++
	}
	return out
}

// recordID is a record's stable ID (the package doc): 24 hex digits, as
// parsers.RecordID's, so that the wire format keeps them compact.
func recordID(o parsers.Origin, e *entry, occ int, lineInEntry int64) string {
	// Appended rather than printed (fmt was a tenth of a request's CPU);
	// the bytes hashed are the same.
	var buf [256]byte
	b := append(buf[:0], o.Node...)
	b = append(b, 0)
	b = append(b, o.FileID...)
	b = append(b, 0)
	num := func(n int64) { b = strconv.AppendInt(b, n, 10) }
	text := true
	switch {
	case e.uid != "":
		b = append(b, "uid\x00"...)
		b = append(b, e.uid...)
		b = append(b, 0)
		num(lineInEntry)
		text = false
	case e.line > 0 || e.offset >= 0:
		// A place in the file: the same however often, and whenever, the
		// client reads it (its read time, the observed time, may differ).
		b = append(b, "pos\x00"...)
		num(int64(e.line))
		b = append(b, 0)
		num(e.offset)
	default:
		b = append(b, "time\x00"...)
		num(e.time.UnixNano())
	}
	if text {
		b = append(b, 0)
		num(int64(occ))
		b = append(b, 0)
		num(lineInEntry)
		b = append(b, 0)
	}
	h := sha256.New()
	h.Write(b)
	if text {
		io.WriteString(h, e.text)
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0])[:12])
}

// batches encodes recs into messages of the shipper's wire format: runs of
// one node's records (one subject) up to BatchBytes, each under
// transport.MsgID of its first record.
func (r *Receiver) batches(recs []parsers.Record) []*transport.Message {
	hard := r.pub.MaxPayload() - 1024
	soft := min(r.opts.BatchBytes, hard)
	var out []*transport.Message
	var enc transport.Encoder
	var cur *transport.Message
	var firstID string
	closeBatch := func() {
		if cur != nil && cur.Count > 0 {
			cur.MsgID = transport.MsgID(firstID, cur.Count)
			out = append(out, cur)
		}
		cur = nil
	}
	for i := range recs {
		rec := &recs[i]
		transport.FitRecord(rec, hard)
		subject := transport.LogsSubject(rec.Cluster, rec.Node)
		if cur != nil && (cur.Subject != subject || len(cur.Body) >= soft) {
			closeBatch()
		}
		if cur == nil {
			cur = &transport.Message{Subject: subject}
			firstID = rec.ID
		}
		before := len(cur.Body)
		cur.Body = enc.Append(cur.Body, rec)
		if len(cur.Body) > hard && cur.Count > 0 {
			// It does not fit: it starts the next batch.
			cur.Body = cur.Body[:before]
			closeBatch()
			cur = &transport.Message{Subject: subject}
			firstID = rec.ID
			cur.Body = enc.Append(cur.Body, rec)
		}
		cur.Count++
	}
	closeBatch()
	return out
}

// remoteHost is the client's address without the port: the node of
// entries whose client names none.
func remoteHost(req *http.Request) string {
	host, _, err := net.SplitHostPort(req.RemoteAddr)
	if err != nil {
		return req.RemoteAddr
	}
	return host
}

// fileID is the identity of a stream: the hash of what names it.
func fileID(kind string, parts ...string) string {
	h := sha256.New()
	h.Write([]byte(kind))
	for _, p := range parts {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return kind + ":" + hex.EncodeToString(h.Sum(nil)[:8])
}
