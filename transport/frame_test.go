package transport

import (
	"bytes"
	"strings"
	"testing"

	"github.com/faultline/faultline/parsers"
)

// payload is an Encoder's body of n records of a realistic vLLM log.
func payload(n int) ([]byte, []parsers.Record) {
	var e Encoder
	var body []byte
	var recs []parsers.Record
	var off int64
	for i := 0; i < n; i++ {
		r := parsers.Record{Cluster: "dgx", Node: "spark-1", Container: "vllm", File: "/var/lib/docker/containers/abc/abc-json.log",
			FileID: "2049:1234:deadbeef", Offset: off, Size: 180, Line: i + 1, Stream: "stdout",
			Text: "(RayWorkerWrapper pid=223, ip=192.168.141.7) INFO 10-23 03:54:46 [parallel_state.py:1325] rank " + strings.Repeat("1", i%5) + " in world size 2"}
		r.ID = parsers.RecordID(r.Node, r.FileID, r.Offset)
		off += r.Size
		body = e.Append(body, &r)
		recs = append(recs, r)
	}
	return body, recs
}

// Every compression round-trips, compresses (the header says which), and a
// payload that does not shrink is stored as it is.
func TestFrameRoundTrip(t *testing.T) {
	body, want := payload(500)
	for _, c := range []Compression{CompressNone, CompressS2, CompressZstd} {
		f, err := NewFramer(c)
		if err != nil {
			t.Fatal(err)
		}
		frame := f.Append([]byte("prefix"), body)
		if !bytes.HasPrefix(frame, []byte("prefix")) {
			t.Fatalf("%v: the frame does not extend dst", c)
		}
		frame = frame[len("prefix"):]
		if Compression(frame[4]) != c {
			t.Errorf("%v: header says %v", c, Compression(frame[4]))
		}
		if c != CompressNone && len(frame) > len(body)/3 {
			t.Errorf("%v: %d bytes for a %d-byte payload", c, len(frame), len(body))
		}
		got, err := Decode(frame)
		if err != nil || len(got) != len(want) || got[499] != want[499] {
			t.Fatalf("%v: Decode = %d records, %v", c, len(got), err)
		}
		// Random bytes do not shrink: stored uncompressed.
		noise := make([]byte, 4096)
		for i := range noise {
			noise[i] = byte(i*7919>>3) ^ byte(i*31)
		}
		raw := f.Append(nil, noise)
		if Compression(raw[4]) != CompressNone && len(raw) >= len(noise) {
			t.Errorf("%v: incompressible payload stored as %v in %d bytes", c, Compression(raw[4]), len(raw))
		}
	}
}

// A corrupt or unknown frame is an error that says what is wrong, with no
// records (not garbage ones).
func TestCorruptFrameIsRejected(t *testing.T) {
	body, _ := payload(200)
	for _, c := range []Compression{CompressS2, CompressZstd} {
		f, _ := NewFramer(c)
		frame := f.Append(nil, body)
		bad := bytes.Clone(frame)
		for i := len(bad) / 3; i < len(bad)/3+64; i++ {
			bad[i] ^= 0x5a
		}
		recs, err := Decode(bad)
		if err == nil || !strings.Contains(err.Error(), "corrupt batch ("+c.String()+")") || len(recs) != 0 {
			t.Errorf("%v: Decode(corrupt) = %d records, %v", c, len(recs), err)
		}
		recs, err = Decode(frame[:len(frame)/2])
		if err == nil || len(recs) != 0 {
			t.Errorf("%v: Decode(truncated) = %d records, %v", c, len(recs), err)
		}
	}
	// One byte of a literal, which S2 alone would not notice, and a
	// payload stored uncompressed: the checksum tells.
	for _, c := range []Compression{CompressS2, CompressNone} {
		f, _ := NewFramer(c)
		frame := f.Append(nil, body)
		i := bytes.Index(frame, []byte("RayWorkerWrapper")) // the first time, a literal
		frame[i+3] ^= 0x01
		if recs, err := Decode(frame); err == nil || !strings.Contains(err.Error(), "checksum") || len(recs) != 0 {
			t.Errorf("%v: Decode(one byte flipped) = %d records, %v", c, len(recs), err)
		}
	}
	if _, err := Decode([]byte{frameMagic, 'F', 'L', 3, 0, 0, 0, 0, 0, '{', '}'}); err == nil || !strings.Contains(err.Error(), "format 3") {
		t.Errorf("Decode(format 3) error = %v", err)
	}
	if _, err := Decode([]byte{frameMagic, 'F', 'L', 2, 9, 0, 0, 0, 0, '{', '}'}); err == nil || !strings.Contains(err.Error(), "unknown") {
		t.Errorf("Decode(compression 9) error = %v", err)
	}
}

// The stream stores what the issue asked for: a batch of the shipper's
// benchmark kind of records takes a fraction of format 1's bytes.
func TestFrameIsLeanerThanFormat1(t *testing.T) {
	body, recs := payload(2000)
	var v1 []byte
	for i := range recs {
		v1 = AppendRecord(v1, &recs[i])
	}
	f, _ := NewFramer(CompressS2)
	frame := f.Append(nil, body)
	t.Logf("format 1: %d bytes; format 2 payload %d, s2 frame %d", len(v1), len(body), len(frame))
	if len(body) > len(v1)*3/4 || len(frame) > len(v1)/5 {
		t.Errorf("format 2: payload %d, frame %d bytes for %d of format 1", len(body), len(frame), len(v1))
	}
}

// BenchmarkFrame is the publisher's CPU per batch: framing a 768 KiB
// payload (the shipper's batch size) with each compression.
//
//	go test ./transport -run '^$' -bench Frame
func BenchmarkFrame(b *testing.B) {
	body, _ := payload(6000)
	body = body[:min(len(body), 768<<10)]
	for _, c := range []Compression{CompressNone, CompressS2, CompressZstd} {
		b.Run(c.String(), func(b *testing.B) {
			f, _ := NewFramer(c)
			var out []byte
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				out = f.Append(out[:0], body)
			}
			b.ReportMetric(float64(len(out))/float64(len(body)), "ratio")
		})
	}
}
