package receiver

import (
	"encoding/base64"
	"encoding/json"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	collogs "go.opentelemetry.io/proto/slim/otlp/collector/logs/v1"
	common "go.opentelemetry.io/proto/slim/otlp/common/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/faultline/faultline/parsers"
)

// OTLP answers POST /v1/logs: an ExportLogsServiceRequest as protobuf
// (application/x-protobuf) or JSON (application/json), gzipped or not, as
// the OTLP/HTTP specification has it. Success is 200 with an empty
// ExportLogsServiceResponse in the request's encoding.
func (r *Receiver) OTLP() http.Handler {
	return r.track(func(w http.ResponseWriter, req *http.Request) {
		ct, _, _ := mime.ParseMediaType(req.Header.Get("Content-Type"))
		isJSON := ct == "application/json"
		if !isJSON && ct != "application/x-protobuf" && ct != "application/protobuf" {
			r.fail(w, OTLPPath, &statusError{code: http.StatusUnsupportedMediaType, err: errUnsupported("application/x-protobuf or application/json", ct)})
			return
		}
		body, err := r.body(w, req)
		if err != nil {
			r.fail(w, OTLPPath, err)
			return
		}
		var in collogs.ExportLogsServiceRequest
		if isJSON {
			err = protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(body, &in)
		} else {
			err = proto.Unmarshal(body, &in)
		}
		if err != nil {
			r.fail(w, OTLPPath, badRequest("OTLP logs request: %v", err))
			return
		}
		ss := r.otlpStreams(&in, remoteHost(req))
		if err := r.publish(req.Context(), ss); err != nil {
			r.fail(w, OTLPPath, err)
			return
		}
		var out []byte
		if isJSON {
			w.Header().Set("Content-Type", "application/json")
			out = []byte("{}")
		} else {
			w.Header().Set("Content-Type", "application/x-protobuf")
			out, _ = proto.Marshal(&collogs.ExportLogsServiceResponse{})
		}
		w.WriteHeader(http.StatusOK)
		w.Write(out)
	})
}

func errUnsupported(want, got string) error {
	if got == "" {
		got = "none"
	}
	return &simpleError{"content type " + strconv.Quote(got) + ": want " + want}
}

type simpleError struct{ s string }

func (e *simpleError) Error() string { return e.s }

// otlpStreams maps the request's records to streams (the mapping in
// mapping.go).
func (r *Receiver) otlpStreams(in *collogs.ExportLogsServiceRequest, client string) *streams {
	ss := &streams{}
	for _, rl := range in.GetResourceLogs() {
		res := attributes(rl.GetResource().GetAttributes())
		// A resource's records name few files: their origins once per
		// file, not once per record (a third of a request's CPU).
		origins := map[string]parsers.Origin{}
		for _, sl := range rl.GetScopeLogs() {
			for _, lr := range sl.GetLogRecords() {
				la := attributes(lr.GetAttributes())
				f := first(la, otlpFile)
				o, ok := origins[f]
				if !ok {
					names := res
					if f != "" {
						names = copyWith(res, "log.file.path", f)
					}
					o = origin("otlp", names, otlpCluster, otlpNode, otlpContainer, otlpFile, r.opts.Cluster, client)
					origins[f] = o
				}
				e := entry{text: anyString(lr.GetBody()), stream: isStream(first(la, otlpStream)), uid: la["log.record.uid"], offset: -1}
				switch t := lr.GetTimeUnixNano(); {
				case t != 0:
					e.time = time.Unix(0, int64(t)).UTC()
				case lr.GetObservedTimeUnixNano() != 0:
					e.time = time.Unix(0, int64(lr.GetObservedTimeUnixNano())).UTC()
					e.readTime = true
				default:
					e.readTime = true // no time at all: read now (the ID leaves the time out)
				}
				if n, err := strconv.Atoi(la["log.file.record_number"]); err == nil && n > 0 {
					e.line = n
				}
				if n, err := strconv.ParseInt(la["log.file.record_offset"], 10, 64); err == nil && n >= 0 {
					e.offset = n
				}
				ss.add(o, e)
			}
		}
	}
	return ss
}

func copyWith(m map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(m)+1)
	for a, b := range m {
		out[a] = b
	}
	out[k] = v
	return out
}

// attributes flattens OTLP attributes to strings.
func attributes(kvs []*common.KeyValue) map[string]string {
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		out[kv.GetKey()] = anyString(kv.GetValue())
	}
	return out
}

// anyString is an OTLP value as text: a string as it is, a number or
// boolean as written, bytes in base64, a list or map as JSON.
func anyString(v *common.AnyValue) string {
	switch x := v.GetValue().(type) {
	case nil:
		return ""
	case *common.AnyValue_StringValue:
		return x.StringValue
	case *common.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *common.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *common.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case *common.AnyValue_BytesValue:
		return base64.StdEncoding.EncodeToString(x.BytesValue)
	}
	b, _ := json.Marshal(anyJSON(v))
	return string(b)
}

func anyJSON(v *common.AnyValue) any {
	switch x := v.GetValue().(type) {
	case *common.AnyValue_ArrayValue:
		out := make([]any, 0, len(x.ArrayValue.GetValues()))
		for _, e := range x.ArrayValue.GetValues() {
			out = append(out, anyJSON(e))
		}
		return out
	case *common.AnyValue_KvlistValue:
		out := map[string]any{}
		for _, kv := range x.KvlistValue.GetValues() {
			out[kv.GetKey()] = anyJSON(kv.GetValue())
		}
		return out
	case *common.AnyValue_IntValue:
		return x.IntValue
	case *common.AnyValue_DoubleValue:
		return x.DoubleValue
	case *common.AnyValue_BoolValue:
		return x.BoolValue
	}
	return strings.Clone(anyString(v))
}
