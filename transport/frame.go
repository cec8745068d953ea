package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// A format-2 body is a frame: frameMagic, 'F', 'L', the format version (2),
// the compression, the CRC-32C of the payload (4 bytes, big-endian), then
// the payload (an Encoder's lines), compressed or not. frameMagic cannot
// start a format-1 body, which is JSON text. The checksum is what tells a
// corrupt S2 block, which may decompress without an error.
const (
	frameMagic   = 0xFA
	frameVersion = 2
	frameHeader  = 9
	// maxPayload bounds a decompressed payload: NATS messages are at most
	// 64 MiB, and a payload is stored as is when compression does not help.
	maxPayload = 64 << 20
)

// Compression is how a batch payload is compressed.
type Compression byte

// The compressions of a frame. S2 is the default: it costs the shipper the
// least CPU per byte saved; zstd stores less for more CPU.
const (
	CompressNone Compression = 0
	CompressS2   Compression = 1
	CompressZstd Compression = 2
)

func (c Compression) String() string {
	switch c {
	case CompressNone:
		return "none"
	case CompressS2:
		return "s2"
	case CompressZstd:
		return "zstd"
	}
	return fmt.Sprintf("compression(%d)", byte(c))
}

// ParseCompression reads "none", "s2" or "zstd".
func ParseCompression(s string) (Compression, error) {
	for _, c := range []Compression{CompressNone, CompressS2, CompressZstd} {
		if s == c.String() {
			return c, nil
		}
	}
	return 0, fmt.Errorf("compression %q: want none, s2 or zstd", s)
}

// Framer writes format-2 frames with one compression. Safe for concurrent
// use.
type Framer struct {
	c    Compression
	zenc *zstd.Encoder
}

// NewFramer returns a Framer compressing with c.
func NewFramer(c Compression) (*Framer, error) {
	f := &Framer{c: c}
	switch c {
	case CompressNone, CompressS2:
	case CompressZstd:
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
			zstd.WithLowerEncoderMem(true))
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		f.zenc = enc
	default:
		return nil, fmt.Errorf("unknown %v", c)
	}
	return f, nil
}

// Append appends the frame of payload to dst. A payload that does not
// shrink is stored uncompressed (the header says so).
func (f *Framer) Append(dst, payload []byte) []byte {
	n := len(dst)
	dst = append(dst, frameMagic, 'F', 'L', frameVersion, byte(f.c))
	dst = binary.BigEndian.AppendUint32(dst, crc32.Checksum(payload, castagnoli))
	switch f.c {
	case CompressS2:
		need := s2.MaxEncodedLen(len(payload))
		if need < 0 {
			break
		}
		if cap(dst)-len(dst) < need {
			dst = append(dst, make([]byte, need)...)[:len(dst)]
		}
		enc := s2.Encode(dst[len(dst):len(dst)+need], payload)
		if len(enc) < len(payload) {
			return dst[:len(dst)+len(enc)]
		}
	case CompressZstd:
		out := f.zenc.EncodeAll(payload, dst)
		if len(out)-len(dst) < len(payload) {
			return out
		}
		dst = out[:len(dst)]
	}
	dst[n+4] = byte(CompressNone)
	return append(dst, payload...)
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// unframe returns the payload of a format-2 frame, checked.
func unframe(body []byte) ([]byte, error) {
	payload, c, err := decompress(body)
	if err != nil {
		return nil, err
	}
	if crc32.Checksum(payload, castagnoli) != binary.BigEndian.Uint32(body[5:9]) {
		return nil, fmt.Errorf("transport: corrupt batch (%v): checksum mismatch", c)
	}
	return payload, nil
}

func decompress(body []byte) ([]byte, Compression, error) {
	if len(body) < frameHeader || body[1] != 'F' || body[2] != 'L' {
		return nil, 0, errors.New("transport: not a batch frame (bad header)")
	}
	if body[3] != frameVersion {
		return nil, 0, fmt.Errorf("transport: batch of format %d: this build reads formats 1 and 2", body[3])
	}
	c, data := Compression(body[4]), body[frameHeader:]
	switch c {
	case CompressNone:
		return data, c, nil
	case CompressS2:
		n, err := s2.DecodedLen(data)
		if err == nil && n > maxPayload {
			err = fmt.Errorf("%d bytes decompressed, more than %d", n, maxPayload)
		}
		var out []byte
		if err == nil {
			out, err = s2.Decode(nil, data)
		}
		if err != nil {
			return nil, c, fmt.Errorf("transport: corrupt batch (s2): %w", err)
		}
		return out, c, nil
	case CompressZstd:
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxPayload))
		if err != nil {
			return nil, c, fmt.Errorf("transport: zstd: %w", err)
		}
		defer dec.Close()
		out, err := dec.DecodeAll(data, nil)
		if err != nil {
			return nil, c, fmt.Errorf("transport: corrupt batch (zstd): %w", err)
		}
		return out, c, nil
	}
	return nil, c, fmt.Errorf("transport: batch compressed with unknown %v", c)
}
