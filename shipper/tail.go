package shipper

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"strconv"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/transport"
)

// Why not github.com/hpcloud/tail: its Line has no offset, and Tell() reads
// the file position from another goroutine while the reading goroutine is
// already lines ahead, so an offset cannot be tied to a line (and offsets
// are what we persist); on a rename it reopens the path without reading what
// was written to the old file between its last EOF and the rename (loss at
// every Docker rotation); it reads a whole line into one string however long
// (a 50 MB line is 50 MB of heap). The cursor below is a plain polling
// follower that frames lines from the raw bytes itself, with a bounded buffer.
// bench/tailprobe measures both libraries on Docker-style rotation: each
// loses lines in poll mode (25-30%), and in inotify mode nxadm/tail tears
// half-written lines in two and hpcloud/tail sometimes stops after a rotation;
// delivering lines alone costs them 1.0-1.5 CPU-s per million lines, about
// what this whole shipper spends per million lines.

const (
	readBufSize = 64 << 10
	// readBufStart is a cursor's first buffer: it doubles while reads fill
	// it, up to readBufSize+keepBehind, so that 10,000 small files do not
	// hold 68 KiB each.
	readBufStart = 8 << 10
	// keepBehind bytes already consumed stay in the buffer (read sizes are
	// unchanged: the buffer is that much larger): after a truncation they
	// tell where the file's new content departs from what was read.
	keepBehind = 4 << 10
	// sumWindow bytes before an offset are its checksum (Entry.Sum).
	sumWindow = 1 << 10
	// A checkpoint (offset, checksum of the bytes before it) is kept every
	// checkpointEvery bytes read, at most maxCheckpoints of them (thinned
	// out when full): they tell a file cut to a shorter prefix from one
	// rewritten from the start.
	checkpointEvery = 16 << 10
	maxCheckpoints  = 64
)

// errNotReady: the file's first line is incomplete, so its identity may
// still change; it is not read yet.
var errNotReady = parsers.ErrNoFirstLine

// devIno is a file's place on disk: two paths with the same devIno are one
// file (a glob matching both foo.log and a rename of it).
type devIno struct{ dev, ino uint64 }

func statDevIno(fi os.FileInfo) devIno {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return devIno{uint64(st.Dev), st.Ino}
	}
	return devIno{}
}

// fingerprint is the fingerprint part of parsers.Identify (the one identity
// function, so record IDs match offline reading; gzip files are fingerprinted
// by their decompressed content). It fails with errNotReady until the first
// line is complete, so that the identity of a file being written does not
// change under us.
func fingerprint(f *os.File) (string, error) {
	id, err := parsers.Identify(f)
	if err != nil {
		return "", err
	}
	return id.FP, nil
}

// source is what a cursor reads: where it is, what to call it.
type source struct {
	path      string // host path opened
	display   string // path in records (the container's own path for container files)
	container string
	found     time.Time // the discovery pass that found it
}

// cursor reads one open file: frames lines, feeds the decoder and joiner,
// fills batches and hands them to the publisher with the offset each one
// makes safe to persist.
type cursor struct {
	sh  *Shipper
	src source
	f   io.Reader
	fd  *os.File // nil for stdin and a .gz rotation (no checksums read back)
	// open: fd is open and holds one of sh.fds (false while parked: see
	// files.go); tail is what park kept of the bytes before base.
	open bool
	tail []byte
	// The inotify watch of the file (kept while parked) and what park saw
	// of it.
	unwatch  func()
	parkSize int64
	parkMod  time.Time
	parkLook time.Time // when the parker stats it next
	recheck  bool      // opened again after parking: checkFile before reading
	di       devIno
	key      string // dev:ino:fingerprint; "" when offsets are not persisted
	fp       string
	gen      string
	id       string // file ID of the records when not the key's own (Entry.ID)
	log      *slog.Logger

	heldAt      int64 // offset of the last line reported held back (-1: none)
	heldLogged  bool
	checkpoints []checkpoint
	nextCk      int64 // offset from which the next checkpoint is taken
	ckEvery     int64
	lastSize    int64 // file size at the last checkFile

	buf      []byte
	r, w     int
	base     int64 // file offset of buf[r]
	line     int   // physical lines consumed before base
	long     bool  // inside an overlong line: keeping its head, skipping the rest
	longOff  int64
	longHead []byte // the line's first dec.LineLimit() bytes

	dec  *parsers.Decoder
	join *parsers.Joiner
	enc  transport.Encoder
	// now is the joiner's clock: the time of the last read, not of every
	// line (a clock read per line costs more than joining it); it is set
	// after every read and before every idle flush.
	now time.Time
	// counts not yet added to the metrics (added per read, not per line:
	// a Prometheus counter is an atomic loop)
	mLines, mRecords int
	mBytes           int64

	fifo     []lineMark // offsets of lines fed since the last safe point
	tracker  *tracker
	subject  string
	body     []byte // nil until the batch's first record
	bodyHint int    // capacity to give the next body: about the last batch's size
	count    int
	firstID  string
	started  time.Time // first record of the current batch
	lastSafe mark
	warnings int
	ctx      context.Context
	// sentRecs are the records of the current batch, for the sent log.
	sentRecs []recExtent
	// replay rebuilds the batches sent beyond the resume offset before a
	// restart (nil once they are sent again, or when there were none).
	replay *replay
	stageClock
}

type lineMark struct {
	off int64
	num int
}

// checkpoint is a line boundary with the checksum of the bytes before it.
type checkpoint struct {
	off  int64
	line int
	sum  string
}

func sumBytes(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:8])
}

// sumAt is the checksum of the sumWindow bytes before off in r ("" when
// they cannot be read: the file is shorter).
func sumAt(r io.ReaderAt, off int64) string {
	b := make([]byte, min(off, sumWindow))
	if _, err := r.ReadAt(b, off-int64(len(b))); err != nil {
		return ""
	}
	return sumBytes(b)
}

// fileKey is the file's identity as records carry it (parsers.FileID).
func fileKey(di devIno, fp string) string {
	return parsers.FileID{Dev: di.dev, Ino: di.ino, FP: fp}.String()
}

// newCursor prepares a cursor over an open file, resuming at the persisted
// offset of its identity.
func (sh *Shipper) newCursor(src source, f *os.File) (*cursor, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat %s: %w", src.path, err)
	}
	fp, err := fingerprint(f)
	if err != nil {
		return nil, err
	}
	di := statDevIno(fi)
	c := &cursor{sh: sh, src: src, f: f, fd: f, di: di, fp: fp, key: fileKey(di, fp),
		log: sh.log.With("file", src.path)}
	if e, ok := sh.store.Get(c.key); ok {
		switch {
		case e.Offset > fi.Size():
			// Truncated (copytruncate) while we were not running, then the
			// first line was rewritten identically: a new generation.
			c.gen = newGen()
			c.log.Info("file shrank below its saved offset, reading it again from the start", "saved", e.Offset, "size", fi.Size())
			sh.metrics.rotations.WithLabelValues("truncate").Inc()
		case e.Sum != "" && sumAt(f, e.Offset) != e.Sum:
			// Same device, inode and first line, other bytes before the
			// offset: rewritten while we were not running (copytruncate,
			// then a writer that starts with the same banner).
			c.gen = newGen()
			c.log.Info("file rewritten since it was read (the bytes before the saved offset differ), reading it again from the start", "saved", e.Offset, "size", fi.Size())
			sh.metrics.rotations.WithLabelValues("rewrite").Inc()
		default:
			c.base, c.line, c.gen, c.id = e.Offset, e.Line, e.Gen, e.ID
		}
	}
	if c.base > 0 {
		if _, err := f.Seek(c.base, io.SeekStart); err != nil {
			return nil, fmt.Errorf("seek %s: %w", src.path, err)
		}
	}
	c.init()
	c.startReplay()
	return c, nil
}

// newStdinCursor reads r (piped `docker logs -f`); nothing is persisted.
// A pipe has no identity to resume, so each run is a generation of its own:
// the same bytes piped again are a new run, stored beside the first instead
// of being dropped by JetStream as its duplicates (retries within a run
// keep their IDs, so de-duplication still covers them).
func (sh *Shipper) newStdinCursor(r io.Reader) *cursor {
	c := &cursor{sh: sh, src: source{path: "-", display: "-"}, f: r, gen: newGen(), log: sh.log.With("file", "-")}
	c.init()
	return c
}

func newGen() string { return strconv.FormatInt(time.Now().UnixNano(), 36) }

func (c *cursor) fileID() string {
	switch {
	case c.key == "":
		return "stdin~" + c.gen
	case c.id != "":
		return c.id
	case c.gen != "":
		return c.key + "~" + c.gen
	}
	return c.key
}

func (c *cursor) init() {
	if c.unwatch == nil {
		c.unwatch = func() {}
	}
	c.buf = make([]byte, readBufStart)
	c.r, c.w = 0, 0
	c.checkpoints = c.checkpoints[:0]
	c.heldAt = -1
	c.ckEvery = checkpointEvery
	c.nextCk = c.base + c.ckEvery
	c.long = false
	c.dec = parsers.NewDecoder(parsers.FormatAuto)
	container := c.src.container
	if container == "" {
		// Named as offline reading names it (a json-file log's config.v2.json
		// or "<name>-json.log").
		container = parsers.ContainerOf(c.src.path)
	}
	origin := parsers.Origin{Cluster: c.sh.cfg.Cluster, Node: c.sh.cfg.Node, Container: container,
		File: c.src.display, FileID: c.fileID()}
	origin = kubeOrigin(origin, c.src.path, c.sh.cfg.PodAsNode)
	c.now = time.Now()
	// ReadTime: a record without any time takes the time it was read
	// (offline, the file's modification time stands for it).
	c.join = parsers.NewJoiner(origin, parsers.JoinOptions{Now: c.clock, ReadTime: true}, c.emit)
	c.tracker = &tracker{store: c.sh.store, key: c.key, path: c.src.path, gen: c.gen, id: c.id}
	if c.key == "" {
		c.tracker.store = nil
	}
	c.subject = c.sh.subject
	c.body = nil
	c.enc.Limit = c.sh.pub.bodyCap
	c.fifo = c.fifo[:0]
	c.lastSafe = mark{offset: c.base, line: c.line}
	if c.key != "" && (c.gen != "" || c.id != "") {
		if e, ok := c.sh.store.Get(c.key); !ok || e.Gen != c.gen || e.ID != c.id {
			c.sh.store.Set(c.key, Entry{Path: c.src.path, Gen: c.gen, ID: c.id, Offset: c.base, Line: c.line, Sum: c.sumAt(c.base)})
		}
	}
}

// fill reads more bytes; n == 0 with a nil error means EOF for now.
func (c *cursor) clock() time.Time { return c.now }

func (c *cursor) fill() (int, error) {
	if c.w == len(c.buf) && c.r > keepBehind {
		// Keep keepBehind consumed bytes in front of the unconsumed ones.
		k := c.r - keepBehind
		c.w = copy(c.buf, c.buf[k:c.w])
		c.r = keepBehind
	} else if c.w == len(c.buf) && c.r > 0 {
		c.w = copy(c.buf, c.buf[c.r:c.w]) // a long line: it gets the buffer
		c.r = 0
	}
	if c.w == len(c.buf) {
		// A line fills the whole buffer: grow it up to the decoder's line
		// limit (the one long-line policy), then keep the head of the line
		// and skip to its end; DecodeCut marks the cut as offline reading does.
		c.dec.Detect(c.buf[:c.w]) // the first line: the limit depends on the format
		limit := c.dec.LineLimit()
		if len(c.buf) <= limit {
			nb := make([]byte, 2*len(c.buf))
			copy(nb, c.buf[:c.w])
			c.buf = nb
		} else {
			c.long = true
			c.longOff = c.base
			c.longHead = append(c.longHead[:0], c.buf[:limit]...)
			// Said now, not when (if ever) its newline comes.
			c.warn("line too long, keeping its head and skipping to its end", c.longOff,
				fmt.Sprintf("no newline in %d bytes", c.w))
			c.base += int64(c.w)
			c.r, c.w = 0, 0
		}
	}
	n, err := c.f.Read(c.buf[c.w:])
	c.now = time.Now()
	c.w += n
	if c.w == len(c.buf) && len(c.buf) < readBufSize+keepBehind && !c.long {
		// A busy file: a buffer of the full size, for reads of readBufSize.
		nb := make([]byte, min(2*len(c.buf), readBufSize+keepBehind))
		copy(nb, c.buf[:c.w])
		c.buf = nb
	}
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

// lines consumes every complete line in the buffer.
func (c *cursor) lines() {
	for {
		i := bytes.IndexByte(c.buf[c.r:c.w], '\n')
		if i < 0 {
			break
		}
		if c.long {
			size := c.base - c.longOff + int64(i) + 1
			c.log.Info("overlong line ended", "offset", c.longOff, "bytes", size, "kept", len(c.longHead))
			c.feedCut(c.longHead, c.longOff, size, size-int64(len(c.longHead))-1)
			c.long = false
			if cap(c.buf) > 4*readBufSize && c.w-c.r-i-1 <= readBufSize {
				nb := make([]byte, readBufSize+keepBehind)
				c.w = copy(nb, c.buf[c.r+i+1:c.w])
				c.buf, c.r = nb, 0
				c.base += int64(i) + 1
				continue
			}
		} else {
			c.feed(c.buf[c.r:c.r+i], c.base, int64(i)+1)
		}
		c.r += i + 1
		c.base += int64(i) + 1
		if len(c.body) >= c.sh.softLimit {
			c.closeBatch(true)
		}
	}
	if c.long { // still inside the overlong line: drop what we read
		c.base += int64(c.w - c.r)
		c.r = c.w
	}
	if c.base >= c.nextCk {
		c.checkpoint()
	}
	c.addMetrics()
	if c.replay != nil {
		c.replayDue(false)
	}
}

// checkpoint remembers the current line boundary with the checksum of the
// bytes before it, from the buffer (no read).
func (c *cursor) checkpoint() {
	c.nextCk = c.base + c.ckEvery
	if c.r < sumWindow || c.long {
		return
	}
	if len(c.checkpoints) == maxCheckpoints {
		// Keep every other one: older checkpoints thin out, the span
		// covered doubles.
		n := 0
		for i := 1; i < len(c.checkpoints); i += 2 {
			c.checkpoints[n] = c.checkpoints[i]
			n++
		}
		c.checkpoints = c.checkpoints[:n]
		c.ckEvery *= 2
	}
	c.checkpoints = append(c.checkpoints, checkpoint{off: c.base, line: c.line, sum: sumBytes(c.buf[c.r-sumWindow : c.r])})
}

// sumAt is the checksum of the bytes before off in the file ("" for stdin
// and compressed files).
func (c *cursor) sumAt(off int64) string {
	if c.fd == nil || off == 0 {
		return ""
	}
	return sumAt(c.fd, off)
}

// addMetrics adds the counts gathered since the last call to the metrics.
func (c *cursor) addMetrics() {
	m := c.sh.metrics
	if c.mLines > 0 {
		m.lines.Add(float64(c.mLines))
		m.bytesRead.Add(float64(c.mBytes))
		c.mLines, c.mBytes = 0, 0
	}
	if c.mRecords > 0 {
		m.recordsMade.Add(float64(c.mRecords))
		c.mRecords = 0
	}
}

// feed hands one physical line to the decoder and the joiner.
func (c *cursor) feed(raw []byte, off, size int64) { c.feedCut(raw, off, size, 0) }

// feedCut is feed of a line of which dropped bytes after raw were skipped.
func (c *cursor) feedCut(raw []byte, off, size, dropped int64) {
	c.line++
	c.mLines++
	c.mBytes += size
	c.fifo = append(c.fifo, lineMark{off, c.line})
	l, ok, err := c.dec.DecodeCut(raw, off, size, c.line, dropped)
	if err != nil {
		c.warn("bad input", off, err.Error())
	} else if bytes.IndexByte(raw, 0) >= 0 {
		c.warn("binary data (NUL bytes); shipped as text", off, "")
	} else if c.dec.Format() == parsers.FormatPlain && !utf8.Valid(raw) {
		// (json-file and CRI writers already replaced invalid bytes)
		c.warn("invalid UTF-8; replaced with U+FFFD", off, "")
	}
	if ok {
		c.join.Add(l)
	}
}

// maxWarnLogs bounds the warnings logged per file (a binary file would
// otherwise log one per "line"); the metric counts them all.
const maxWarnLogs = 20

func (c *cursor) warn(msg string, off int64, detail string) {
	c.sh.metrics.warnings.WithLabelValues(c.src.path).Inc()
	c.warnings++
	switch {
	case c.warnings <= maxWarnLogs:
		c.log.Warn(msg, "offset", off, "line", c.line, "err", detail)
	case c.warnings == maxWarnLogs+1:
		c.log.Warn("more bad input in this file; counted in faultline_shipper_input_warnings_total only", "offset", off)
	}
}

// emit receives records from the joiner and appends them to the batch. A
// record that would overflow the message closes the batch first, without
// advancing the offset (the joiner is mid-call, its pending state unknown).
func (c *cursor) emit(r parsers.Record) {
	c.mRecords++
	if c.replay != nil && c.replay.place(&r) {
		return
	}
	if c.body == nil {
		c.body = c.sh.pub.body(c.bodyHint)
	}
	start := len(c.body)
	c.body = c.enc.Append(c.body, &r)
	n := len(c.body) - start
	if n > c.sh.hardLimit {
		c.body = c.body[:start]
		transport.FitRecord(&r, c.sh.hardLimit)
		c.sh.metrics.truncated.Inc()
		c.log.Warn("record larger than a message, truncated", "offset", r.Offset, "line", r.Line, "bytes", n, "limit", c.sh.hardLimit)
		c.body = c.enc.Append(c.body, &r)
		n = len(c.body) - start
	}
	if start > 0 && start+n > c.sh.hardLimit {
		rec := append([]byte(nil), c.body[start:]...)
		c.body = c.body[:start]
		c.closeBatch(false)
		c.body = append(c.sh.pub.body(c.bodyHint), rec...)
	}
	if c.count == 0 {
		c.firstID = r.ID
		c.started = time.Now()
		c.batchStarted(r.Offset+r.Size, c.started)
	}
	c.count++
	c.sentRecs = append(c.sentRecs, recExtent{r.Offset, r.Size})
}

// safePoint is the offset below which every line has been turned into a
// record already in a batch: the next line to read, lowered to what the
// decoder (partials) and the joiner (pending records) still hold.
func (c *cursor) safePoint() (mark, bool) {
	safe := c.base
	if c.long {
		safe = c.longOff
	}
	if o, ok := c.dec.PendingOffset(); ok && o < safe {
		safe = o
	}
	if o, ok := c.join.PendingOffset(); ok && o < safe {
		safe = o
	}
	// Drop line marks below safe; the first remaining one gives safe's
	// line number.
	i := 0
	for i < len(c.fifo) && c.fifo[i].off < safe {
		i++
	}
	var m mark
	switch {
	case i < len(c.fifo) && c.fifo[i].off == safe:
		m = mark{offset: safe, line: c.fifo[i].num - 1}
	case i == len(c.fifo) && safe == c.base && !c.long:
		m = mark{offset: safe, line: c.line}
	case i == len(c.fifo) && c.long && safe == c.longOff:
		m = mark{offset: safe, line: c.line}
	default:
		return c.lastSafe, false
	}
	n := copy(c.fifo, c.fifo[i:])
	c.fifo = c.fifo[:n]
	return m, true
}

// closeBatch publishes the current batch (blocking while the in-flight
// window is full: that is the backpressure). With advance, the batch carries
// the safe point, and its ack may move the persisted offset there.
func (c *cursor) closeBatch(advance bool) {
	if c.count == 0 {
		return
	}
	m := &mark{offset: c.lastSafe.offset, line: c.lastSafe.line}
	// While batches of the last run are rebuilt, a new batch saves no
	// offset: they may hold records below its safe point.
	if advance && c.replay == nil {
		if sp, ok := c.safePoint(); ok {
			m.offset, m.line, m.advance = sp.offset, sp.line, true
			m.sum = c.sumAt(sp.offset) // one small read a batch
			c.lastSafe = sp
		}
	}
	c.sh.metrics.stages.batchWait.Observe(time.Since(c.started).Seconds())
	t := c.tracker
	t.add(m)
	b := &batch{subject: c.subject, body: c.body, count: c.count,
		msgID: transport.MsgID(c.firstID, c.count), readAt: c.batchRead, onAck: func() { t.ack(m) }}
	if c.key != "" { // stdin is never resumed
		c.sh.sent.add(&sentBatch{fileID: c.fileID(), msgID: b.msgID, sentAt: c.started, end: *m, records: c.sentRecs})
	}
	c.sentRecs = c.sentRecs[:0]
	c.bodyHint = len(c.body) + len(c.body)/4
	c.body = nil
	c.count = 0
	if err := c.sh.pub.Publish(c.ctx, b); err != nil {
		return // shutting down: the offset stays where the acks left it
	}
}

// idle runs while the file has no new bytes: flush records whose writer went
// quiet and close a batch that waited long enough, or at once when the flush
// added to it (its writer has been quiet FlushTimeout already: waiting
// BatchWait more for lines would only delay an alert).
func (c *cursor) idle(now time.Time) {
	c.now = now
	before := c.count
	c.join.FlushIdle(c.sh.cfg.FlushTimeout)
	c.addMetrics()
	if c.replay != nil {
		// At the end of the file with nothing held, what a batch of the
		// last run has not got back it never will.
		_, held := c.join.PendingOffset()
		_, partial := c.dec.PendingOffset()
		c.replayDue(!held && !partial && c.r == c.w && !c.long)
	}
	if c.count > 0 && (c.count > before || now.Sub(c.started) >= c.sh.cfg.BatchWait) {
		c.closeBatch(true)
	}
}

// finish ends the file: the unterminated last line, partials and pending
// records are emitted and the last batch is sent.
func (c *cursor) finish() {
	c.drain()
	c.addMetrics()
	c.replayDue(true)
	c.closeBatch(true)
}

// drain frames the unterminated last line and emits every partial line and
// pending record.
func (c *cursor) drain() {
	if c.long {
		// An overlong last line without its newline: its head, as offline.
		size := c.base - c.longOff
		c.feedCut(c.longHead, c.longOff, size, size-int64(len(c.longHead)))
		c.long = false
	} else if c.r < c.w {
		n := c.w - c.r
		c.feed(c.buf[c.r:c.w], c.base, int64(n))
		c.r = c.w
		c.base += int64(n)
	}
	for {
		l, ok := c.dec.Flush()
		if !ok {
			break
		}
		c.join.Add(l)
	}
	c.join.Flush()
}

// followResult says why follow returned.
type followResult int

const (
	followStopped followResult = iota // ctx done
	followRotated                     // path now names another file: open it
	followGone                        // path removed: done
	followReopen                      // parked, and the path changed: look at it again
	followParked                      // closed until written (files.go)
)

// follow reads the file until ctx ends or it is rotated away, truncated or
// removed. After a rename or removal it reads the old file to its end before
// returning, so nothing written before the rotation is lost.
func (c *cursor) follow(ctx context.Context) followResult {
	c.ctx = ctx
	poll := c.sh.cfg.PollInterval
	var draining followResult // != followStopped once the path moved
	lastGrowth := time.Now()
	var lastIdleFlush time.Time
	if c.recheck { // opened again after parking: it may have been cut meanwhile
		c.recheck = false
		switch c.checkFile() {
		case fileMoved:
			c.sh.metrics.rotations.WithLabelValues("rename").Inc()
			return followRotated
		case fileRemoved:
			draining = followGone
		case fileTruncated:
			c.sh.metrics.rotations.WithLabelValues("truncate").Inc()
			c.truncated(ctx)
		}
	}
	for {
		if ctx.Err() != nil {
			c.closeBatch(true)
			return followStopped
		}
		n, err := c.fill()
		if err != nil {
			c.log.Error("read failed", "offset", c.base, "err", err)
		}
		c.afterRead(n)
		if n > 0 {
			now := c.now
			lastGrowth = now
			c.lines()
			// A busy file still flushes records of writers that went quiet,
			// but not on every read: FlushIdle walks every pending record.
			if now.Sub(lastIdleFlush) >= c.sh.cfg.FlushTimeout/4 {
				c.join.FlushIdle(c.sh.cfg.FlushTimeout)
				lastIdleFlush = now
			}
			if c.count > 0 && now.Sub(c.started) >= c.sh.cfg.BatchWait {
				c.closeBatch(true)
			}
			continue
		}
		// At the end of the file for now.
		if draining != followStopped {
			// A writer that has not reopened yet (logrotate's create mode
			// before the SIGHUP) still appends to the renamed file: read it
			// until it has been quiet for a while, like Fluent Bit's
			// Rotate_Wait, then finish it.
			if time.Since(lastGrowth) < c.sh.cfg.RotateWait {
				c.idle(time.Now())
				sleepCtx(ctx, poll)
				continue
			}
			c.finish()
			return draining
		}
		if c.fd == nil { // stdin: EOF is the end
			c.finish()
			return followGone
		}
		c.idle(time.Now())
		c.updateLag()
		if c.w > c.r && !c.long && c.heldAt != c.base && time.Since(lastGrowth) >= heldBackAfter*poll {
			c.heldBack()
		}
		wait := poll
		if c.count > 0 {
			if d := c.sh.cfg.BatchWait - time.Since(c.started); d < wait {
				wait = max(d, time.Millisecond)
			}
		}
		if _, ok := c.join.PendingOffset(); ok {
			wait = c.untilIdleFlush(wait)
		}
		if c.parkable(time.Since(lastGrowth)) {
			c.park()
			return followParked
		}
		c.sleep(ctx, wait)
		if ctx.Err() != nil {
			continue
		}
		// Checked after the sleep, right before the next read: a file
		// truncated and regrown past our offset meanwhile must not be read
		// from the middle of its new content.
		switch c.checkFile() {
		case fileMoved:
			// The caller opens the new file at once and finishes this one
			// beside it (drainRenamed): Docker may rotate again soon.
			c.sh.metrics.rotations.WithLabelValues("rename").Inc()
			return followRotated
		case fileRemoved:
			draining, lastGrowth = followGone, time.Now()
		case fileTruncated:
			c.sh.metrics.rotations.WithLabelValues("truncate").Inc()
			c.truncated(ctx)
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// drainRenamed reads a renamed file to its end: until it has been quiet for
// RotateWait (a writer that has not reopened yet, as with logrotate's create
// mode before the SIGHUP, still appends to it, like Fluent Bit's
// Rotate_Wait), then finishes it. On shutdown what was read is sent, and the
// rest is read as a rotated sibling on the next start.
func (c *cursor) drainRenamed(ctx context.Context) {
	c.readToEnd(ctx, c.sh.cfg.RotateWait)
}

type fileState int

const (
	fileSame fileState = iota
	fileMoved
	fileRemoved
	fileTruncated
)

// checkFile compares the open file with what its path names now.
func (c *cursor) checkFile() fileState {
	fi, err := c.fd.Stat()
	if err == nil && (fi.Size() < c.base+int64(c.w-c.r)) {
		return fileTruncated
	}
	if err == nil && fi.Size() != c.lastSize {
		// It grew (or changed): are the bytes we read last still there?
		// A file truncated and rewritten past our offset has other bytes.
		c.lastSize = fi.Size()
		if n := min(c.r, 64); n > 0 {
			b := make([]byte, n)
			if _, err := c.fd.ReadAt(b, c.base-int64(n)); err == nil && !bytes.Equal(b, c.buf[c.r-n:c.r]) {
				return fileTruncated
			}
		}
	}
	if fp, err := fingerprint(c.fd); err == nil {
		if c.fp == "" {
			c.fp = fp // truncated to nothing earlier; now it has a first line
		} else if fp != c.fp {
			return fileTruncated // rewritten in place (truncated, then regrown past our offset)
		}
	}
	pfi, err := os.Stat(c.src.path)
	if errors.Is(err, fs.ErrNotExist) {
		return fileRemoved
	}
	if err == nil && statDevIno(pfi) != c.di {
		return fileMoved
	}
	return fileSame
}

// truncated handles a file cut under us. copytruncate: the rest of the old
// content is read from the copy first. Cut to a shorter prefix: what is
// left was read already, so reading goes on from the cut. Otherwise
// (rewritten): from the start. In no case is the unterminated line read
// before the cut shipped: it is a fragment of a line that is gone.
func (c *cursor) truncated(ctx context.Context) {
	if c.readCopy(ctx) {
		c.restartAt(0, 0, "copytruncate: the rest of the old content was read from the copy; reading the file from the start")
		return
	}
	off, line, kept := c.prefixKept()
	c.dropPartial()
	c.drain()
	c.addMetrics()
	c.replayDue(true)
	c.closeBatch(true)
	c.tracker.retire()
	if kept {
		c.restartAt(off, line, "file cut to a shorter prefix, which was read already; reading on from the cut")
	} else {
		c.restartAt(0, 0, "file truncated or rewritten, reading it from the start")
	}
}

// heldBackAfter polls without a newline, a line is reported held back.
const heldBackAfter = 10

// heldBack reports an unterminated line that waits for its newline: counted
// each time, logged once per file.
func (c *cursor) heldBack() {
	c.heldAt = c.base
	c.sh.metrics.skipped.WithLabelValues("held-back").Inc()
	if !c.heldLogged {
		c.heldLogged = true
		c.log.Info("line without its newline held back until it ends or the file is rotated away", "offset", c.base, "bytes", c.w-c.r)
	}
}

// dropPartial forgets the unterminated line in the buffer.
func (c *cursor) dropPartial() {
	if c.w > c.r && !c.long {
		c.sh.metrics.skipped.WithLabelValues("torn-line").Inc()
		c.log.Warn("file truncated in the middle of a line; its head is not shipped", "offset", c.base, "bytes", c.w-c.r)
	}
	c.w = c.r
	c.long = false
}

// prefixKept tells whether the (shorter) file is a prefix of what was read,
// and where its new content starts: the first byte that differs from the
// bytes still in the buffer, else its end when a checkpoint below the end
// still has its checksum.
func (c *cursor) prefixKept() (int64, int, bool) {
	fi, err := c.fd.Stat()
	if err != nil || fi.Size() == 0 {
		return 0, 0, false
	}
	size := fi.Size()
	if fp, err := fingerprint(c.fd); err != nil || fp != c.fp {
		return 0, 0, false
	}
	start := c.base - int64(c.r) // file offset of buf[0]
	if size >= start+int64(c.w) {
		return 0, 0, false // not shorter: rewritten
	}
	if size > start {
		b := make([]byte, size-start)
		if _, err := c.fd.ReadAt(b, start); err != nil {
			return 0, 0, false
		}
		i := 0
		for i < len(b) && b[i] == c.buf[i] {
			i++
		}
		if i < len(b) {
			// Other bytes from start+i on: new content from the start of
			// that line (a rewrite sharing a prefix must not be read from
			// the middle of a line).
			j := bytes.LastIndexByte(c.buf[:i], '\n') + 1
			if j == 0 && start > 0 {
				return 0, 0, false
			}
			i = j
		}
		if i > 0 || start == 0 {
			p := start + int64(i)
			line := c.line
			if p < c.base {
				line -= bytes.Count(c.buf[i:c.r], []byte{'\n'})
			}
			return p, line, true
		}
	}
	for k := len(c.checkpoints) - 1; k >= 0; k-- {
		ck := c.checkpoints[k]
		if ck.off > size || sumAt(c.fd, ck.off) != ck.sum {
			continue
		}
		n, err := countLines(c.fd, ck.off, size)
		if err != nil {
			return 0, 0, false
		}
		return size, ck.line + n, true
	}
	return 0, 0, false
}

// countLines counts the newlines of f in [from, to).
func countLines(f io.ReaderAt, from, to int64) (int, error) {
	b := make([]byte, 64<<10)
	n := 0
	for from < to {
		k := min(int64(len(b)), to-from)
		if _, err := f.ReadAt(b[:k], from); err != nil {
			return 0, err
		}
		n += bytes.Count(b[:k], []byte{'\n'})
		from += k
	}
	return n, nil
}

// restartAt goes on reading the same file at off as a new generation: its
// records get new IDs (the old offsets from off on held other bytes).
func (c *cursor) restartAt(off int64, line int, why string) {
	c.log.Info(why, "offset", off, "was", c.base)
	if _, err := c.fd.Seek(off, io.SeekStart); err != nil {
		c.log.Error("seek after truncation", "offset", off, "err", err)
	}
	c.fp = ""
	if fp, err := fingerprint(c.fd); err == nil {
		c.fp = fp
		c.key = fileKey(c.di, fp)
	}
	c.replayDue(true)
	c.gen, c.id = newGen(), ""
	c.base, c.line = off, line
	c.lastSize = 0
	c.init()
}

func (c *cursor) updateLag() {
	if c.fd == nil {
		return
	}
	if fi, err := c.fd.Stat(); err == nil {
		e, _ := c.sh.store.Get(c.key)
		c.sh.metrics.lag.WithLabelValues(c.src.path).Set(float64(fi.Size() - e.Offset))
	}
}
