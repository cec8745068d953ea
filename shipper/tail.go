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
	"github.com/faultline/faultline/wire"
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
	// fingerprintBytes of the first line identify a file (with dev+inode);
	// the same formula as parsers.FileIdentity so IDs match offline ingest.
	fingerprintBytes = 4096
)

var errNotReady = errors.New("file has no complete first line yet")

// devIno is a file's place on disk: two paths with the same devIno are one
// file (a glob matching both foo.log and a rename of it).
type devIno struct{ dev, ino uint64 }

func statDevIno(fi os.FileInfo) devIno {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return devIno{uint64(st.Dev), st.Ino}
	}
	return devIno{}
}

// fingerprint hashes the first line (at most fingerprintBytes) of f. It fails
// with errNotReady until that line is complete, so that the identity of a
// file being written does not change under us.
func fingerprint(f *os.File) (string, error) {
	head := make([]byte, fingerprintBytes)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	head = head[:n]
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	} else if n < fingerprintBytes {
		return "", errNotReady
	}
	sum := sha256.Sum256(head)
	return hex.EncodeToString(sum[:8]), nil
}

// source is what a cursor reads: where it is, what to call it.
type source struct {
	path      string // host path opened
	display   string // path in records (the container's own path for container files)
	container string
}

// cursor reads one open file: frames lines, feeds the decoder and joiner,
// fills batches and hands them to the publisher with the offset each one
// makes safe to persist.
type cursor struct {
	sh  *Shipper
	src source
	f   io.Reader
	fd  *os.File // nil for stdin
	di  devIno
	key string // dev:ino:fingerprint; "" when offsets are not persisted
	fp  string
	gen string
	log *slog.Logger

	buf      []byte
	r, w     int
	base     int64 // file offset of buf[r]
	line     int   // physical lines consumed before base
	long     bool  // inside an overlong line: keeping its head, skipping the rest
	longOff  int64
	longHead []byte

	dec  *parsers.Decoder
	join *parsers.Joiner
	enc  wire.Encoder
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
	body     []byte
	count    int
	firstID  string
	started  time.Time // first record of the current batch
	lastSafe mark
	warnings int
	ctx      context.Context
}

type lineMark struct {
	off int64
	num int
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
	c := &cursor{sh: sh, src: src, f: f, fd: f, di: di, fp: fp,
		key: strconv.FormatUint(di.dev, 10) + ":" + strconv.FormatUint(di.ino, 10) + ":" + fp,
		log: sh.log.With("file", src.path)}
	if e, ok := sh.store.Get(c.key); ok {
		if e.Offset <= fi.Size() {
			c.base, c.line, c.gen = e.Offset, e.Line, e.Gen
		} else {
			// Truncated (copytruncate) while we were not running, then the
			// first line was rewritten identically: a new generation.
			c.gen = newGen()
			c.log.Info("file shrank below its saved offset, reading it again from the start", "saved", e.Offset, "size", fi.Size())
			sh.metrics.rotations.WithLabelValues("truncate").Inc()
		}
	}
	if c.base > 0 {
		if _, err := f.Seek(c.base, io.SeekStart); err != nil {
			return nil, fmt.Errorf("seek %s: %w", src.path, err)
		}
	}
	c.init()
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
	case c.gen != "":
		return c.key + "~" + c.gen
	}
	return c.key
}

func (c *cursor) init() {
	c.buf = make([]byte, readBufSize)
	c.r, c.w = 0, 0
	c.long = false
	c.dec = parsers.NewDecoder(parsers.FormatAuto)
	origin := parsers.Origin{Cluster: c.sh.cfg.Cluster, Node: c.sh.cfg.Node, Container: c.src.container,
		File: c.src.display, FileID: c.fileID()}
	c.now = time.Now()
	c.join = parsers.NewJoiner(origin, parsers.JoinOptions{Now: c.clock}, c.emit)
	c.tracker = &tracker{store: c.sh.store, key: c.key, path: c.src.path, gen: c.gen}
	if c.key == "" {
		c.tracker.store = nil
	}
	c.subject = c.sh.subject
	c.body = c.sh.pub.body()
	c.fifo = c.fifo[:0]
	c.lastSafe = mark{offset: c.base, line: c.line}
	if c.key != "" && c.gen != "" {
		if e, ok := c.sh.store.Get(c.key); !ok || e.Gen != c.gen {
			c.sh.store.Set(c.key, Entry{Path: c.src.path, Gen: c.gen, Offset: c.base, Line: c.line})
		}
	}
}

// fill reads more bytes; n == 0 with a nil error means EOF for now.
func (c *cursor) clock() time.Time { return c.now }

func (c *cursor) fill() (int, error) {
	if c.r == c.w {
		c.r, c.w = 0, 0
	} else if c.w == len(c.buf) && c.r > 0 {
		c.w = copy(c.buf, c.buf[c.r:c.w])
		c.r = 0
	}
	if c.w == len(c.buf) {
		// A line fills the whole buffer: grow it up to the line limit, then
		// keep the head of the line and skip to its end.
		if len(c.buf) <= parsers.DefaultMaxLineBytes {
			nb := make([]byte, 2*len(c.buf))
			copy(nb, c.buf[:c.w])
			c.buf = nb
		} else {
			c.long = true
			c.longOff = c.base
			c.longHead = append(c.longHead[:0], c.buf[:parsers.DefaultMaxLineBytes]...)
			c.base += int64(c.w)
			c.r, c.w = 0, 0
		}
	}
	n, err := c.f.Read(c.buf[c.w:])
	c.now = time.Now()
	c.w += n
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
			c.warn("line too long, truncated", c.longOff, fmt.Sprintf("%d bytes, kept %d", size, len(c.longHead)))
			c.feed(c.longHead, c.longOff, size)
			c.long = false
			if cap(c.buf) > 4*readBufSize && c.w-c.r-i-1 <= readBufSize {
				nb := make([]byte, readBufSize)
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
	c.addMetrics()
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
func (c *cursor) feed(raw []byte, off, size int64) {
	c.line++
	c.mLines++
	c.mBytes += size
	c.fifo = append(c.fifo, lineMark{off, c.line})
	l, ok, err := c.dec.Decode(raw, off, size, c.line)
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
	start := len(c.body)
	c.body = c.enc.Append(c.body, &r)
	n := len(c.body) - start
	if n > c.sh.hardLimit {
		c.body = c.body[:start]
		wire.FitRecord(&r, c.sh.hardLimit)
		c.sh.metrics.truncated.Inc()
		c.log.Warn("record larger than a message, truncated", "offset", r.Offset, "line", r.Line, "bytes", n, "limit", c.sh.hardLimit)
		c.body = c.enc.Append(c.body, &r)
		n = len(c.body) - start
	}
	if start > 0 && start+n > c.sh.hardLimit {
		rec := append([]byte(nil), c.body[start:]...)
		c.body = c.body[:start]
		c.closeBatch(false)
		c.body = append(c.body, rec...)
	}
	if c.count == 0 {
		c.firstID = r.ID
		c.started = time.Now()
	}
	c.count++
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
	if advance {
		if sp, ok := c.safePoint(); ok {
			m.offset, m.line, m.advance = sp.offset, sp.line, true
			c.lastSafe = sp
		}
	}
	t := c.tracker
	t.add(m)
	b := &batch{subject: c.subject, body: c.body, count: c.count,
		msgID: wire.MsgID(c.firstID, c.count), onAck: func() { t.ack(m) }}
	c.body = c.sh.pub.body()
	c.count = 0
	if err := c.sh.pub.Publish(c.ctx, b); err != nil {
		return // shutting down: the offset stays where the acks left it
	}
}

// idle runs while the file has no new bytes: flush records whose writer went
// quiet and close a batch that waited long enough.
func (c *cursor) idle(now time.Time) {
	c.now = now
	c.join.FlushIdle(c.sh.cfg.FlushTimeout)
	c.addMetrics()
	if c.count > 0 && now.Sub(c.started) >= c.sh.cfg.BatchWait {
		c.closeBatch(true)
	}
}

// finish ends the file: the unterminated last line, partials and pending
// records are emitted and the last batch is sent.
func (c *cursor) finish() {
	c.drain()
	c.addMetrics()
	c.closeBatch(true)
}

// drain frames the unterminated last line and emits every partial line and
// pending record.
func (c *cursor) drain() {
	if c.r < c.w && !c.long {
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
	for {
		if ctx.Err() != nil {
			c.closeBatch(true)
			return followStopped
		}
		n, err := c.fill()
		if err != nil {
			c.log.Error("read failed", "offset", c.base, "err", err)
		}
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
		switch c.checkFile() {
		case fileMoved:
			// The caller opens the new file at once and finishes this one
			// beside it (drainRenamed): Docker may rotate again soon.
			c.sh.metrics.rotations.WithLabelValues("rename").Inc()
			return followRotated
		case fileRemoved:
			draining, lastGrowth = followGone, time.Now()
			continue
		case fileTruncated:
			c.sh.metrics.rotations.WithLabelValues("truncate").Inc()
			c.finish()
			c.tracker.retire()
			c.restartTruncated()
			continue
		}
		c.updateLag()
		wait := poll
		if c.count > 0 {
			if d := c.sh.cfg.BatchWait - time.Since(c.started); d < wait {
				wait = max(d, time.Millisecond)
			}
		}
		if _, ok := c.join.PendingOffset(); ok && c.sh.cfg.FlushTimeout/2 < wait {
			wait = c.sh.cfg.FlushTimeout / 2
		}
		sleepCtx(ctx, wait)
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
// Rotate_Wait), then finishes it.
func (c *cursor) drainRenamed(ctx context.Context) {
	lastGrowth := time.Now()
	for ctx.Err() == nil {
		n, err := c.fill()
		if err != nil {
			c.log.Error("read failed", "offset", c.base, "err", err)
			break
		}
		if n > 0 {
			lastGrowth = time.Now()
			c.lines()
			continue
		}
		if time.Since(lastGrowth) >= c.sh.cfg.RotateWait {
			break
		}
		c.idle(time.Now())
		sleepCtx(ctx, c.sh.cfg.PollInterval/5)
	}
	c.finish()
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

// restartTruncated starts the same file over at offset 0 as a new generation:
// its records get new IDs (the old offsets now hold other bytes).
func (c *cursor) restartTruncated() {
	c.log.Info("file truncated, reading it from the start", "offset", c.base)
	if _, err := c.fd.Seek(0, io.SeekStart); err != nil {
		c.log.Error("seek after truncation", "err", err)
	}
	c.fp = ""
	if fp, err := fingerprint(c.fd); err == nil {
		c.fp = fp
		c.key = strconv.FormatUint(c.di.dev, 10) + ":" + strconv.FormatUint(c.di.ino, 10) + ":" + fp
	}
	c.gen = newGen()
	c.base, c.line = 0, 0
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
