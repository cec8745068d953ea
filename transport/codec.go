package transport

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/faultline/faultline/parsers"
)

// AppendRecord appends r as one JSON object and a newline to dst. The output
// is what encoding/json produces for parsers.Record (same keys, same
// omitempty rules, invalid UTF-8 replaced by U+FFFD) but written without
// reflection: the shipper encodes every record it sends, and this is most of
// its CPU budget per record. An Encoder writes the same bytes faster for a
// run of records sharing their origin.
func AppendRecord(dst []byte, r *parsers.Record) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, r.ID)
	dst = appendOrigin(dst, r)
	dst = appendTail(dst, r)
	dst = append(dst, `,"time":"`...)
	dst = r.Time.AppendFormat(dst, time.RFC3339Nano) // = time.Time.MarshalJSON for years 0-9999
	return appendEnd(dst, r)
}

// Encoder writes the payload of a format-2 batch (see the package doc): for
// a stream of records, the fields the records of a file share (cluster,
// node, container, file, file_id) go once into an origin line, and each
// record line has only its own fields: a 24-hex-digit ID as 16 base64
// characters, offset and line only where they do not follow from the
// record before, no zero time. The zero value is ready to use; not safe for
// concurrent use.
//
// A batch body is whatever the caller appends to: a body that starts empty,
// or that changed since the encoder's last Append (bytes cut or moved by
// the caller), starts with an origin line again. A record that takes the
// body past the capacity of the smallest empty body the encoder has seen
// carries its origin and position itself: the shipper sends such a record,
// when it does not fit the message, alone in a new body. Limit, when set,
// is that size instead of the capacity (bodies that start small and grow).
type Encoder struct {
	Limit int

	cluster, node, container, file, fileID string
	origin                                 []byte // the origin line
	originOK                               bool

	lastLen  int   // len(dst) after the last Append
	limit    int   // capacity of the smallest empty body seen (0: none yet)
	nextOff  int64 // the offset and line a record following the last one has
	nextLine int

	sec     int64    // Unix second of secText
	secText [19]byte // "2006-01-02T15:04:05" of sec in UTC
	secOK   bool
}

// Append appends r to the batch body dst.
func (e *Encoder) Append(dst []byte, r *parsers.Record) []byte {
	start := len(dst)
	if e.Limit > 0 {
		e.limit = e.Limit
	} else if start == 0 && cap(dst) > 0 && (e.limit == 0 || cap(dst) < e.limit) {
		e.limit = cap(dst)
	}
	whole := start == 0 || start != e.lastLen
	if !e.originOK || r.Cluster != e.cluster || r.Node != e.node || r.Container != e.container ||
		r.File != e.file || r.FileID != e.fileID {
		e.cluster, e.node, e.container, e.file, e.fileID = r.Cluster, r.Node, r.Container, r.File, r.FileID
		e.origin = append(append(append(e.origin[:0], `{"origin":{`...), appendOrigin(nil, r)[1:]...), "}}\n"...)
		e.originOK = true
		whole = true
	}
	dst = e.appendLean(dst, r, whole)
	if !whole && e.limit > 0 && len(dst) > e.limit {
		dst = e.appendLean(dst[:start], r, true)
	}
	e.lastLen = len(dst)
	e.nextOff = r.Offset + r.Size
	e.nextLine = r.Line + max(r.Lines, 1)
	return dst
}

// appendLean writes r's line, after the origin line when whole.
func (e *Encoder) appendLean(dst []byte, r *parsers.Record, whole bool) []byte {
	if whole {
		dst = append(dst, e.origin...)
	}
	if id, ok := compactID(r.ID); ok {
		dst = append(dst, `{"i":"`...)
		dst = append(dst, id[:]...)
		dst = append(dst, '"')
	} else {
		dst = append(dst, `{"id":`...)
		dst = appendString(dst, r.ID)
	}
	if whole || r.Offset != e.nextOff {
		dst = append(dst, `,"offset":`...)
		dst = appendInt(dst, r.Offset)
	}
	if r.Size != 0 {
		dst = append(dst, `,"size":`...)
		dst = appendInt(dst, r.Size)
	}
	if whole || r.Line != e.nextLine {
		dst = append(dst, `,"line":`...)
		dst = appendInt(dst, int64(r.Line))
	}
	if r.Lines != 0 {
		dst = append(dst, `,"lines":`...)
		dst = appendInt(dst, int64(r.Lines))
	}
	if !r.Time.IsZero() {
		dst = append(dst, `,"time":"`...)
		dst = e.appendTime(dst, r.Time)
		dst = append(dst, '"')
	}
	return appendStreamText(dst, r)
}

// compactID is a record ID of 24 lower-case hex digits (parsers.RecordID)
// as the base64 (URL alphabet, unpadded) of its 12 bytes.
func compactID(id string) (out [16]byte, ok bool) {
	if len(id) != 24 {
		return out, false
	}
	var raw [12]byte
	bad := byte(0)
	for i := range raw {
		hi, lo := hexValue[id[2*i]], hexValue[id[2*i+1]]
		bad |= hi | lo
		raw[i] = hi<<4 | lo&15
	}
	if bad > 15 {
		return out, false
	}
	base64.RawURLEncoding.Encode(out[:], raw[:])
	return out, true
}

// hexValue is the value of a lower-case hex digit, 0xff for other bytes.
var hexValue = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for i, c := range hexDigits {
		t[c] = byte(i)
	}
	return t
}()

// appendTime is Time.AppendFormat(RFC3339Nano) with the whole second of UTC
// times remembered: records of a file come many per second.
func (e *Encoder) appendTime(dst []byte, t time.Time) []byte {
	if t.Location() != time.UTC {
		return t.AppendFormat(dst, time.RFC3339Nano)
	}
	sec := t.Unix()
	if e.secOK && sec == e.sec {
		dst = append(dst, e.secText[:]...)
		return appendFracZ(dst, t.Nanosecond())
	}
	n := len(dst)
	dst = t.AppendFormat(dst, time.RFC3339Nano)
	if out := dst[n:]; len(out) >= 20 && out[4] == '-' && (out[19] == '.' || out[19] == 'Z') {
		copy(e.secText[:], out[:19])
		e.sec, e.secOK = sec, true
	}
	return dst
}

// appendFracZ writes the end of an RFC3339Nano UTC time after the seconds:
// ".fffffffff" without trailing zeros (nothing when ns is 0), then "Z".
func appendFracZ(dst []byte, ns int) []byte {
	if ns == 0 {
		return append(dst, 'Z')
	}
	var b [11]byte
	b[0] = '.'
	u := uint32(ns)
	for k := 7; k >= 1; k -= 2 { // b[2:10] in pairs, b[1] last
		q := u / 100
		d := (u - q*100) * 2
		b[k+1], b[k+2] = digitPairs[d], digitPairs[d+1]
		u = q
	}
	b[1] = byte('0' + u)
	n := 10
	for b[n-1] == '0' {
		n--
	}
	b[n] = 'Z'
	return append(dst, b[:n+1]...)
}

// appendOrigin writes the fields from "cluster" to "file_id".
func appendOrigin(dst []byte, r *parsers.Record) []byte {
	dst = append(dst, `,"cluster":`...)
	dst = appendString(dst, r.Cluster)
	dst = append(dst, `,"node":`...)
	dst = appendString(dst, r.Node)
	if r.Container != "" {
		dst = append(dst, `,"container":`...)
		dst = appendString(dst, r.Container)
	}
	dst = append(dst, `,"file":`...)
	dst = appendString(dst, r.File)
	if r.FileID != "" {
		dst = append(dst, `,"file_id":`...)
		dst = appendString(dst, r.FileID)
	}
	return dst
}

// appendTail writes the fields from "offset" to "lines".
func appendTail(dst []byte, r *parsers.Record) []byte {
	dst = append(dst, `,"offset":`...)
	dst = appendInt(dst, r.Offset)
	if r.Size != 0 {
		dst = append(dst, `,"size":`...)
		dst = appendInt(dst, r.Size)
	}
	dst = append(dst, `,"line":`...)
	dst = appendInt(dst, int64(r.Line))
	if r.Lines != 0 {
		dst = append(dst, `,"lines":`...)
		dst = appendInt(dst, int64(r.Lines))
	}
	return dst
}

// appendInt is strconv.AppendInt(dst, v, 10), two digits at a time.
func appendInt(dst []byte, v int64) []byte {
	if v < 0 {
		return strconv.AppendInt(dst, v, 10)
	}
	var b [20]byte
	i := len(b)
	u := uint64(v)
	for u >= 100 {
		q := u / 100
		d := (u - q*100) * 2
		i -= 2
		b[i], b[i+1] = digitPairs[d], digitPairs[d+1]
		u = q
	}
	if u >= 10 {
		i -= 2
		b[i], b[i+1] = digitPairs[u*2], digitPairs[u*2+1]
	} else {
		i--
		b[i] = byte('0' + u)
	}
	return append(dst, b[i:]...)
}

const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

// appendEnd ends the record after its time.
func appendEnd(dst []byte, r *parsers.Record) []byte {
	return appendStreamText(append(dst, '"'), r)
}

// appendStreamText writes the last fields, stream and text, and the
// record's end.
func appendStreamText(dst []byte, r *parsers.Record) []byte {
	if r.Stream != "" {
		dst = append(dst, `,"stream":`...)
		dst = appendString(dst, r.Stream)
	}
	dst = append(dst, `,"text":`...)
	dst = appendString(dst, r.Text)
	return append(dst, "}\n"...)
}

const hexDigits = "0123456789abcdef"

// safeASCII[b] is true for ASCII bytes copied as they are.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// load64 reads s[i:i+8] as a little-endian word (the compiler merges the loads).
func load64(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// needsEscape reports whether any byte of the word x is not safe ASCII: a
// control byte (< 0x20), a byte >= 0x80, '"', '\\', '<', '>' or '&'. Each test
// is the classic "has a zero/less-than byte" trick, exact for "any byte":
// a borrow only starts at a byte that matches. '<' (0x3c) and '>' (0x3e)
// differ only in bit 1, '"' (0x22) and '&' (0x26) only in bit 2, so one
// comparison covers each pair.
func needsEscape(x uint64) bool {
	ctl := (x - 0x20*lsb) & ^x
	ltgt := (x | 0x02*lsb) ^ 0x3e*lsb
	qamp := (x | 0x04*lsb) ^ 0x26*lsb
	bs := x ^ 0x5c*lsb
	m := ctl | (ltgt-lsb)&^ltgt | (qamp-lsb)&^qamp | (bs-lsb)&^bs | x
	return m&msb != 0
}

// appendString writes s as a JSON string with encoding/json's escaping
// (HTML-safe, U+2028/2029 escaped, invalid UTF-8 as U+FFFD). Runs of safe
// ASCII, nearly all of a log line, are skipped eight bytes at a time and
// copied at once.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; ; {
		for i+8 <= len(s) && !needsEscape(load64(s, i)) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if safeASCII[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Decode splits a message body into records: a format-2 frame (compressed
// or not) or a format-1 body (NDJSON of whole records). Empty lines are
// skipped; a line that is not a record is an error naming its position in
// the message, with the records before it returned. A frame that cannot be
// read (unknown version or compression, corrupt data) is an error saying so
// and gives no records.
func Decode(body []byte) ([]parsers.Record, error) {
	if len(body) > 0 && body[0] == frameMagic {
		payload, err := unframe(body)
		if err != nil {
			return nil, err
		}
		return decodeLines(payload, true)
	}
	return decodeLines(body, false)
}

// leanRecord is a record line of format 2: fields absent from the line keep
// what the origin line and the record before gave them.
type leanRecord struct {
	*parsers.Record
	I string `json:"i"`
}

type originLine struct {
	Origin struct {
		Cluster   string `json:"cluster"`
		Node      string `json:"node"`
		Container string `json:"container"`
		File      string `json:"file"`
		FileID    string `json:"file_id"`
	} `json:"origin"`
}

func decodeLines(body []byte, lean bool) ([]parsers.Record, error) {
	var out []parsers.Record
	var origin, next parsers.Record // next: origin with the offset and line a following record has
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if !lean {
			var r parsers.Record
			if err := json.Unmarshal(line, &r); err != nil {
				return out, fmt.Errorf("transport: record %d of message: %w", n, err)
			}
			out = append(out, r)
			continue
		}
		if bytes.HasPrefix(line, []byte(`{"origin":`)) {
			var o originLine
			if err := json.Unmarshal(line, &o); err != nil {
				return out, fmt.Errorf("transport: origin line %d of message: %w", n, err)
			}
			origin = parsers.Record{Cluster: o.Origin.Cluster, Node: o.Origin.Node, Container: o.Origin.Container,
				File: o.Origin.File, FileID: o.Origin.FileID}
			next = origin
			continue
		}
		r := next
		lr := leanRecord{Record: &r}
		if err := json.Unmarshal(line, &lr); err != nil {
			return out, fmt.Errorf("transport: record %d of message: %w", n, err)
		}
		if lr.I != "" {
			raw, err := base64.RawURLEncoding.DecodeString(lr.I)
			if err != nil || len(raw) != 12 {
				return out, fmt.Errorf("transport: record %d of message: bad compact id %q", n, lr.I)
			}
			r.ID = hex.EncodeToString(raw)
		}
		out = append(out, r)
		next = origin
		next.Offset, next.Line = r.Offset+r.Size, r.Line+max(r.Lines, 1)
	}
	return out, nil
}

// TruncateMarker ends the text of a record cut to fit one message.
const TruncateMarker = " …[truncated by shipper]"

// originSlack bounds how much longer the origin line and a record line of
// format 2 are than the record written whole (format 1): the origin line's
// wrapper ({"origin":{...}} and a newline) and the "offset" and "line"
// fields, always written after an origin line.
const originSlack = 64

// FitText returns text cut so that the record's encoding stays within limit
// bytes (the rest of the record takes overhead bytes). The cut is on a UTF-8
// boundary and followed by TruncateMarker. Escaping can make the encoding up
// to six times the raw size, so the budget is computed on the escaped size.
func FitText(text string, overhead, limit int) (string, bool) {
	budget := limit - overhead - len(TruncateMarker) - 2
	if budget < 0 {
		budget = 0
	}
	if len(text) <= budget/6 || escapedLen(text) <= limit-overhead-2 {
		return text, false
	}
	// Walk runes until the escaped size would exceed the budget.
	n, i := 0, 0
	for i < len(text) {
		c, size := utf8.DecodeRuneInString(text[i:])
		w := size
		switch {
		case c == utf8.RuneError && size == 1:
			w = 6
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			w = 6
		case c == '"' || c == '\\':
			w = 2
		case c == '\u2028' || c == '\u2029':
			w = 6
		}
		if n+w > budget {
			break
		}
		n += w
		i += size
	}
	return text[:i] + TruncateMarker, true
}

func escapedLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if (c == utf8.RuneError && size == 1) || c == '\u2028' || c == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// FitRecord cuts r.Text (with TruncateMarker) so that an Encoder writes r
// in at most limit bytes, even as the first record of a body (after its
// origin line). It reports whether it cut.
func FitRecord(r *parsers.Record, limit int) bool {
	// A whole record of format 1 is at most originSlack bytes shorter than
	// an origin line and a record line of format 2.
	limit -= originSlack
	n := len(AppendRecord(nil, r))
	if n <= limit {
		return false
	}
	overhead := n - len(appendString(nil, r.Text))
	var cut bool
	r.Text, cut = FitText(r.Text, overhead, limit)
	return cut
}
