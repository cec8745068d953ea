package parsers

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"time"
	"unicode/utf8"
)

// Format is the container framing of a log file.
type Format int

// Formats. The zero value asks the Reader (or Decoder) to detect the format
// from the first bytes it sees.
const (
	FormatAuto       Format = iota
	FormatPlain             // one line of text per line
	FormatDockerJSON        // Docker json-file: {"log":"...\n","stream":"stdout","time":"..."}
	FormatCRI               // CRI (containerd, CRI-O): <RFC3339Nano> <stream> <P|F> <text>
)

func (f Format) String() string {
	switch f {
	case FormatAuto:
		return "auto"
	case FormatPlain:
		return "plain"
	case FormatDockerJSON:
		return "docker-json"
	case FormatCRI:
		return "cri"
	}
	return "Format(" + strconv.Itoa(int(f)) + ")"
}

// DefaultMaxLineBytes bounds the text kept of one line; the rest is counted
// and replaced by a truncation marker, so one runaway line cannot exhaust
// memory. It is 8 KiB under 1 MiB so that a record of that size still fits
// a NATS message (1 MiB by default) with its labels: the shipper then sends
// the text offline reading sees, instead of cutting it once more.
const DefaultMaxLineBytes = 1<<20 - 8<<10

// frameHeadSize is how much of a file DetectFormat and the binary check look at.
const frameHeadSize = 4096

// DetectFormat guesses a file's framing from its first bytes (the first line
// is enough). It never fails: anything unrecognised is plain text.
func DetectFormat(head []byte) Format {
	if len(head) > frameHeadSize {
		head = head[:frameHeadSize]
	}
	// A file may start with blank lines (an earlier rotation cut, an editor);
	// they say nothing about the format.
	head = bytes.TrimLeft(head, " \t\r\n")
	first := head
	if i := bytes.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	if len(first) == 0 {
		return FormatPlain
	}
	if first[0] == '{' {
		// moby always writes "log" first; other key orders come from
		// hand-made or re-encoded files, which we also accept when both
		// docker keys are present (a 16 KiB partial may hide "stream" past
		// the head, hence the prefix test first).
		if bytes.HasPrefix(first, []byte(`{"log":`)) ||
			(bytes.Contains(first, []byte(`"log":`)) && bytes.Contains(first, []byte(`"stream":`))) {
			return FormatDockerJSON
		}
		return FormatPlain
	}
	if _, _, _, _, ok := splitCRI(first); ok {
		return FormatCRI
	}
	return FormatPlain
}

// Decoder is the per-line half of Reader, for callers that split physical
// lines themselves (the shipper's tailer). It removes the container framing,
// reassembles json-file partial records and CRI "P" records per stream and
// cleans the text. A Decoder is not safe for concurrent use.
type Decoder struct {
	format       Format
	maxLineBytes int
	partials     []*partialLine // per stream, in order of first appearance (few streams)
	scratch      []byte         // decoded text of the current record
	// The last whole second parsed by logTime ("2006-01-02T15:04:05") and
	// its time: consecutive records mostly share it.
	sec     [19]byte
	secTime time.Time
	secOK   bool
	ascii   bool  // the last text finish returned is plain ASCII (it had nothing to clean)
	shown   int32 // bytes of printable colour-code renderings the last finish removed
}

// partialLine is a line being reassembled from several records of one stream.
type partialLine struct {
	stream  string
	active  bool
	offset  int64
	size    int64
	num     int
	time    time.Time
	text    []byte
	dropped int64 // text bytes beyond maxLineBytes, counted not kept
}

// NewDecoder returns a Decoder for f. FormatAuto detects the format from the
// first line given to Decode.
func NewDecoder(f Format) *Decoder {
	return &Decoder{format: f, maxLineBytes: DefaultMaxLineBytes}
}

// Format returns the decoder's format (FormatAuto until the first Decode).
func (d *Decoder) Format() Format { return d.format }

// LineLimit is the long-line policy, the same for every reader: the raw
// bytes of one physical line that are kept (after the format is known). A
// longer line is cut there, the rest counted, and its text ends in
// " …[truncated N bytes]". The offline Reader and the shipper's tailer both
// keep this many bytes of a line and hand the count of the others to
// DecodeCut, so a long line gives the same text live and offline.
func (d *Decoder) LineLimit() int {
	switch d.format {
	case FormatDockerJSON:
		// A json-file record holds at most 16 KiB of text, escaped up to
		// six times: a valid record is never near this. Long lines come
		// as 16 KiB partials, reassembled up to maxLineBytes.
		return max(d.maxLineBytes, 256<<10)
	case FormatCRI:
		return d.maxLineBytes + 64 // the "<time> <stream> <tag> " header
	}
	return d.maxLineBytes
}

// Detect sets the format from a file's first bytes if it is still
// FormatAuto (a reader calls it before LineLimit, which depends on it).
func (d *Decoder) Detect(head []byte) Format {
	if d.format == FormatAuto && len(head) > 0 {
		d.format = DetectFormat(head)
	}
	return d.format
}

// DecodeCut is Decode of a line of which only the head raw was kept:
// dropped more bytes of it (newline excluded) were skipped by the caller.
// raw longer than LineLimit is cut here, so a caller may also pass a whole
// long line.
func (d *Decoder) DecodeCut(raw []byte, offset, size int64, num int, dropped int64) (Line, bool, error) {
	return d.decode(raw, offset, size, num, dropped)
}

// Decode frames one physical line. raw is the line's bytes (a trailing "\n"
// is allowed and ignored), offset/size/num locate it in the file (size counts
// every byte of the file the line consumed, newline included). It returns
// ok=false when the record is a partial that is held until its stream's line
// completes. A non-nil error is a warning: the line is still returned (ok is
// true) with the raw bytes as its text.
func (d *Decoder) Decode(raw []byte, offset int64, size int64, num int) (Line, bool, error) {
	return d.decode(raw, offset, size, num, 0)
}

// decode is Decode with the count of raw bytes the caller had to drop from
// the end of an overlong physical line.
func (d *Decoder) decode(raw []byte, offset, size int64, num int, rawDropped int64) (Line, bool, error) {
	raw = bytes.TrimSuffix(raw, []byte{'\n'})
	if d.format == FormatAuto {
		d.format = DetectFormat(raw)
	}
	if lim := d.LineLimit(); len(raw) > lim {
		rawDropped += int64(len(raw) - lim)
		raw = raw[:lim]
	}
	switch d.format {
	case FormatDockerJSON:
		if rawDropped > 0 {
			return d.broken(raw, offset, size, num, rawDropped, "json-file", errors.New("record longer than the line limit"))
		}
		return d.decodeJSON(raw, offset, size, num)
	case FormatCRI:
		return d.decodeCRI(raw, offset, size, num, rawDropped)
	}
	text := d.finish(raw, rawDropped)
	l := Line{Offset: offset, Size: size, Num: num, Text: text, ascii: d.ascii, shown: d.shown}
	if rest, t, n := splitPastePrefixes(text); n > 0 {
		// A container tool's prefix (see paste.go): framing, not text.
		l.Text, l.Time, l.pasted = rest, t, int32(n)
	}
	return l, true, nil
}

// Flush returns a partial line still held (its stream never completed it),
// the one that started earliest first. Call it until ok is false at EOF or
// before following a rotated file.
func (d *Decoder) Flush() (Line, bool) {
	var first *partialLine
	for _, p := range d.partials {
		if p.active && (first == nil || p.offset < first.offset) {
			first = p
		}
	}
	if first == nil {
		return Line{}, false
	}
	return d.complete(first, nil), true
}

// PendingOffset reports the file offset of the earliest partial line still
// held: a tailer may persist offsets only below it.
func (d *Decoder) PendingOffset() (int64, bool) {
	var off int64
	found := false
	for _, p := range d.partials {
		if p.active && (!found || p.offset < off) {
			off, found = p.offset, true
		}
	}
	return off, found
}

func (d *Decoder) partialFor(stream string) *partialLine {
	for _, p := range d.partials {
		if p.stream == stream {
			return p
		}
	}
	p := &partialLine{stream: stream}
	d.partials = append(d.partials, p)
	return p
}

// add appends a record's text to the stream's partial line.
func (d *Decoder) add(p *partialLine, text []byte, offset, size int64, num int, t time.Time) {
	if !p.active {
		p.active = true
		p.offset, p.size, p.num, p.time = offset, 0, num, t
		p.text = p.text[:0]
		p.dropped = 0
	}
	p.size += size
	if room := d.maxLineBytes - len(p.text); room < len(text) {
		if room < 0 {
			room = 0
		}
		p.dropped += int64(len(text) - room)
		text = text[:room]
	}
	p.text = append(p.text, text...)
}

// complete turns a stream's partial line plus its last piece into a Line.
func (d *Decoder) complete(p *partialLine, last []byte) Line {
	dropped := p.dropped
	if room := d.maxLineBytes - len(p.text); room < len(last) {
		if room < 0 {
			room = 0
		}
		dropped += int64(len(last) - room)
		last = last[:room]
	}
	p.text = append(p.text, last...)
	l := Line{Offset: p.offset, Size: p.size, Num: p.num, Stream: p.stream, Time: p.time, Text: d.finish(p.text, dropped)}
	l.ascii = d.ascii
	p.active = false
	if cap(p.text) > 64<<10 {
		p.text = nil // do not pin a huge buffer after a rare long line
	}
	return l
}

func (d *Decoder) broken(raw []byte, offset, size int64, num int, rawDropped int64, kind string, err error) (Line, bool, error) {
	l := Line{Offset: offset, Size: size, Num: num, Text: d.finish(raw, rawDropped), broken: true}
	l.ascii = d.ascii
	return l, true, fmt.Errorf("line %d (offset %d): broken %s record: %w", num, offset, kind, err)
}

// --- Docker json-file ---

type dockerJSONRecord struct {
	Log    *string `json:"log"`
	Stream string  `json:"stream"`
	Time   string  `json:"time"`
}

func (d *Decoder) decodeJSON(raw []byte, offset, size int64, num int) (Line, bool, error) {
	text, stream, ts, ok := d.fastJSON(raw)
	if !ok {
		var rec dockerJSONRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return d.broken(raw, offset, size, num, 0, "json-file", err)
		}
		if rec.Log == nil {
			return d.broken(raw, offset, size, num, 0, "json-file", errors.New(`no "log" field`))
		}
		d.scratch = append(d.scratch[:0], *rec.Log...)
		text, stream, ts = d.scratch, internStream(rec.Stream), []byte(rec.Time)
	}
	t := d.logTime(ts)
	p := d.partialFor(stream)
	if n := len(text); n == 0 || text[n-1] != '\n' {
		// moby appends "\n" only to the last piece of a line: this is a
		// 16 KiB partial, continued by the next record of the same stream.
		d.add(p, text, offset, size, num, t)
		return Line{}, false, nil
	}
	text = text[:len(text)-1]
	if p.active {
		p.size += size
		return d.complete(p, text), true, nil
	}
	// Common case: a whole line in one record, no copy into the partial.
	dropped := int64(0)
	if len(text) > d.maxLineBytes {
		dropped = int64(len(text) - d.maxLineBytes)
		text = text[:d.maxLineBytes]
	}
	l := Line{Offset: offset, Size: size, Num: num, Stream: stream, Time: t, Text: d.finish(text, dropped)}
	l.ascii = d.ascii
	return l, true, nil
}

// fastJSON decodes the exact shape moby writes, {"log":"..","stream":"..","time":".."},
// into d.scratch. Anything else (attrs, other key order, surrogate escapes,
// invalid JSON) returns ok=false so that encoding/json decides.
func (d *Decoder) fastJSON(raw []byte) (text []byte, stream string, ts []byte, ok bool) {
	const head = `{"log":"`
	if !bytes.HasPrefix(raw, []byte(head)) {
		return nil, "", nil, false
	}
	buf := d.scratch[:0]
	i := len(head)
	q := -1 // index of the first '"' at or after i (-1: not searched yet)
	for {
		// Find the closing quote, then copy plain runs between escapes;
		// both searches are vectorised and a log line has few escapes
		// (usually just the final \n). The quote found stays valid until an
		// escape consumes it (\").
		if q < i {
			k := bytes.IndexByte(raw[i:], '"')
			if k < 0 {
				return nil, "", nil, false
			}
			q = i + k
		}
		bs := bytes.IndexByte(raw[i:q], '\\')
		if bs < 0 {
			buf = append(buf, raw[i:q]...)
			i = q + 1
			break
		}
		j := i + bs
		buf = append(buf, raw[i:j]...)
		if j+1 >= len(raw) {
			return nil, "", nil, false
		}
		switch raw[j+1] {
		case 'n':
			buf = append(buf, '\n')
		case 'r':
			buf = append(buf, '\r')
		case 't':
			buf = append(buf, '\t')
		case '"', '\\', '/':
			buf = append(buf, raw[j+1])
		case 'b':
			buf = append(buf, '\b')
		case 'f':
			buf = append(buf, '\f')
		case 'u':
			if j+6 > len(raw) {
				return nil, "", nil, false
			}
			v, ok := hex4(raw[j+2 : j+6])
			if !ok || (v >= 0xD800 && v < 0xE000) {
				return nil, "", nil, false // surrogates: let encoding/json pair them
			}
			buf = utf8.AppendRune(buf, rune(v))
			i = j + 6
			continue
		default:
			return nil, "", nil, false
		}
		i = j + 2
	}
	d.scratch = buf
	rest := raw[i:]
	const streamKey = `,"stream":"`
	if !bytes.HasPrefix(rest, []byte(streamKey)) {
		return nil, "", nil, false
	}
	rest = rest[len(streamKey):]
	q = bytes.IndexByte(rest, '"')
	if q < 0 || bytes.IndexByte(rest[:q], '\\') >= 0 {
		return nil, "", nil, false
	}
	stream = internStreamBytes(rest[:q])
	rest = rest[q+1:]
	const timeKey = `,"time":"`
	if !bytes.HasPrefix(rest, []byte(timeKey)) {
		return nil, "", nil, false
	}
	rest = rest[len(timeKey):]
	q = bytes.IndexByte(rest, '"')
	if q < 0 || string(rest[q:]) != `"}` {
		return nil, "", nil, false
	}
	return buf, stream, rest[:q], true
}

func hex4(b []byte) (uint32, bool) {
	var v uint32
	for _, c := range b {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | uint32(c)
	}
	return v, true
}

func internStream(s string) string {
	switch s {
	case "stdout":
		return "stdout"
	case "stderr":
		return "stderr"
	}
	return s
}

func internStreamBytes(b []byte) string {
	switch string(b) { // no allocation for the comparison
	case "stdout":
		return "stdout"
	case "stderr":
		return "stderr"
	}
	return string(b)
}

// parseLogTime parses the RFC3339Nano times of json-file and CRI. The fixed
// UTC layout moby and containerd write is parsed by hand (time.Parse costs
// more than the rest of the framing); anything else goes to time.Parse.
// An unparsable time is zero: the event then takes its time from the line.
func parseLogTime[S ~string | ~[]byte](s S) time.Time {
	if t, ok := parseUTCFast(s); ok {
		return t
	}
	t, err := time.Parse(time.RFC3339Nano, string(s))
	if err != nil {
		return time.Time{}
	}
	return t.UTC() // one zone for all container times, as Docker writes them
}

// logTime is parseLogTime with the whole second of the previous call
// remembered: records of one file come in time order, many per second, so
// most times differ from the last one only in their fraction.
func (d *Decoder) logTime(s []byte) time.Time {
	if d.secOK && len(s) >= 20 && string(s[:19]) == string(d.sec[:]) {
		if nsec, ok := fracNanos(s[19:]); ok {
			return d.secTime.Add(time.Duration(nsec))
		}
	}
	t, ok := parseUTCFast(s)
	if !ok {
		return parseLogTime(s)
	}
	copy(d.sec[:], s[:19])
	d.secTime = t.Add(-time.Duration(t.Nanosecond()))
	d.secOK = true
	return t
}

// fracNanos parses the end of a fixed-layout UTC time after the seconds:
// "Z" or ".f{1,9}Z".
func fracNanos[S ~string | ~[]byte](s S) (int, bool) {
	if len(s) == 0 || s[len(s)-1] != 'Z' {
		return 0, false
	}
	frac := s[:len(s)-1]
	if len(frac) == 0 {
		return 0, true
	}
	if frac[0] != '.' || len(frac) < 2 || len(frac) > 10 {
		return 0, false
	}
	n := 0
	for i := 1; i < len(frac); i++ {
		c := frac[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	for k := len(frac) - 1; k < 9; k++ {
		n *= 10
	}
	return n, true
}

func parseUTCFast[S ~string | ~[]byte](s S) (time.Time, bool) {
	// 2006-01-02T15:04:05[.fffffffff]Z
	if len(s) < 20 || s[len(s)-1] != 'Z' || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' {
		return time.Time{}, false
	}
	num := func(a, b int) (int, bool) {
		n := 0
		for i := a; i < b; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			n = n*10 + int(c-'0')
		}
		return n, true
	}
	year, ok1 := num(0, 4)
	month, ok2 := num(5, 7)
	day, ok3 := num(8, 10)
	hour, ok4 := num(11, 13)
	minute, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || sec > 59 {
		return time.Time{}, false
	}
	nsec, ok := fracNanos(s[19:])
	if !ok {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, minute, sec, nsec, time.UTC)
	if t.Day() != day { // Feb 30 and friends: let time.Parse reject it
		return time.Time{}, false
	}
	return t, true
}

// --- CRI ---

// splitCRI splits "<time> <stream> <tags> <content>". The content may be
// empty ("<time> stdout F" with nothing after the tag is what an empty line
// looks like).
func splitCRI(line []byte) (ts []byte, stream string, partial bool, content []byte, ok bool) {
	sp := bytes.IndexByte(line, ' ')
	if sp < 20 || sp > 40 || line[4] != '-' || line[10] != 'T' || line[0] < '0' || line[0] > '9' {
		return nil, "", false, nil, false
	}
	tsb := line[:sp]
	rest := line[sp+1:]
	switch {
	case bytes.HasPrefix(rest, []byte("stdout ")):
		stream = "stdout"
	case bytes.HasPrefix(rest, []byte("stderr ")):
		stream = "stderr"
	default:
		return nil, "", false, nil, false
	}
	rest = rest[7:]
	end := bytes.IndexByte(rest, ' ')
	tags := rest
	if end >= 0 {
		tags, content = rest[:end], rest[end+1:]
	}
	// Only the first of ":"-separated tags is defined (kubelet's parser).
	if c := bytes.IndexByte(tags, ':'); c >= 0 {
		tags = tags[:c]
	}
	switch string(tags) {
	case "P":
		partial = true
	case "F":
	default:
		return nil, "", false, nil, false
	}
	return tsb, stream, partial, content, true
}

func (d *Decoder) decodeCRI(raw []byte, offset, size int64, num int, rawDropped int64) (Line, bool, error) {
	ts, stream, isPartial, content, ok := splitCRI(raw)
	if !ok {
		return d.broken(raw, offset, size, num, rawDropped, "CRI", errors.New("not <time> <stream> <P|F> <text>"))
	}
	t := d.logTime(ts)
	p := d.partialFor(stream)
	if isPartial {
		d.add(p, content, offset, size, num, t)
		if rawDropped > 0 {
			p.dropped += rawDropped
		}
		return Line{}, false, nil
	}
	if p.active {
		p.size += size
		p.dropped += rawDropped
		return d.complete(p, content), true, nil
	}
	dropped := rawDropped
	if len(content) > d.maxLineBytes {
		dropped += int64(len(content) - d.maxLineBytes)
		content = content[:d.maxLineBytes]
	}
	l := Line{Offset: offset, Size: size, Num: num, Stream: stream, Time: t, Text: d.finish(content, dropped)}
	l.ascii = d.ascii
	return l, true, nil
}

// --- text cleanup ---

// finish cleans a line's text and returns it as a string: ANSI escape
// sequences removed, trailing CR/LF trimmed, only the last of several
// "\r"-separated updates kept (tqdm bars), invalid UTF-8 replaced, and a
// truncation marker when bytes were dropped. b may be modified in place.
func (d *Decoder) finish(b []byte, dropped int64) string {
	d.ascii = dropped == 0 && plainText(b)
	d.shown = 0
	if d.ascii {
		return string(b)
	}
	if dropped > 0 {
		n := len(b)
		b = trimIncompleteRune(b)
		dropped += int64(n - len(b))
	}
	var shown int
	b, shown = stripEscapes(b)
	d.shown = int32(shown)
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	// IndexByte first: it is vectorised, LastIndexByte is not, and most
	// lines have no CR at all.
	if bytes.IndexByte(b, '\r') >= 0 {
		b = b[bytes.LastIndexByte(b, '\r')+1:]
	}
	// A json-file record written by something other than moby may hold a
	// newline inside its text; a Line never does (records join lines with
	// "\n"), so it becomes a space.
	if bytes.IndexByte(b, '\n') >= 0 {
		for i, c := range b {
			if c == '\n' {
				b[i] = ' '
			}
		}
	}
	var s string
	if utf8.Valid(b) {
		s = string(b)
	} else {
		s = string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
	}
	if dropped > 0 {
		s += " …[truncated " + strconv.FormatInt(dropped, 10) + " bytes]"
	}
	return s
}

// plainText reports whether finish has nothing to do on b: pure ASCII
// without CR, LF or ESC, and no '[' that may start a rendered or bare colour
// code. It is one pass over b, 8 bytes at a time; a word holding a control
// byte, a non-ASCII byte or a '[' is looked at byte by byte. A false answer
// only means that the full cleanup runs.
func plainText(b []byte) bool {
	const (
		ones  = 0x0101010101010101
		lows  = 0x7f7f7f7f7f7f7f7f
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(b); i += 8 {
		v := binary.LittleEndian.Uint64(b[i:])
		if v&highs != 0 {
			return false // non-ASCII
		}
		// Exact masks (no carry crosses a byte of an ASCII word): the high
		// bit of each byte below 0x20, and of each '['.
		ctrl := ^(v + 0x60*ones) & highs
		t := v ^ ('[' * ones)
		brk := ^(((t & lows) + lows) | t) & highs
		for m := ctrl | brk; m != 0; m &= m - 1 {
			if !plainByte(b, i+bits.TrailingZeros64(m)>>3) {
				return false
			}
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; (c < 0x20 || c == '[' || c >= 0x80) && !plainByte(b, i) {
			return false
		}
	}
	return true
}

// plainByte tells whether the control byte, '[' or non-ASCII byte at b[i]
// leaves the text plain.
func plainByte(b []byte, i int) bool {
	c := b[i]
	switch {
	case c >= 0x80 || c == 0x1b || c == '\r' || c == '\n':
		return false
	case c == '[':
		if i > 0 && b[i-1] == '^' {
			return false
		}
		if i >= 4 && string(b[i-4:i]) == "#033" {
			return false
		}
		return bareSGRLen(b[i:]) == 0
	}
	return true
}

// trimIncompleteRune drops a multi-byte rune cut by truncation, so that the
// cut does not show up as U+FFFD.
func trimIncompleteRune(b []byte) []byte {
	for k := 1; k <= utf8.UTFMax-1 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			return b
		}
		if utf8.RuneStart(c) {
			if !utf8.FullRune(b[len(b)-k:]) {
				return b[:len(b)-k]
			}
			return b
		}
	}
	return b
}

// stripEscapes removes terminal escape sequences: real ESC sequences (CSI such
// as colours and cursor moves, OSC, two-byte escapes) and the printable
// renderings of colour codes that survive copy/paste and syslog: "^[[1;36m",
// "#033[0m" and "[1;36m" with the ESC lost. It works in place, and says
// how many bytes of those renderings (shown, unlike real escapes) it removed.
func stripEscapes(b []byte) ([]byte, int) {
	if bytes.IndexByte(b, 0x1b) < 0 && !bytes.Contains(b, []byte("^[[")) &&
		!bytes.Contains(b, []byte("#033[")) && !hasBareSGR(b) {
		return b, 0
	}
	shown := 0
	out := b[:0]
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c == 0x1b:
			i = skipEscape(b, i+1)
			continue
		case c == '^' && i+2 < len(b) && b[i+1] == '[' && b[i+2] == '[':
			if n := csiLen(b[i+3:]); n > 0 {
				i += 3 + n
				shown += 3 + n
				continue
			}
		case c == '#' && bytes.HasPrefix(b[i:], []byte("#033[")):
			if n := csiLen(b[i+5:]); n > 0 {
				i += 5 + n
				shown += 5 + n
				continue
			}
		case c == '[':
			if n := bareSGRLen(b[i:]); n > 0 {
				i += n
				shown += n
				continue
			}
		}
		out = append(out, c)
		i++
	}
	return out, shown
}

// skipEscape returns the index after the escape sequence whose ESC is at i-1.
func skipEscape(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '[': // CSI: parameters, intermediates, one final byte 0x40-0x7E
		j := i + 1
		for j < len(b) && b[j] >= 0x20 && b[j] < 0x40 {
			j++
		}
		if j < len(b) && b[j] >= 0x40 && b[j] <= 0x7e {
			return j + 1
		}
		return j
	case ']', 'P', '_', '^': // OSC/DCS/APC/PM: up to BEL or ESC \
		for j := i + 1; j < len(b); j++ {
			if b[j] == 0x07 {
				return j + 1
			}
			if b[j] == 0x1b && j+1 < len(b) && b[j+1] == '\\' {
				return j + 2
			}
		}
		return len(b)
	}
	return i + 1 // two-byte escape (ESC 7, ESC M, ...)
}

// csiLen is the length of a CSI parameter run plus final byte in a
// rendering (after "^[[" or "#033["); 0 when it is not one.
func csiLen(b []byte) int {
	j := 0
	for j < len(b) && j < 16 && ((b[j] >= '0' && b[j] <= '9') || b[j] == ';') {
		j++
	}
	if j < len(b) && ((b[j] >= 'A' && b[j] <= 'Z') || (b[j] >= 'a' && b[j] <= 'z')) {
		return j + 1
	}
	return 0
}

// bareSGRLen matches a colour code whose ESC was lost: "[1;36m", "[0;0m",
// "[0m". Plain "[5m" is too likely to be text ("timeout [5m]") so a single
// number is accepted only for the reset code 0.
func bareSGRLen(b []byte) int {
	if len(b) < 3 || b[0] != '[' {
		return 0
	}
	j, semi := 1, false
	for j < len(b) && j < 16 && ((b[j] >= '0' && b[j] <= '9') || b[j] == ';') {
		semi = semi || b[j] == ';'
		j++
	}
	if j == 1 || j >= len(b) || b[j] != 'm' {
		return 0
	}
	if !semi && string(b[1:j]) != "0" {
		return 0
	}
	if b[1] == ';' {
		return 0
	}
	return j + 1
}

func hasBareSGR(b []byte) bool {
	for {
		i := bytes.IndexByte(b, '[')
		if i < 0 {
			return false
		}
		b = b[i:]
		if bareSGRLen(b) > 0 {
			return true
		}
		b = b[1:]
	}
}
