package parsers

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"slices"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults for JoinOptions.
const (
	DefaultMaxRecordBytes = DefaultMaxLineBytes // a record fits a message, as a line does
	DefaultMaxRecordLines = 2000
)

// JoinOptions configure a Joiner. The zero value uses the defaults.
type JoinOptions struct {
	MaxRecordBytes int              // text bytes of one record (default DefaultMaxRecordBytes)
	MaxRecordLines int              // physical lines of one record (default DefaultMaxRecordLines)
	Now            func() time.Time // clock for FlushIdle (default time.Now)
	// HoldOpen is how long FlushIdle keeps a record that is inside a
	// traceback (after its header or a frame, before the exception line:
	// more must come) although its writer went quiet; default
	// DefaultHoldOpen. Only when a writer is quiet longer than this is such
	// a record split, and a continuation after it starts a record of its own.
	HoldOpen time.Duration
	// ReadTime gives a record that has no time at all (no container time,
	// none in its text, no earlier record of its file with one) the
	// clock's time when its first line was added: a tailer's read time.
	// A blank record never takes it (it keeps the time before it, or
	// none). Offline reading leaves it off and uses the file's time instead.
	ReadTime bool
}

// DefaultHoldOpen: a Python traceback printed line by line by a slow or
// stalled writer is still joined as it is offline; a process that died
// mid-traceback delays its record by this much.
const DefaultHoldOpen = 5 * time.Second

// A pending record older than staleLines Adds is closed: nothing continues a
// record after thousands of other lines, and this bounds what a Joiner holds
// on a long file with many short-lived processes (NCCL proxy threads).
const (
	staleLines    = 4096
	sweepInterval = 1024
	prefixCacheN  = 8
	// maxFree bounds the closed pendingRecords kept for reuse: a sweep
	// closes up to about sweepInterval of them, and the next lines of new
	// writers take them again instead of allocating.
	maxFree = 2 * sweepInterval
	// keyCloneMin: a writer key is a substring of its line unless the line
	// is longer than this; a key outlives its record only in the few places
	// that remember the last key (j.last, per-stream keys, the prefix
	// cache), so short lines are pinned at most a few at a time.
	keyCloneMin = 4096
	// maxMessageLines bounds the unindented lines taken as the rest of an
	// exception message.
	maxMessageLines = 32
)

// Joiner joins consecutive Lines into Records. Lines are grouped per
// (stream, process prefix) so that output of processes interleaved in one
// stream is never joined across processes; within a group a record grows
// while lines continue it (traceback bodies, C++ frame dumps, NCCL WARN
// return-code traces, indented lines, vLLM multi-line logger output) and is
// emitted when a line that does not continue it arrives, when it hits the
// size caps, or on Flush/FlushIdle. A Joiner is not safe for concurrent use.
type Joiner struct {
	origin Origin
	opts   JoinOptions
	emitFn func(Record)
	// pending holds the active records and j.last; a record that closes is
	// dropped from it (and recycled) unless it is j.last.
	pending writerTable
	last    *pendingRecord // pending record of the previous Add (most lines continue the same key)
	// head..tail lists the active records by lastSeq, oldest first: the
	// sweep takes stale records from the head instead of walking the map.
	head, tail *pendingRecord
	free       []*pendingRecord
	streams    []streamLast
	seq        uint64
	cache      [prefixCacheN]prefixEntry
	cacheAt    int
	scratch    []*pendingRecord
	cuts       []int  // squashCuts' buffer
	lineOff    int64  // offset of the physical line being added
	idBuf      []byte // node, 0, fileID, 0: the fixed head of every record ID's hash input
	// times holds, per writer (stream and process prefixes), the time of
	// its last record that had one, in file order (see fillTime).
	times map[timeKey]time.Time
	// fileTime is the time of the file's last record that had one, of any
	// writer: what a record of a writer with no time yet takes.
	fileTime time.Time
	wall     time.Time // time.Now once, for yearClock when opts.Now gives zero (offline)
	// starts[startsHead:] lists the starts of records in offset order, for
	// PendingOffset without a walk over every pending record (a shipper
	// asks for every batch). Entries of records closed (or started again)
	// since are stale and dropped lazily: from the head as it is asked,
	// all at once when the list has grown to compactAt.
	starts     []startMark
	startsHead int
	compactAt  int
}

// startMark is a record's start: valid while p is active and p.startSeq is seq.
type startMark struct {
	p   *pendingRecord
	seq uint64
	off int64
}

func (m *startMark) valid() bool { return m.p.active && m.p.startSeq == m.seq }

// timeKey is a process writing to a stream: what "the previous record of
// that process" means for a record without a time. (NCCL lines of a Ray
// worker are its process's, whatever their thread.)
type timeKey struct{ stream, prefix string }

// maxTimeKeys bounds Joiner.times on a file with very many processes.
const maxTimeKeys = 4096

// joinKey identifies one writer within a file: the stream, the (normalised)
// process prefixes, and for NCCL lines the host:pid:tid.
type joinKey struct {
	stream string
	prefix string
	nccl   string
}

type streamLast struct {
	stream string
	key    joinKey
	// The stream's previous physical line and what its lines' widths
	// say, to recognise a line that a terminal or an editor wrapped (see
	// addWrapped).
	shape    lineShape
	width    int       // the stream's wrap width (0: none seen)
	maxCols  int       // the widest line so far, up to wrapMaxWidth+1
	atMax    int       // different lines seen that wide (up to 3)
	maxLines [3]uint64 // their hashes
	// The line the last wrapped pieces were joined back into, and the
	// widest such line (see addWrapped).
	joined    joinedLine
	joinedMax int
	widths    *[wrapMaxWidth + 1]int32 // lines seen of each width, from wrapIndentMin (allocated on the first)
}

// prefixEntry remembers a prefix run seen before: match is how it is
// written at the start of a line (without the final space), key what it
// normalises to. Lines of a process mostly repeat the same prefix, so this
// spares parsing the prefixes again on the hot path.
type prefixEntry struct {
	match string
	key   string
}

// Record states: what kind of continuation the record can take next.
const (
	recPlain     = iota // a single line or a group of lines with one vLLM header
	recTraceback        // inside "Traceback (most recent call last):" ... File lines
	recExcMsg           // after the exception line: its message may span lines
	recAfterExc         // blank line(s) after an exception: a chain marker may follow
	recChain            // "During handling ..." / "The above exception ...": a Traceback follows
	recFrames           // "Exception raised from ...": frame #N lines follow
	recNCCLWarn         // an NCCL WARN: "NCCL INFO file:line -> N" traces follow
	recRich             // a rich RichHandler entry: its message wraps in a column
)

type pendingRecord struct {
	key        joinKey
	hash       uint64         // of key, in Joiner.pending
	prev, next *pendingRecord // in the Joiner's list of active records
	active     bool
	state      uint8
	inExc      bool // frames belong to an exception message (it may go on after them)
	msgRun     int  // lines of the exception message so far
	oneLine    bool // the record is its first line so far (and wrapped pieces of it)
	restOff    int  // where the first line's text after the process prefixes starts
	hdr        string
	offset     int64
	lineOff    int64 // offset of the physical line the record starts in (offset, but for a squashed paste's pieces)
	num        int
	time       time.Time
	stream     string
	first      string
	buf        []byte
	textLen    int // length of buf up to the end of the last non-blank line
	lines      int
	size       int64
	last       time.Time
	lastSeq    uint64
	startSeq   uint64 // seq of the first line (identifies this start in Joiner.starts)
	// For records without a container time: whether the header line (the
	// first non-blank one) was looked at, whether it had a time, and the
	// time the record takes otherwise.
	timeChecked bool
	ownTime     bool
	fillTime    time.Time
	first0      time.Time // clock when the first line was added
}

// NewJoiner returns a Joiner that calls emit with each completed record.
func NewJoiner(o Origin, opts JoinOptions, emit func(Record)) *Joiner {
	if opts.MaxRecordBytes <= 0 {
		opts.MaxRecordBytes = DefaultMaxRecordBytes
	}
	if opts.MaxRecordLines <= 0 {
		opts.MaxRecordLines = DefaultMaxRecordLines
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.HoldOpen <= 0 {
		opts.HoldOpen = DefaultHoldOpen
	}
	j := &Joiner{origin: o, opts: opts, emitFn: emit, pending: newWriterTable()}
	j.idBuf = append(j.idBuf, o.Node...)
	j.idBuf = append(j.idBuf, 0)
	j.idBuf = append(j.idBuf, o.FileID...)
	j.idBuf = append(j.idBuf, 0)
	return j
}

// recordID computes RecordID(origin.Node, origin.FileID, offset) with one
// allocation instead of four: it is paid once per record on the hot path.
// TestJoinerRecordID keeps the two equal.
func (j *Joiner) recordID(offset int64) string {
	n := len(j.idBuf)
	j.idBuf = binary.BigEndian.AppendUint64(j.idBuf, uint64(offset))
	sum := sha256.Sum256(j.idBuf)
	j.idBuf = j.idBuf[:n]
	var out [24]byte
	hex.Encode(out[:], sum[:12])
	return string(out[:])
}

// Add takes the next Line of the file.
func (j *Joiner) Add(l Line) {
	// (A json-file or CRI record, with its stream, is what a program wrote
	// at once, not a paste.)
	if len(l.Text) >= squashMinBytes && l.Stream == "" && int64(len(l.Text)) < l.Size {
		if j.cuts = squashCuts(l.Text, j.cuts); j.cuts != nil {
			j.addSquashed(l)
			return
		}
	}
	j.lineOff = l.Offset
	j.seq++
	st := j.streamState(l.Stream)
	if l.broken {
		j.addAlone(st, l)
		return
	}
	if j.addWrapped(st, l) {
		return
	}
	j.add(st, l)
}

// addAlone emits a broken json-file or CRI line as a record of its own: it
// has no stream, so every broken line of a file would otherwise be one
// writer's, and one 50 lines after another would continue it.
func (j *Joiner) addAlone(st *streamLast, l Line) {
	st.shape = lineShape{} // and nothing continues it
	p := j.newRecord(joinKey{stream: l.Stream})
	p.start(l, j.lineOff, l.Text, "", blankLine(l.Text), j.now(), j.seq)
	j.link(p)
	j.pushStart(p)
	j.close(p)
	if len(j.free) < maxFree {
		*p = pendingRecord{buf: p.buf[:0]}
		j.free = append(j.free, p)
	}
}

// addSquashed adds the entries of a squashed paste (see squashCuts) as
// lines of their own. Each is its own record at the offset of its text in
// the line (so their IDs differ), while the offset a tailer may resume from
// stays the physical line's (PendingOffset).
func (j *Joiner) addSquashed(l Line) {
	j.lineOff = l.Offset
	st := j.streamState(l.Stream)
	st.shape.cols = 0 // the next physical line continues no piece of this one
	start := 0
	for k := 0; k <= len(j.cuts); k++ {
		end := len(l.Text)
		if k < len(j.cuts) {
			end = j.cuts[k]
		}
		piece := Line{Offset: l.Offset + int64(start), Size: int64(end - start), Num: l.Num, Stream: l.Stream, Time: l.Time,
			Text: strings.TrimSuffix(l.Text[start:end], " ")}
		if k == len(j.cuts) {
			piece.Size = l.Size - int64(start)
		}
		if rest, t, n := splitPastePrefixes(piece.Text); n > 0 {
			// A tool's prefix before each entry (see Decoder.decode).
			piece.Text, piece.pasted = rest, int32(n)
			if !t.IsZero() {
				piece.Time = t
			}
		}
		j.seq++
		j.add(st, piece)
		start = end
	}
}

// add joins one line that is not a wrapped piece of the one before.
func (j *Joiner) add(st *streamLast, l Line) {
	prefix, rest := j.splitPrefix(l.Text)
	blank := blankLine(rest)
	var key joinKey
	if last := st.key; blank && prefix == last.prefix {
		// A blank line says nothing more about its writer than its prefix;
		// it belongs with what its stream said last (NCCL's WARN starts
		// with "\n", Python separates chained tracebacks with blank lines).
		key = last
	} else {
		key = joinKey{stream: l.Stream, prefix: prefix, nccl: ncclWriterKey(rest)}
	}
	st.key = key

	p := j.last
	if p == nil || p.key != key {
		h := j.pending.hash(key)
		np := j.pending.get(key, h)
		if np == nil {
			np = j.newRecord(key)
			j.pending.put(np, h)
		}
		if p != nil && !p.active {
			j.release(p)
		}
		p = np
		j.last = p
	}
	hdr := ""
	if !blank {
		hdr = repeatedHeader(rest)
	}
	if p.active {
		if j.fits(p, l) && p.continues(rest, hdr, blank) {
			p.append(l, blank, j.now(), j.seq)
			if !p.timeChecked && !blank && p.time.IsZero() {
				j.checkTime(p, l)
			}
			j.touch(p)
			j.maybeSweep()
			return
		}
		j.close(p)
	}
	p.start(l, j.lineOff, rest, hdr, blank, j.now(), j.seq)
	switch {
	case l.Time.IsZero() && !blank:
		j.checkTime(p, l)
	case l.Time.IsZero():
		// A blank line between records (ray status blocks, monitor.out)
		// takes the time before it; a header that follows still decides.
		p.fillTime = j.timeBefore(p.key)
	}
	j.link(p)
	j.pushStart(p)
	j.maybeSweep()
}

// checkTime looks at the header line l of a record without a container
// time: a time of its own is remembered as its process's latest; without
// one the record takes that process's latest time (if it has none either,
// the record takes the file's latest time; with none at all its Time stays
// zero and the reader gives it the time it was read). This runs in file order as lines are added, so the shipper, which
// emits records as they complete, and offline reading give a record the
// same time.
func (j *Joiner) checkTime(p *pendingRecord, l Line) {
	p.timeChecked = true
	k := timeKey{p.key.stream, p.key.prefix}
	if t := lineTime(l.Text, j.yearClock); !t.IsZero() {
		p.ownTime = true
		if j.times == nil || len(j.times) >= maxTimeKeys {
			j.times = make(map[timeKey]time.Time)
		}
		j.times[k] = t
		j.fileTime = t
		return
	}
	p.fillTime = j.timeBefore(p.key)
}

// timeBefore is the time a record of key without one of its own takes:
// its process's latest, else the file's.
func (j *Joiner) timeBefore(key joinKey) time.Time {
	if t := j.times[timeKey{key.stream, key.prefix}]; !t.IsZero() {
		return t
	}
	return j.fileTime
}

// yearClock gives a partial line time (no year) its year: the joiner's
// clock, or offline (a clock that gives zero) the wall clock read once.
func (j *Joiner) yearClock() time.Time {
	if t := j.now(); !t.IsZero() {
		return t
	}
	if j.wall.IsZero() {
		j.wall = time.Now()
	}
	return j.wall
}

// pushStart adds p's start to j.starts, keeping them in offset order: lines
// mostly come in file order, but a json-file/CRI line reassembled from
// partial records carries the offset of its first piece, older than the
// lines seen meanwhile, so it moves back a few places.
func (j *Joiner) pushStart(p *pendingRecord) {
	m := startMark{p: p, seq: p.startSeq, off: p.lineOff}
	j.starts = append(j.starts, m)
	for i := len(j.starts) - 1; i > j.startsHead && j.starts[i-1].off > m.off; i-- {
		j.starts[i], j.starts[i-1] = j.starts[i-1], j.starts[i]
	}
	if len(j.starts)-j.startsHead >= j.compactAt {
		// Drop every stale entry: what is left is one per active record,
		// so the list stays within twice the active records (or 8192).
		live := j.starts[:0]
		for i := j.startsHead; i < len(j.starts); i++ {
			if j.starts[i].valid() {
				live = append(live, j.starts[i])
			}
		}
		clear(j.starts[len(live):])
		j.starts, j.startsHead = live, 0
		j.compactAt = max(2*len(live), 8192)
	}
}

// trimStarts drops stale entries from the head of j.starts.
func (j *Joiner) trimStarts() {
	for j.startsHead < len(j.starts) && !j.starts[j.startsHead].valid() {
		j.starts[j.startsHead] = startMark{}
		j.startsHead++
	}
	if j.startsHead == len(j.starts) {
		j.starts, j.startsHead = j.starts[:0], 0
	} else if j.startsHead >= 1024 && 2*j.startsHead >= len(j.starts) {
		// Reuse the room at the front instead of growing at the back.
		n := copy(j.starts, j.starts[j.startsHead:])
		clear(j.starts[n:])
		j.starts, j.startsHead = j.starts[:n], 0
	}
}

// newRecord returns an inactive pendingRecord for key, recycled if possible.
func (j *Joiner) newRecord(key joinKey) *pendingRecord {
	if n := len(j.free); n > 0 {
		p := j.free[n-1]
		j.free[n-1] = nil
		j.free = j.free[:n-1]
		p.key = key
		return p
	}
	return &pendingRecord{key: key}
}

// release forgets an inactive record that is not j.last and keeps it for reuse.
func (j *Joiner) release(p *pendingRecord) {
	j.pending.del(p)
	if len(j.free) >= maxFree {
		return
	}
	buf := p.buf[:0]
	if cap(buf) > 4<<10 {
		buf = nil
	}
	*p = pendingRecord{buf: buf}
	j.free = append(j.free, p)
}

// link appends a record that became active to the list of active records.
func (j *Joiner) link(p *pendingRecord) {
	p.prev, p.next = j.tail, nil
	if j.tail != nil {
		j.tail.next = p
	} else {
		j.head = p
	}
	j.tail = p
}

func (j *Joiner) unlink(p *pendingRecord) {
	if p.prev != nil {
		p.prev.next = p.next
	} else {
		j.head = p.next
	}
	if p.next != nil {
		p.next.prev = p.prev
	} else {
		j.tail = p.prev
	}
	p.prev, p.next = nil, nil
}

// touch moves a record that took a line to the end of the list (its
// lastSeq is now the highest).
func (j *Joiner) touch(p *pendingRecord) {
	if j.tail == p {
		return
	}
	j.unlink(p)
	j.link(p)
}

func (j *Joiner) now() time.Time { return j.opts.Now() }

func (j *Joiner) fits(p *pendingRecord, l Line) bool {
	if p.lines+1 > j.opts.MaxRecordLines {
		return false
	}
	n := len(p.first)
	if p.lines > 1 {
		n = len(p.buf)
	}
	return n+1+len(l.Text) <= j.opts.MaxRecordBytes
}

// Flush emits every pending record, in file order.
func (j *Joiner) Flush() {
	j.closeWhere(func(*pendingRecord) bool { return true })
}

// FlushIdle emits the pending records whose last line was added idle or
// longer ago (by JoinOptions.Now), in file order. A tailer calls it
// periodically so that the last record of a quiet writer is not held
// forever. Only a writer's last record is ever pending (a line that does not
// continue it closes it at once), and whether a line continues a record
// depends on its content alone, never on the pause before it: a record that
// expects more (inside a traceback) is kept HoldOpen, so a slow writer's
// traceback is one record live as offline.
func (j *Joiner) FlushIdle(idle time.Duration) {
	now := j.now()
	cut := now.Add(-idle)
	holdCut := now.Add(-max(idle, j.opts.HoldOpen))
	j.closeWhere(func(p *pendingRecord) bool {
		if p.expectsMore() {
			return !p.last.After(holdCut)
		}
		return !p.last.After(cut)
	})
}

// expectsMore reports whether the record cannot be complete yet: a
// traceback header or frame, or a chain marker, is always followed by more
// lines (the exception line at least).
func (p *pendingRecord) expectsMore() bool {
	return p.state == recTraceback || p.state == recChain
}

// PendingOffset reports the lowest file offset of a line still held in a
// pending record; ok is false when nothing is pending. A shipper persists
// offsets only below it, so that a restart re-reads the held lines.
func (j *Joiner) PendingOffset() (int64, bool) {
	j.trimStarts()
	if j.startsHead == len(j.starts) {
		return 0, false
	}
	return j.starts[j.startsHead].off, true
}

func (j *Joiner) closeWhere(pred func(*pendingRecord) bool) {
	ps := j.scratch[:0]
	for p := j.head; p != nil; p = p.next {
		if pred(p) {
			ps = append(ps, p)
		}
	}
	j.closeSorted(ps)
}

// closeSorted closes the records of ps (the Joiner's scratch) in file order.
func (j *Joiner) closeSorted(ps []*pendingRecord) {
	slices.SortFunc(ps, func(a, b *pendingRecord) int { return cmp.Compare(a.offset, b.offset) })
	for _, p := range ps {
		j.close(p)
		if p != j.last {
			j.release(p)
		}
	}
	clear(ps)
	j.scratch = ps[:0]
}

// maybeSweep closes records nothing has continued for a long time, so a
// Joiner's memory stays bounded (closed records leave j.pending at once).
func (j *Joiner) maybeSweep() {
	if j.seq%sweepInterval != 0 {
		return
	}
	if j.seq > staleLines {
		// The list is in lastSeq order: the stale records are its head.
		cut := j.seq - staleLines
		ps := j.scratch[:0]
		for p := j.head; p != nil && p.lastSeq < cut; p = p.next {
			ps = append(ps, p)
		}
		j.closeSorted(ps)
	}
}

func (j *Joiner) close(p *pendingRecord) {
	text := p.first
	if p.lines > 1 {
		text = string(p.buf[:p.textLen])
	}
	t := p.time
	if t.IsZero() && !p.ownTime {
		t = p.fillTime // no time of its own: its process's previous one
		// Blank lines are never given the read time: a replay of old logs
		// (serve --demo) stamped them with today among records of months ago.
		blankOnly := p.textLen == 0 && (p.lines > 1 || blankLine(p.first))
		if t.IsZero() && j.opts.ReadTime && !blankOnly {
			t = p.first0
		}
	}
	r := Record{
		ID:        j.recordID(p.offset),
		Cluster:   j.origin.Cluster,
		Node:      j.origin.Node,
		Container: j.origin.Container,
		File:      j.origin.File,
		FileID:    j.origin.FileID,
		Offset:    p.offset,
		Size:      p.size,
		Line:      p.num,
		Lines:     p.lines,
		Time:      t,
		Stream:    p.stream,
		Text:      text,
	}
	j.unlink(p)
	p.active = false
	p.first = ""
	p.hdr = ""
	if cap(p.buf) > 64<<10 {
		p.buf = nil
	}
	j.emitFn(r)
}

// streamState returns what the joiner remembers of a stream (stdout,
// stderr: a file has one or two), adding it on first use.
func (j *Joiner) streamState(stream string) *streamLast {
	for i := range j.streams {
		if j.streams[i].stream == stream {
			return &j.streams[i]
		}
	}
	j.streams = append(j.streams, streamLast{stream: stream, key: joinKey{stream: stream}})
	return &j.streams[len(j.streams)-1]
}

// Wrapped lines. Logs pasted from a terminal (bug reports, chat) are often
// hard-wrapped at the terminal's width: one log line becomes several, the
// later ones without the writer's prefix or header, often split mid-word
// ("...killed due to memory pres" + "sure (OOM)..."). Such a piece is joined
// back onto the line it was cut from, without a newline, so matchers see the
// original line.
const (
	wrapMinWidth = 80
	wrapMaxWidth = 512
	// wrapIndentMin: a line wrapped at word boundaries may be much shorter
	// than the width when the next word is long (a path, an address).
	wrapIndentMin = 40
	// wrapIndentMax: editors and tools that indent what they wrap do so
	// at 80 to 160 columns; a wider line followed by an indented one is a
	// line and a block.
	wrapIndentMax = 200
)

// addWrapped joins l onto the stream's previous record when l is the
// wrapped remainder of the previous physical line, and remembers l's shape
// for the next line. It reports whether l was joined.
//
// A paste may have been cut twice: by the writer or the reporter's terminal,
// then again by the tool it went through (a second terminal, fold, an
// editor). The pieces of the second cut are joined first, back into the
// lines of the first; when l does not continue the previous physical line
// but that line was a joined piece, l is tried once more against the line
// joined so far, the way it would have been against that line as written.
func (j *Joiner) addWrapped(s *streamLast, l Line) bool {
	prev := s.shape
	s.observe(l.Text, l.ascii, int(l.pasted), int(l.shown))
	s.shape.piece = s.shape.width
	if l.Text == "" {
		return false
	}
	// A wrapped piece may be short however wide the wrap: fold -s breaks
	// before a word longer than what is left of the line (a JSON blob's
	// '"Address already in ' + 'use","errno":98,...').
	if prev.width >= wrapIndentMin || prev.wrapped {
		if text, sep, ok := j.wrapJoin(s, prev, l, s.width, s.maxCols); ok {
			return j.joinWrapped(s, prev, l, text, sep, true)
		}
	}
	if prev.wrapped && s.joined.width >= wrapIndentMin {
		if lp := j.joinedShape(s, prev); lp.cols > 0 {
			if text, sep, ok := j.wrapJoin(s, lp, l, 0, s.joinedMax); ok {
				return j.joinWrapped(s, lp, l, text, sep, false)
			}
		}
	}
	s.joined = joinedLine{cols: s.shape.cols, width: s.shape.width}
	s.joinedMax = max(s.joinedMax, s.maxCols)
	return false
}

// joinedLine is the size of the line a stream's wrapped pieces were joined
// back into so far (its text is the pending record's last line).
type joinedLine struct{ cols, width int }

// joinedShape is the shape of the line joined so far from prev and the
// pieces before it: its text is the last line of the stream's record.
func (j *Joiner) joinedShape(s *streamLast, prev lineShape) lineShape {
	p := j.pending.lookup(s.key)
	if p == nil || !p.active {
		return lineShape{}
	}
	text := p.first
	if p.lines > 1 {
		b := p.buf[:p.textLen]
		text = string(b[bytes.LastIndexByte(b, '\n')+1:])
	}
	return lineShape{cols: s.joined.cols, width: s.joined.width, piece: prev.width, last: prev.last, indent: prev.indent, wrapped: false, text: text, head: prev.head}
}

// joinWrapped appends the piece l (as text, after sep) to the stream's
// record, wrapped off the line shaped prev.
func (j *Joiner) joinWrapped(s *streamLast, prev lineShape, l Line, text, sep string, physical bool) bool {
	p := j.pending.lookup(s.key)
	if p == nil || !p.active || !j.fits(p, l) {
		s.joined = joinedLine{cols: s.shape.cols, width: s.shape.width}
		return false
	}
	if physical && s.width == 0 && sep == "" && text == l.Text {
		s.width = prev.width
	}
	p.appendWrapped(l, sep, text, j.now(), j.seq)
	if prev.wrapped {
		s.joined.cols += len(sep) + len(text)
		s.joined.width += len(sep) + len(text)
	} else {
		s.joined = joinedLine{cols: prev.cols + len(sep) + len(text), width: prev.width + len(sep) + len(text)}
	}
	s.joinedMax = max(s.joinedMax, s.joined.width)
	// The piece is the line it was cut off: its indent and label.
	s.shape.wrapped, s.shape.indent, s.shape.head = true, prev.indent, prev.head
	j.touch(p)
	j.maybeSweep()
	return true
}

// wrapJoin decides whether l is the wrapped remainder of a line shaped
// prev, in a stream cut at width (0: not known) whose widest line is
// maxCols wide; it returns l's text as joined and the separator before it.
func (j *Joiner) wrapJoin(s *streamLast, prev lineShape, l Line, width, maxCols int) (string, string, bool) {
	if l.pasted > 0 {
		// A terminal's wrap never repeats a tool's prefix; a writer's
		// wrap, before the tool, has it on every piece, and is measured
		// without it (the stream's widths less prev's prefix: exact for
		// a tool's constant prefix).
		k := prev.width - prev.cols
		if k <= 0 {
			return "", "", false
		}
		prev.width, prev.piece, maxCols = prev.cols, prev.piece-k, maxCols-k
		if width > 0 {
			width -= k
		}
	}
	text, sep := l.Text, ""
	body := strings.TrimLeft(text, " \t")
	indent := len(text) - len(body)
	switch {
	case prev.width == width && width == maxCols:
		// A hard cut at the stream's width (a terminal, fold -w): every
		// piece but a line's last is exactly that wide, and no line is
		// wider. What follows is the line's text whatever its first
		// byte ("10.1.2" + "30.180"), unless it starts a line of its own.
		if !cutContinues(body, prev) || indent > 1 && prev.code() {
			return "", "", false
		}
		if indent > 1 {
			text = body // an indent a tool added (a single blank is the text's)
		}
	case (indent == 0 || indent == 1 && text[0] == ' ') && (prev.width == width || terminalWidth(prev.width)):
		// A line as wide as a terminal usually is, or as one cut seen in
		// this stream, before the width is sure: a cut mid-token
		// ("{'G" + "PU': 1.0}", ":6" + "379", "fd=" + "100"), before
		// punctuation, or before a single blank.
		if !cutContinues(body, prev) || !(indent == 1 || prev.last == ' ' || midToken(prev.last, text)) {
			return "", "", false
		}
	case indent > 0:
		switch {
		case prev.bare() && j.pending.lookup(s.key) != nil:
			// A process prefix alone before the cut: what it prefixes
			// was pushed to the next line, whatever it is
			// ("(RayWorkerWrapper pid=340, ip=...) " + "  host:340:340 [7] NCCL INFO ...").
		case j.tracebackWrap(s, prev, body, indent, maxCols):
		case indent == 1 && text[0] == ' ', prev.width > wrapIndentMax:
			// A tool that indents what it wraps indents by more than a
			// blank (that is how ray status and pprint indent their
			// items), and is not that wide.
			return "", "", false
		case prev.last == ':', prev.code():
			// Source code under a "File" line or a warning; the items
			// of a block ("started with:", "Usage:").
			return "", "", false
		case prev.indent > 0 && !prev.wrapped && indent <= prev.indent:
			// The next item of an indented list or block (`ray
			// status`, a dict printed one key a line), not a wrap.
			return "", "", false
		case !j.indentedWrap(s, prev, body, maxCols):
			return "", "", false
		}
		// An editor or a terminal that indents what it wraps (fold -s and a
		// hanging indent, textwrap's subsequent_indent): the indent is not
		// text. The blank at the cut stays at the end of the line (fold) or
		// is dropped (textwrap: one blank stands for it); a single blank
		// after a cut is the text's own.
		text = body
		switch {
		case indent == 1 && l.Text[0] == ' ':
			sep = " "
		case prev.last == ' ' || prev.last == '\t':
		case terminalWidth(prev.piece) && midToken(prev.last, body):
			// cut at the full width, inside a token ("lib" + "/libnccl-net.so")
		default:
			sep = " "
		}
	case prev.width < wrapMinWidth || !wrapContinues(text, prev.last):
		return "", "", false
	}
	return text, sep, true
}

// lineShape is what the wrap rules remember of a physical line. What only
// some decisions need is derived from its text when asked (most lines are
// followed by a line that starts an entry and needs none of it).
type lineShape struct {
	cols    int    // columns of its text (0 when it cannot have been wrapped: too wide, binary)
	width   int    // columns as pasted: with the tools' prefixes the Decoder removed
	piece   int    // width of its last physical piece (width, but for a line joined from pieces)
	last    byte   // its last byte
	indent  int    // its leading blanks (those of the line it was wrapped off, for a wrapped piece)
	wrapped bool   // it was joined as a wrapped piece
	text    string // the line
	head    string // the line it was wrapped off (itself when not wrapped)
}

// label is the "name:" head (pdsh's "host:") of the line, if any.
func (sh *lineShape) label() string { return sh.head[:labelLen(sh.head)] }

// code reports whether the next line, when indented, is source code (see codeFollows).
func (sh *lineShape) code() bool { return codeFollows(sh.text) }

// bare reports whether the line is process prefixes and a blank, nothing
// else, or a tool's prefix and blanks.
func (sh *lineShape) bare() bool {
	if sh.last != ' ' {
		return false
	}
	if sh.width > sh.cols && blankLine(sh.text) {
		return true
	}
	if !hasProcessPrefix(sh.text) {
		return false
	}
	var buf [4]Prefix
	_, rest := splitPrefixesFast(buf[:0], sh.text)
	return blankLine(rest)
}

// observe records text as the stream's last physical line, and learns the
// stream's wrap width: the widest line so far once three different lines
// are that wide and more lines are than a little narrower (a hard-cut paste
// has many lines exactly as wide as the terminal and none wider; a log as
// written has lines of every width, and a wider line makes the width no
// longer hold).
func (s *streamLast) observe(text string, ascii bool, pasted, shown int) {
	sh := lineShape{cols: len(text) + shown, width: len(text) + shown + pasted, text: text, head: text}
	if len(text) == 0 {
		s.shape = sh
		return
	}
	sh.last = text[len(text)-1]
	if c := text[0]; c == ' ' || c == '\t' {
		sh.indent = len(text) - len(strings.TrimLeft(text, " \t"))
		for i := 0; i < sh.indent; i++ {
			if text[i] == '\t' {
				sh.cols += 7 // a tab stop every 8 columns
			}
		}
		sh.width = sh.cols + pasted
	}
	if sh.width < wrapIndentMin {
		s.shape = sh
		return
	}
	// A terminal is at most a few hundred columns wide, and what it shows
	// is text: a longer line, or one with bytes that were not UTF-8 (a
	// binary blob), was not wrapped by one. A terminal counts columns,
	// not bytes.
	if !ascii && sh.cols <= 4*wrapMaxWidth && !asciiOnly(text) {
		if strings.Contains(text, "\uFFFD") {
			sh.cols, sh.width = 0, 0
			s.shape = sh
			return
		}
		sh.cols += utf8.RuneCountInString(text) - len(text)
		sh.width = sh.cols + pasted
	}
	cols := sh.width
	if cols > wrapMaxWidth {
		sh.cols, sh.width = 0, 0
		s.shape = sh
		s.maxCols, s.atMax = wrapMaxWidth+1, 0
		return
	}
	s.shape = sh
	if s.widths == nil {
		s.widths = new([wrapMaxWidth + 1]int32)
	}
	s.widths[cols]++
	switch {
	case cols > s.maxCols:
		s.maxCols, s.atMax = cols, 1
		s.maxLines[0] = hashString(text)
	case cols == s.maxCols:
		if s.atMax < len(s.maxLines) && !slices.Contains(s.maxLines[:s.atMax], hashString(text)) {
			s.maxLines[s.atMax] = hashString(text)
			s.atMax++
		}
		if s.atMax == len(s.maxLines) && cols >= wrapMinWidth && s.width != cols {
			// Three different lines exactly this wide, and more of
			// them than a little narrower: cut at this width.
			near := int32(0)
			for _, n := range s.widths[cols*3/4 : cols] {
				near += n
			}
			if s.widths[cols] > near {
				s.width = cols
			}
		}
	}
}

// asciiOnly reports whether s is all ASCII, 8 bytes at a time.
func asciiOnly(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if (uint64(s[i])|uint64(s[i+1])<<8|uint64(s[i+2])<<16|uint64(s[i+3])<<24|
			uint64(s[i+4])<<32|uint64(s[i+5])<<40|uint64(s[i+6])<<48|uint64(s[i+7])<<56)&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// cutContinues reports whether text can be the rest of a line cut at the
// stream's width after prev: it starts no line of its own (a prefix, a
// header, a traceback frame or exception, the label the previous line
// started with).
func cutContinues(text string, prev lineShape) bool {
	if text == "" {
		return false
	}
	if l := prev.label(); l != "" && strings.HasPrefix(text, l) {
		return false
	}
	return !hasProcessPrefix(text) && !strings.HasPrefix(text, `File "`) &&
		!strings.HasPrefix(text, "Exception raised from ") && !strings.HasPrefix(text, "frame #") &&
		!carets(text) && !startsEntry(text) && !exceptionLine(text) && !chainMarker(text) && !tracebackStarts(text)
}

// hasProcessPrefix reports whether text starts with a Ray or torch process
// prefix ("(Worker pid=7)", "[rank0]:").
func hasProcessPrefix(text string) bool {
	if text == "" || (text[0] != '(' && text[0] != '[') {
		return false
	}
	var buf [4]Prefix
	ps, _ := splitPrefixesFast(buf[:0], text)
	return len(ps) > 0
}

// terminalWidth reports whether cols is a width terminals and fold are
// commonly set to.
func terminalWidth(cols int) bool {
	switch cols {
	case 80, 100, 120, 132, 160, 200:
		return true
	}
	return false
}

// midToken reports whether a cut between a line ending in prev and text
// falls inside a token or before punctuation that continues one: digits of
// a number or an address, capitals of one word, a path or a host.
func midToken(prev byte, text string) bool {
	c := text[0]
	if labelled(text) {
		return false // "host: ...": a line of its own
	}
	digit := func(b byte) bool { return b >= '0' && b <= '9' }
	upper := func(b byte) bool { return b >= 'A' && b <= 'Z' }
	switch {
	case wordByte(prev) && c >= 'a' && c <= 'z':
		return true
	case digit(c):
		return digit(prev) || prev == '.' || prev == ':' || prev == '=' || prev == '/' || prev == '-'
	case upper(c):
		return upper(prev) && (len(text) == 1 || !(text[1] >= 'a' && text[1] <= 'z'))
	case strings.IndexByte(".,;:)]}'\"", c) >= 0:
		return wordByte(prev) || prev == ')' || prev == ']' || prev == '}' || prev == '\'' || prev == '"'
	}
	if wordByte(c) {
		return strings.IndexByte("/.-_:", prev) >= 0
	}
	// "lib" + "/libnccl-net.so", "vllm" + "-qwen": the token goes on
	// after the mark (a line of dashes does not).
	return wordByte(prev) && strings.IndexByte("/-_", c) >= 0 && len(text) > 1 && wordByte(text[1])
}

// hashString is FNV-1a, to tell lines apart without keeping them.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// indentedWrap reports whether body, an indented line without its indent,
// is what an editor or a terminal wrapped off the stream's previous line
// (prevCols wide as pasted, with the tools' prefixes, as the widest line
// seen is counted): the first word of body would not have fitted after it
// within the widest line seen (and 80 columns), body starts no entry of its own, and the
// previous line's record is not a traceback (whose indented lines are its
// frames and their code).
func (j *Joiner) indentedWrap(s *streamLast, prev lineShape, body string, maxCols int) bool {
	prevCols := prev.width
	if body == "" || maxCols > wrapMaxWidth {
		return false
	}
	word := strings.IndexAny(body, " \t")
	if word < 0 {
		word = len(body)
	}
	if prevCols+1+word <= max(maxCols, wrapMinWidth) {
		return false
	}
	if p := j.pending.lookup(s.key); p != nil && (p.state == recTraceback || p.state == recChain) {
		return false
	}
	// "key: value" after a sentence is a field of a structured message
	// (Ray's "...this task." + "\tclass_name: RayWorkerWrapper"); "at f("
	// a Java frame.
	return !hasProcessPrefix(body) && !strings.HasPrefix(body, `File "`) &&
		!strings.HasPrefix(body, "at ") && (prev.last != '.' || !labelled(body)) && !carets(body) && !startsEntry(body) &&
		!exceptionLine(body) && !chainMarker(body) && !tracebackStarts(body)
}

// tracebackWrap reports whether body (indent blanks before it) is what an
// editor or a terminal wrapped off prev inside a traceback, whose own
// indented lines are frames ("  File ..."), their code (four blanks or
// more) and carets: the rest of a frame line cut before its
// `", line N, in NAME` ended, or a line less indented than the code line
// before it that is no frame, too long to have fitted after prev.
func (j *Joiner) tracebackWrap(s *streamLast, prev lineShape, body string, indent, maxCols int) bool {
	p := j.pending.lookup(s.key)
	if p == nil || p.state != recTraceback || strings.HasPrefix(body, `File "`) || carets(body) || hasProcessPrefix(body) {
		return false
	}
	if partialFrame(prev.text) {
		return true
	}
	word := strings.IndexAny(body, " \t")
	if word < 0 {
		word = len(body)
	}
	return prev.indent >= 4 && indent < prev.indent && !prev.wrapped && prev.width+1+word > max(maxCols, wrapMinWidth)
}

// partialFrame reports whether text is the start of a traceback frame line
// that does not hold its `", line N, in NAME` yet.
func partialFrame(text string) bool {
	t := strings.TrimLeft(text, " \t")
	if t != "File" && !strings.HasPrefix(t, "File ") {
		return false
	}
	q := strings.Index(t, `", line `)
	if q < 0 {
		return true
	}
	rest := t[q+len(`", line `):]
	d := leadingDigits(rest)
	return d == "" || !strings.HasPrefix(rest[len(d):], ", in ") || len(rest) == len(d)+len(", in ")
}

// codeFollows reports whether the line after text, when indented, is source
// code rather than a wrap: after a traceback's "File" line, and after a
// Python warning ("file.py:12: UserWarning: ...", then the source line).
func codeFollows(text string) bool {
	t := strings.TrimLeft(text, " ")
	if strings.HasPrefix(t, `File "`) {
		return true
	}
	i := strings.Index(text, "Warning: ")
	if i <= 0 {
		return false
	}
	head := text[:i]
	c := strings.LastIndexByte(head, ' ')
	return c > 2 && head[c-1] == ':' && strings.Contains(head[:c], ".py:")
}

// carets matches Python 3.11+'s "^^^^^" / "~~~^^^" markers under a code line.
func carets(s string) bool {
	s = strings.TrimRight(s, " ")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '^' && s[i] != '~' {
			return false
		}
	}
	return true
}

// wrapContinues reports whether text can be the wrapped remainder of a line
// that ended with prev, before the stream's width is known: it starts no
// entry of its own (no prefix, header, traceback, exception or NCCL line),
// and either the previous line ended with a space or the cut fell inside a
// word (a lower-case letter after a letter or digit).
func wrapContinues(text string, prev byte) bool {
	if text == "" {
		return false
	}
	// Cheap tests first: most lines after a long one are not wrapped.
	c := text[0]
	switch {
	case prev == ' ':
		// A log line hardly ever ends with a space; a cut after one does.
	case wordByte(prev) && c >= 'a' && c <= 'z':
		// Cut inside a word. A capital or a digit after it starts a line
		// of its own more often than it continues a word (tqdm's
		// "Capturing CUDA graphs" or "100%|███" after a long log line).
		if labelled(text) {
			return false
		}
	default:
		return false
	}
	return !blankLine(text) && c != '(' && !strings.HasPrefix(text, "[rank") &&
		!startsEntry(text) && !exceptionLine(text) && !chainMarker(text)
}

// labelled reports whether a line starts with "name: " (a host prefix of
// pdsh output, "ncclInvalidUsage: ..."): the start of a line of its own,
// not the middle of a wrapped one.
func labelled(s string) bool { return labelLen(s) > 0 }

// labelLen is the length of the "name:" at the start of s, or 0.
func labelLen(s string) int {
	k := 0
	for k < len(s) && k <= 64 && (identByte[s[k]] || s[k] == '-') {
		k++
	}
	if k > 0 && k < len(s) && k <= 64 && s[k] == ':' && (k+1 == len(s) || s[k+1] == ' ' || s[k+1] == '\t') {
		return k + 1
	}
	return 0
}

func wordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

func (p *pendingRecord) start(l Line, lineOff int64, rest, hdr string, blank bool, now time.Time, seq uint64) {
	p.active = true
	p.startSeq = seq
	p.offset, p.num, p.time, p.stream = l.Offset, l.Num, l.Time, l.Stream
	p.lineOff = lineOff
	p.first = l.Text
	p.first0 = now
	p.timeChecked, p.ownTime, p.fillTime = false, false, time.Time{}
	p.buf = p.buf[:0]
	p.textLen = 0
	p.lines = 1
	p.size = l.Size
	p.last, p.lastSeq = now, seq
	p.hdr = hdr
	p.inExc = false
	p.msgRun = 0
	p.restOff, p.oneLine = len(l.Text)-len(rest), true
	p.state = recPlain
	if !blank {
		p.startState(rest)
	}
}

// startState sets the state of a record that starts with the line rest
// (its text after the process prefixes).
func (p *pendingRecord) startState(rest string) {
	p.state = recPlain
	switch {
	case tracebackStarts(rest):
		p.state = recTraceback
	case strings.HasPrefix(rest, "Exception raised from "):
		p.state = recFrames
	case strings.HasPrefix(strings.TrimLeft(rest, " "), `File "`) && rest[0] == ' ':
		// A traceback whose header was cut off (pasted excerpts).
		p.state = recTraceback
	case p.key.nccl != "" && strings.Contains(rest, "NCCL WARN "):
		p.state = recNCCLWarn
	case richLogHeader(rest):
		p.state = recRich
	case exceptionLine(rest):
		// An exception printed without its traceback (or cut from a paste):
		// its message may still span lines.
		p.state = recExcMsg
	}
}

func (p *pendingRecord) append(l Line, blank bool, now time.Time, seq uint64) {
	p.oneLine = false
	if p.lines == 1 {
		p.buf = append(p.buf[:0], p.first...)
		p.textLen = len(p.buf)
		if blankLine(p.first) {
			p.textLen = 0
		}
	}
	p.buf = append(p.buf, '\n')
	p.buf = append(p.buf, l.Text...)
	if !blank {
		p.textLen = len(p.buf)
	}
	p.lines++
	p.size += l.Size
	p.last, p.lastSeq = now, seq
}

// appendWrapped adds the wrapped remainder of the record's last line (text,
// l's text without a wrapping indent) after sep, without a newline: the
// text is the line as it was before the wrap.
func (p *pendingRecord) appendWrapped(l Line, sep, text string, now time.Time, seq uint64) {
	if p.lines == 1 {
		p.buf = append(p.buf[:0], p.first...)
	}
	p.buf = append(p.buf, sep...)
	p.buf = append(p.buf, text...)
	p.textLen = len(p.buf)
	if p.oneLine {
		// The line is whole again: what it starts is known only now
		// ("Traceback (mos" + "t recent call last):").
		p.startState(string(p.buf[p.restOff:]))
	}
	p.lines++
	p.size += l.Size
	p.last, p.lastSeq = now, seq
}

// continues decides whether a line (rest = its text after the process
// prefixes, hdr = its vLLM header if any) continues the pending record, and
// moves the record's state along.
func (p *pendingRecord) continues(rest, hdr string, blank bool) bool {
	if blank {
		if p.state == recExcMsg {
			p.state = recAfterExc
		}
		return true
	}
	// vLLM's NewLineFormatter repeats the whole header on every line of a
	// multi-line message (logger.exception tracebacks, config dumps).
	if hdr != "" && hdr == p.hdr {
		return true
	}
	if strings.HasPrefix(rest, "Exception raised from ") {
		// c10::Error::what() is the message, then this line and the frames.
		p.inExc = p.state == recExcMsg || p.state == recTraceback
		p.state = recFrames
		return true
	}
	indented := rest[0] == ' ' || rest[0] == '\t'
	switch p.state {
	case recFrames:
		if strings.HasPrefix(rest, "frame #") {
			return true
		}
		if p.inExc && !indented && !startsEntry(rest) {
			// The rest of a torch exception message after the C++ frames
			// (". This may indicate a possible application crash ...").
			p.state = recExcMsg
			return true
		}
	case recTraceback:
		if indented {
			return true
		}
		if startsEntry(rest) {
			return false
		}
		p.state = recExcMsg // "pkg.ErrType: message" ends the traceback
		return true
	case recExcMsg:
		if tracebackStarts(rest) || startsEntry(rest) || p.msgRun >= maxMessageLines {
			return false
		}
		// Exception messages span lines: NCCL's "Last error:\n<cause>",
		// Ray's version table, vLLM's long ValueErrors. The cap limits what
		// an unrelated plain line after a traceback can drag in.
		p.msgRun++
		return true
	case recAfterExc, recChain:
		if chainMarker(rest) {
			p.state = recChain
			return true
		}
		if p.state == recChain && tracebackStarts(rest) {
			p.state = recTraceback
			return true
		}
	case recNCCLWarn:
		if ncclReturnTrace(rest) {
			return true
		}
	case recRich:
		// RichHandler wraps the message in its column and indents the
		// rest (joined as indented, below); a paste that lost the indent
		// leaves lines no wider than the header that start nothing new.
		if !indented && len(rest) <= len(p.first) && p.msgRun < maxMessageLines &&
			!richLogHeader(rest) && !startsEntry(rest) && !exceptionLine(rest) {
			p.msgRun++
			return true
		}
	}
	return indented
}

// richLogHeader reports whether s is the first line of a Python rich
// RichHandler entry: "[10/21/24 06:53:04] ERROR    message ... local.py:302"
// (log_time_format "[%x %X]", the level, the message column, the caller's
// file:line at the right edge). The path is required: without it the line
// is too like other bracketed logs to let unindented lines join it.
func richLogHeader(s string) bool {
	if len(s) < 32 || s[0] != '[' || s[3] != '/' || s[6] != '/' || s[9] != ' ' || s[12] != ':' ||
		s[15] != ':' || s[18] != ']' || s[19] != ' ' || !digitsAt(s, 1, 2, 4, 5, 7, 8, 10, 11, 13, 14, 16, 17) {
		return false
	}
	lvl := s[20:]
	if !strings.HasPrefix(lvl, "DEBUG ") && !strings.HasPrefix(lvl, "INFO ") && !strings.HasPrefix(lvl, "WARNING ") &&
		!strings.HasPrefix(lvl, "ERROR ") && !strings.HasPrefix(lvl, "CRITICAL ") {
		return false
	}
	end := strings.TrimRight(s, " ")
	tail := end[strings.LastIndexByte(end, ' ')+1:]
	c := strings.LastIndexByte(tail, ':')
	return c > len(".py") && strings.HasSuffix(tail[:c], ".py") && c+1 < len(tail) && allDigits(tail[c+1:])
}

// splitPrefix returns the normalised process-prefix key of a line and the
// text after the prefixes.
func (j *Joiner) splitPrefix(text string) (string, string) {
	if text == "" || (text[0] != '(' && !strings.HasPrefix(text, "[rank")) {
		return "", text
	}
	for i := range j.cache {
		e := &j.cache[i]
		// Prefixes of different writers mostly differ just before their
		// end (pid, ip): compare those bytes first.
		m := e.match
		if len(m) < 2 || len(text) < len(m) || text[len(m)-2] != m[len(m)-2] || !strings.HasPrefix(text, m) {
			continue
		}
		rest := text[len(e.match):]
		if e.match[len(e.match)-1] == ')' {
			if rest == "" || rest[0] != ' ' {
				continue // SplitPrefixes wants "(...) " with the space
			}
			rest = rest[1:]
		} else if rest != "" && rest[0] == ' ' {
			rest = rest[1:] // "[rankN]: " takes one optional space
		}
		if rest != "" && (rest[0] == '(' || strings.HasPrefix(rest, "[rank")) {
			continue // maybe one more prefix: let SplitPrefixes decide
		}
		return e.key, rest
	}
	var buf [4]Prefix
	ps, rest := splitPrefixesFast(buf[:0], text)
	if len(ps) == 0 {
		return "", text
	}
	match := strings.TrimSuffix(text[:len(text)-len(rest)], " ")
	key := match
	// vLLM sometimes writes a prefix twice ("(W pid=5) (W pid=5) INFO ..."
	// after tqdm output); it is still the same writer.
	dup := false
	for i := 1; i < len(ps); i++ {
		if ps[i].Raw == ps[i-1].Raw {
			dup = true
		}
	}
	if dup {
		var b strings.Builder
		for i, p := range ps {
			if i > 0 && p.Raw == ps[i-1].Raw {
				continue
			}
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(p.Raw)
		}
		key = b.String()
	}
	if len(text) > keyCloneMin {
		// Copy: the key may outlive the line and must not pin a long text
		// (a dup key is already a copy).
		match = strings.Clone(match)
		if !dup {
			key = match
		}
	}
	j.cache[j.cacheAt] = prefixEntry{match: match, key: key}
	j.cacheAt = (j.cacheAt + 1) % prefixCacheN
	return key, rest
}

// ncclWriterKey returns the "host:pid:tid" of an NCCL debug line
// ("host:pid:tid [dev] NCCL INFO ...", optionally after a "[date time] "
// stamp), or "".
func ncclWriterKey(s string) string {
	if len(s) > 0 && s[0] == '[' {
		// NCCL >= 2.26 stamps WARN lines: "[2026-11-29 20:00:53] host:pid:tid ..."
		i := strings.Index(s, "] ")
		if i < 11 || i > 40 || s[1] < '0' || s[1] > '9' {
			return ""
		}
		s = s[i+2:]
	}
	sp := strings.IndexByte(s, ' ')
	if sp <= 0 || sp > 128 {
		return ""
	}
	tok := s[:sp]
	after := s[sp+1:]
	if !(strings.HasPrefix(after, "[") || strings.HasPrefix(after, "NCCL ")) {
		return ""
	}
	// host:pid:tid: two trailing numeric fields.
	c2 := strings.LastIndexByte(tok, ':')
	if c2 <= 0 || !allDigits(tok[c2+1:]) {
		return ""
	}
	c1 := strings.LastIndexByte(tok[:c2], ':')
	if c1 <= 0 || !allDigits(tok[c1+1:c2]) {
		return ""
	}
	if strings.ContainsAny(tok[:c1], " \t") {
		return ""
	}
	return tok
}

// ncclReturnTrace matches NCCL's error-propagation lines
// "NCCL INFO file.cc:123 -> 5" (optionally " (strerror)").
func ncclReturnTrace(s string) bool {
	i := strings.Index(s, "NCCL INFO ")
	if i < 0 {
		return false
	}
	msg := s[i+len("NCCL INFO "):]
	a := strings.Index(msg, " -> ")
	if a <= 0 || strings.IndexByte(msg[:a], ' ') >= 0 {
		return false
	}
	code := msg[a+4:]
	if sp := strings.IndexByte(code, ' '); sp >= 0 {
		code = code[:sp]
	}
	return allDigits(code)
}

// repeatedHeader returns the header that a formatter repeats on every line
// of one multi-line message, or "": vLLM's (vllmLogHeader), or the
// "[YYYY-MM-DD HH:MM:SS] ERROR: " that SGLang's logger puts in front of each
// line of a traceback (the tag form "[... TP0] ERROR: " too). Only ERROR and
// CRITICAL: tracebacks are logged at those levels, and two INFO lines of one
// second are two messages.
func repeatedHeader(s string) string {
	if h := vllmLogHeader(s); h != "" {
		return h
	}
	return bracketErrorHeader(s)
}

// bracketErrorHeader returns the "[date time( tag)] ERROR: " (or CRITICAL)
// that starts s, or "".
func bracketErrorHeader(s string) string {
	if len(s) < 29 || s[0] != '[' {
		return ""
	}
	if _, ok := parseDateTime(s[1:]); !ok {
		return ""
	}
	end := strings.IndexByte(s[20:min(len(s), 64)], ']')
	if end < 0 || (end > 0 && s[20] != ' ') {
		return ""
	}
	n := 20 + end + 1
	if n >= len(s) || s[n] != ' ' {
		return ""
	}
	if lv := errorHead(s[n+1:]); lv != "" {
		return s[:n+1+len(lv)]
	}
	return ""
}

// vllmLogHeader returns the "LEVEL MM-DD HH:MM:SS [file:line] " header of a
// vLLM log line (also the older "file:line] " form), or "".
func vllmLogHeader(s string) string {
	var n int
	switch {
	case strings.HasPrefix(s, "INFO "):
		n = 5
	case strings.HasPrefix(s, "DEBUG "), strings.HasPrefix(s, "ERROR "):
		n = 6
	case strings.HasPrefix(s, "WARNING "):
		n = 8
	case strings.HasPrefix(s, "CRITICAL "):
		n = 9
	default:
		return ""
	}
	// MM-DD HH:MM:SS
	if len(s) < n+16 {
		return ""
	}
	t := s[n : n+15]
	if t[2] != '-' || t[5] != ' ' || t[8] != ':' || t[11] != ':' || t[14] != ' ' ||
		!allDigits(t[0:2]) || !allDigits(t[3:5]) || !allDigits(t[6:8]) {
		return ""
	}
	rest := s[n+15:]
	lim := min(len(rest), 160)
	end := strings.Index(rest[:lim], "] ")
	if end < 0 {
		if strings.HasSuffix(rest, "]") && len(rest) <= 160 {
			end = len(rest) - 1 // header with an empty message
		} else {
			return ""
		}
	}
	loc := rest[:end]
	if c := strings.LastIndexByte(loc, ':'); c < 0 || !allDigits(loc[c+1:]) {
		return ""
	}
	return s[:n+15+end+1]
}

// startsEntry reports whether a line is surely the first line of a new
// log entry (a timestamped or levelled header, an NCCL line, a traceback),
// so it cannot be the continuation of an exception message.
func startsEntry(s string) bool {
	if s == "" {
		return false
	}
	switch c := s[0]; {
	case c == '[':
		if len(s) < 3 {
			return false
		}
		c1, c2 := s[1], s[2]
		switch {
		case c1 >= '0' && c1 <= '9' && len(s) > 5 && s[5] == '-': // [2025-06-23 ...]
			return true
		case (c1 == 'I' || c1 == 'W' || c1 == 'E' || c1 == 'F') && (c2 == ' ' || (c2 >= '0' && c2 <= '9')): // c10
			return true
		case strings.HasPrefix(s, "[rank"):
			return true
		}
		return false
	case c >= '0' && c <= '9':
		if len(s) > 10 && allDigits(s[:4]) && s[4] == '-' && s[7] == '-' { // Ray Python: 2024-04-01 10:49:31,995
			return true
		}
		// else maybe an NCCL line of a host named by a Docker container ID
		// ("7635c25c81cd:41585:41836 [0] NCCL INFO ..."), checked below.
	case c == 'T':
		return tracebackStarts(s)
	}
	if vllmLogHeader(s) != "" || ncclWriterKey(s) != "" || strings.HasPrefix(s, "NCCL ") {
		return true
	}
	// uvicorn and plain Python logging: "INFO:     ...", "WARNING:root:..."
	for _, lv := range [...]string{"INFO:", "DEBUG:", "WARNING:", "ERROR:", "CRITICAL:"} {
		if strings.HasPrefix(s, lv) {
			return true
		}
	}
	return false
}

const tracebackHeaderText = "Traceback (most recent call last):"

// tracebackStarts matches the traceback header, also at the end of a
// logged message ("Scheduler hit an exception: Traceback (most recent call last):").
func tracebackStarts(s string) bool {
	return strings.HasSuffix(strings.TrimRight(s, " "), tracebackHeaderText)
}

// exceptionLine matches "pkg.SomeError: message" / "SomeException: ..."
// at the start of a line.
func exceptionLine(s string) bool {
	// The name is the run of [.\w] at the start; it must end the line
	// (a line of at most 120 bytes) or be followed by ": " within 120 bytes.
	k := 0
	for k < len(s) && identByte[s[k]] {
		k++
	}
	if k > 120 {
		return false
	}
	if k < len(s) && (k+1 >= len(s) || s[k] != ':' || s[k+1] != ' ') {
		return false
	}
	name := s[:k]
	return strings.HasSuffix(name, "Error") || strings.HasSuffix(name, "Exception")
}

// identByte marks the bytes of an exception's dotted name.
var identByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = c == '.' || c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
	}
	return t
}()

func chainMarker(s string) bool {
	return strings.HasPrefix(s, "During handling of the above exception, another exception occurred:") ||
		strings.HasPrefix(s, "The above exception was the direct cause of the following exception:")
}

func blankLine(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' {
			return false
		}
	}
	return true
}
