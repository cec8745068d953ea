package receiver

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/klauspost/compress/snappy"
	"google.golang.org/protobuf/encoding/protowire"
)

// Loki answers POST /loki/api/v1/push as Loki does: a PushRequest as
// snappy-compressed protobuf (application/x-protobuf, what Promtail, Alloy
// and Fluent Bit's loki output send) or JSON (application/json,
// {"streams":[{"stream":{labels},"values":[["<unix ns>","line"(, {metadata})]]}]},
// gzipped or not). Success is 204.
func (r *Receiver) Loki() http.Handler {
	return r.track(func(w http.ResponseWriter, req *http.Request) {
		ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		if ct == "" {
			ct = "application/x-protobuf" // Loki's default
		}
		if ct != "application/json" && ct != "application/x-protobuf" {
			r.fail(w, LokiPath, &statusError{code: http.StatusUnsupportedMediaType, err: errUnsupported("application/x-protobuf or application/json", ct)})
			return
		}
		body, err := r.body(w, req)
		if err != nil {
			r.fail(w, LokiPath, err)
			return
		}
		var push []lokiStream
		if ct == "application/json" {
			push, err = decodeLokiJSON(body)
		} else {
			push, err = r.decodeLokiProto(body)
		}
		if err != nil {
			r.fail(w, LokiPath, err)
			return
		}
		ss := &streams{}
		client := remoteHost(req)
		for _, st := range push {
			for _, e := range st.entries {
				names := st.labels
				if f := first(e.metadata, lokiFile); f != "" && first(names, lokiFile) == "" {
					names = copyWith(names, "filename", f)
				}
				o := origin("loki", names, lokiCluster, lokiNode, lokiContainer, lokiFile, r.opts.Cluster, client)
				ss.add(o, entry{time: e.time, text: e.line, stream: isStream(first(names, lokiIOStream)), offset: -1})
			}
		}
		if err := r.publish(req.Context(), ss); err != nil {
			r.fail(w, LokiPath, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

type lokiStream struct {
	labels  map[string]string
	entries []lokiEntry
}

type lokiEntry struct {
	time     time.Time
	line     string
	metadata map[string]string
}

// decodeLokiJSON reads Loki's JSON push body.
func decodeLokiJSON(b []byte) ([]lokiStream, error) {
	var in struct {
		Streams []struct {
			Stream map[string]string   `json:"stream"`
			Values [][]json.RawMessage `json:"values"`
		} `json:"streams"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, badRequest("Loki push JSON: %v", err)
	}
	out := make([]lokiStream, 0, len(in.Streams))
	for si, s := range in.Streams {
		st := lokiStream{labels: s.Stream}
		for vi, v := range s.Values {
			if len(v) < 2 || len(v) > 3 {
				return nil, badRequest("Loki push JSON: streams[%d].values[%d]: want [\"<unix ns>\", \"line\"] or with structured metadata, not %d items", si, vi, len(v))
			}
			var ts, line string
			if err := json.Unmarshal(v[0], &ts); err != nil {
				return nil, badRequest("Loki push JSON: streams[%d].values[%d]: the time is a string of Unix nanoseconds: %v", si, vi, err)
			}
			ns, err := strconv.ParseInt(ts, 10, 64)
			if err != nil {
				return nil, badRequest("Loki push JSON: streams[%d].values[%d]: time %q: want Unix nanoseconds", si, vi, ts)
			}
			if err := json.Unmarshal(v[1], &line); err != nil {
				return nil, badRequest("Loki push JSON: streams[%d].values[%d]: the line: %v", si, vi, err)
			}
			e := lokiEntry{time: time.Unix(0, ns).UTC(), line: line}
			if len(v) == 3 {
				if err := json.Unmarshal(v[2], &e.metadata); err != nil {
					return nil, badRequest("Loki push JSON: streams[%d].values[%d]: structured metadata: %v", si, vi, err)
				}
			}
			st.entries = append(st.entries, e)
		}
		out = append(out, st)
	}
	return out, nil
}

// decodeLokiProto reads a snappy-compressed PushRequest. The schema is
// Loki's pkg/push/push.proto (Apache-2.0): PushRequest{1: repeated
// StreamAdapter}, StreamAdapter{1: labels, 2: repeated EntryAdapter},
// EntryAdapter{1: google.protobuf.Timestamp, 2: line, 3: repeated
// LabelPairAdapter structured metadata}, LabelPairAdapter{1: name, 2:
// value}; read with the protobuf runtime's wire decoder, other fields
// skipped.
func (r *Receiver) decodeLokiProto(b []byte) ([]lokiStream, error) {
	n, err := snappy.DecodedLen(b)
	if err != nil {
		return nil, badRequest("Loki push: snappy: %v", err)
	}
	if int64(n) > r.opts.MaxBodyBytes {
		return nil, &statusError{code: http.StatusRequestEntityTooLarge, err: fmt.Errorf("body over %d bytes once decompressed", r.opts.MaxBodyBytes)}
	}
	raw, err := snappy.Decode(nil, b)
	if err != nil {
		return nil, badRequest("Loki push: snappy: %v", err)
	}
	var out []lokiStream
	err = fields(raw, func(num protowire.Number, v []byte) error {
		if num != 1 {
			return nil
		}
		st, err := decodeStream(v)
		if err != nil {
			return fmt.Errorf("stream %d: %w", len(out), err)
		}
		out = append(out, st)
		return nil
	})
	if err != nil {
		return nil, badRequest("Loki push protobuf: %v", err)
	}
	return out, nil
}

func decodeStream(b []byte) (lokiStream, error) {
	var st lokiStream
	var labels string
	err := fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			labels = string(v)
		case 2:
			e, err := decodeEntry(v)
			if err != nil {
				return fmt.Errorf("entry %d: %w", len(st.entries), err)
			}
			st.entries = append(st.entries, e)
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	if st.labels, err = ParseLabels(labels); err != nil {
		return st, err
	}
	return st, nil
}

func decodeEntry(b []byte) (lokiEntry, error) {
	var e lokiEntry
	err := fields(b, func(num protowire.Number, v []byte) error {
		switch num {
		case 1:
			var sec, nanos int64
			err := fields(v, func(n protowire.Number, x []byte) error {
				val, k := protowire.ConsumeVarint(x)
				if k < 0 {
					return protowire.ParseError(k)
				}
				switch n {
				case 1:
					sec = int64(val)
				case 2:
					nanos = int64(int32(val))
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("timestamp: %w", err)
			}
			e.time = time.Unix(sec, nanos).UTC()
		case 2:
			e.line = string(v)
		case 3:
			var name, value string
			if err := fields(v, func(n protowire.Number, x []byte) error {
				switch n {
				case 1:
					name = string(x)
				case 2:
					value = string(x)
				}
				return nil
			}); err != nil {
				return fmt.Errorf("structured metadata: %w", err)
			}
			if e.metadata == nil {
				e.metadata = map[string]string{}
			}
			e.metadata[name] = value
		}
		return nil
	})
	return e, err
}

// fields walks the fields of a protobuf message: f gets each field's number
// and its bytes (a length-delimited field's content; a varint's own bytes,
// for ConsumeVarint).
func fields(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			_, n = protowire.ConsumeVarint(b)
			if n >= 0 {
				v = b[:n]
			}
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if v != nil || typ == protowire.BytesType {
			if err := f(num, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// ParseLabels reads a Loki stream selector as a push request carries it:
// {name="value", ...}, values quoted as Go and PromQL strings are.
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	t := strings.TrimSpace(s)
	if !strings.HasPrefix(t, "{") || !strings.HasSuffix(t, "}") {
		return nil, fmt.Errorf("labels %q: want {name=\"value\", ...}", s)
	}
	t = strings.TrimSpace(t[1 : len(t)-1])
	for t != "" {
		i := strings.IndexByte(t, '=')
		if i <= 0 {
			return nil, fmt.Errorf("labels %q: a label without =\"value\"", s)
		}
		name := strings.TrimSpace(t[:i])
		if !labelName(name) {
			return nil, fmt.Errorf("labels %q: %q is not a label name", s, name)
		}
		t = strings.TrimSpace(t[i+1:])
		q, err := strconv.QuotedPrefix(t)
		if err != nil || q[0] == '\'' {
			return nil, fmt.Errorf("labels %q: the value of %s is not a quoted string", s, name)
		}
		v, err := strconv.Unquote(q)
		if err != nil {
			return nil, fmt.Errorf("labels %q: the value of %s: %w", s, name, err)
		}
		if !utf8.ValidString(v) {
			return nil, fmt.Errorf("labels %q: the value of %s is not UTF-8", s, name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("labels %q: %s given twice", s, name)
		}
		out[name] = v
		t = strings.TrimSpace(t[len(q):])
		if t == "" {
			break
		}
		if t[0] != ',' {
			return nil, fmt.Errorf("labels %q: want , between labels", s)
		}
		t = strings.TrimSpace(t[1:])
	}
	return out, nil
}

func labelName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && !(i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
