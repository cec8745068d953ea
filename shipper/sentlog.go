package shipper

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// The sent log makes a restart re-send exactly the batches it sent before,
// under their Nats-Msg-Id, so that JetStream's duplicate window drops every
// one the server had stored.
//
// Why a log and not batch boundaries computed from the file: a batch is
// closed by size, but also by time (--batch-wait, the joiner's idle flush),
// so that a line reaches the analyzer within milliseconds; a restarted
// shipper reads the same bytes at another pace and would cut them
// elsewhere. And a batch holds records, not byte ranges: with several
// writers in one file (stdout and stderr, processes) a record of one can be
// sent while an older one of another is still being joined, so records
// beyond the offset an acknowledgement saves are already stored.
//
// So, before a batch is published, the shipper appends to sent.log in the
// state dir the batch's ID, the offset its acknowledgement saves, and the
// offset and size of each of its records (about 4 bytes a record). The write
// is not synced: a process killed (SIGKILL, the OOM killer) loses nothing
// the kernel was given; only a machine that loses power may lose the last
// entries, and then re-sent records are stored twice (consumers drop them by
// record ID). After a restart, a file resumed at its saved offset S gets the
// logged batches holding records at or beyond S: each re-read record is put
// back into its batch by offset, and a batch is published again, under its
// own ID, once every record it can still get was read. A record that comes
// back with another extent (the joiner now sees lines that arrived after the
// crash: a traceback that was flushed in two parts) is not that batch's: it
// goes, with any record the log does not know, into a companion batch of its
// own ID, and the batch's offset is saved only once both are acknowledged.
// Such a record is then stored twice under its ID, the longer one last
// (the index keeps the last). A log entry is dropped once the saved offset
// of its file passes every record in it, or once it is older than the
// stream's duplicate window (the server no longer knows its ID).
const sentLogFile = "sent.log"

// sentLogLimit: once the log is this large it is rewritten with only the
// entries still needed (a few in-flight windows).
const sentLogLimit = 8 << 20

// recExtent is one record of a sent batch.
type recExtent struct {
	off  int64
	size int64
}

// sentBatch is one entry of the sent log.
type sentBatch struct {
	fileID  string
	msgID   string
	sentAt  time.Time
	end     mark // what its acknowledgement saves (advance false: nothing)
	records []recExtent
}

// maxOff is the largest record offset of b.
func (b *sentBatch) maxOff() int64 {
	var m int64 = -1
	for _, r := range b.records {
		m = max(m, r.off)
	}
	return m
}

// sentLog is the append-only log of sent batches.
type sentLog struct {
	dir     string
	log     *slog.Logger
	metrics *Metrics
	health  *Health

	mu     sync.Mutex
	f      *os.File
	size   int64
	buf    []byte
	failed bool // the last append failed
	said   stateSaid
	loaded map[string][]*sentBatch // by file ID: entries of earlier runs, until a cursor takes them
	window time.Duration           // the stream's duplicate window
	saved  func() map[string]int64 // file ID → offset saved on disk
}

// openSentLog reads dir/sent.log and opens it for appending.
func openSentLog(dir string, log *slog.Logger, m *Metrics, saved func() map[string]int64) (*sentLog, error) {
	l := &sentLog{dir: dir, log: log, metrics: m, loaded: map[string][]*sentBatch{}, saved: saved, window: 10 * time.Minute}
	path := filepath.Join(dir, sentLogFile)
	entries, err := readSentLog(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		// A torn or unreadable log costs exactness, not data: batches
		// re-sent without their IDs may be stored twice.
		log.Warn("sent log unreadable from some point on; batches sent before the restart may be stored twice", "path", path, "err", err)
	}
	n := 0
	for _, e := range entries {
		if l.needed(e, time.Now().Add(-sentLogMaxAge)) {
			l.loaded[e.fileID] = append(l.loaded[e.fileID], e)
			n++
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sent log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sent log: %w", err)
	}
	l.f, l.size = f, fi.Size()
	if n < len(entries) {
		l.mu.Lock()
		l.compact()
		l.mu.Unlock()
	}
	return l, nil
}

// sentLogMaxAge: entries are dropped after this long whatever the stream's
// duplicate window (it is known only once connected).
const sentLogMaxAge = 24 * time.Hour

// needed tells whether a restart from the offsets on disk may send e again.
func (l *sentLog) needed(e *sentBatch, cutoff time.Time) bool {
	if e.sentAt.Before(cutoff) {
		return false
	}
	off, ok := l.saved()[e.fileID]
	return !ok || e.maxOff() >= off
}

// setWindow sets the stream's duplicate window: entries older than it are
// of no use (the server forgot their IDs).
func (l *sentLog) setWindow(d time.Duration) {
	if d <= 0 {
		return
	}
	l.mu.Lock()
	l.window = d
	l.mu.Unlock()
}

func (l *sentLog) duplicateWindow() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.window
}

// take returns, in the order they were sent, the logged batches of fileID
// that hold a record at or beyond from, and forgets them (a cursor replays
// them once).
func (l *sentLog) take(fileID string, from int64) []*sentBatch {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	all := l.loaded[fileID]
	if len(all) == 0 {
		return nil
	}
	delete(l.loaded, fileID)
	var out []*sentBatch
	for _, b := range all {
		if b.maxOff() >= from {
			out = append(out, b)
		}
	}
	return out
}

// add logs b before it is published. It fails only when the state dir
// cannot take it; the batch is published anyway.
func (l *sentLog) add(b *sentBatch) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = appendSentBatch(l.buf[:0], b)
	n, err := l.f.Write(l.buf)
	if err != nil {
		if n > 0 {
			// A torn entry would hide every later one from the reader.
			if terr := l.f.Truncate(l.size); terr != nil {
				err = errors.Join(err, terr)
			}
		}
		l.metrics.stateErrors.WithLabelValues("sent-log").Inc()
		if !l.failed {
			l.failed = true
			l.health.set("sent-log", "cannot write it to the state dir: "+err.Error()+"; batches sent now may be stored twice after a crash")
		}
		if l.said.failed(time.Now()) {
			l.log.Error("cannot write the sent log; batches sent now may be stored twice if the shipper dies before they are acknowledged", "path", l.f.Name(), "err", err)
		}
		return
	}
	if l.failed {
		l.failed = false
		l.health.clear("sent-log")
		if l.said.recovered() {
			l.log.Info("sent log written again", "path", l.f.Name())
		}
	}
	l.size += int64(n)
	if l.size > sentLogLimit {
		l.compact()
	}
}

// compact rewrites the log with the entries still needed (l.mu held).
func (l *sentLog) compact() {
	path := l.f.Name()
	entries, err := readSentLog(path)
	if err != nil {
		l.log.Warn("sent log: cannot read it back to compact it", "err", err)
	}
	cutoff := time.Now().Add(-max(l.window, 10*time.Minute))
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		l.metrics.stateErrors.WithLabelValues("sent-log").Inc()
		l.log.Warn("sent log: cannot compact it", "err", err)
		return
	}
	w := bufio.NewWriter(f)
	var size int64
	kept := 0
	for _, e := range entries {
		if !l.needed(e, cutoff) {
			continue
		}
		b := appendSentBatch(nil, e)
		w.Write(b)
		size += int64(len(b))
		kept++
	}
	err = w.Flush()
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		f.Close()
		os.Remove(tmp)
		l.metrics.stateErrors.WithLabelValues("sent-log").Inc()
		l.log.Warn("sent log: cannot compact it", "err", err)
		return
	}
	l.f.Close()
	l.f, l.size = f, size
	if _, err := f.Seek(0, io.SeekEnd); err != nil {
		l.log.Warn("sent log: seek", "err", err)
	}
	l.log.Debug("sent log compacted", "kept", kept, "of", len(entries), "bytes", size)
}

// Close closes the log file.
func (l *sentLog) Close() {
	if l == nil {
		return
	}
	l.mu.Lock()
	l.f.Close()
	l.mu.Unlock()
}

// Entry layout: magic, uvarint payload length, payload, CRC-32C of the
// payload. Payload: file ID, message ID (uvarint length and bytes each),
// sent time (Unix ms, uvarint), end offset and line (uvarints), advance (a
// byte), record count, then each record's offset as a zigzag delta from the
// previous one's (the first from 0) and its size.
const sentMagic = 0xfb

var crcTable = crc32.MakeTable(crc32.Castagnoli)

func appendSentBatch(dst []byte, b *sentBatch) []byte {
	start := len(dst)
	dst = append(dst, sentMagic, 0, 0, 0, 0) // length placeholder: 4 bytes big-endian
	p := len(dst)
	dst = binary.AppendUvarint(dst, uint64(len(b.fileID)))
	dst = append(dst, b.fileID...)
	dst = binary.AppendUvarint(dst, uint64(len(b.msgID)))
	dst = append(dst, b.msgID...)
	dst = binary.AppendUvarint(dst, uint64(b.sentAt.UnixMilli()))
	dst = binary.AppendUvarint(dst, uint64(b.end.offset))
	dst = binary.AppendUvarint(dst, uint64(b.end.line))
	adv := byte(0)
	if b.end.advance {
		adv = 1
	}
	dst = append(dst, adv)
	dst = binary.AppendUvarint(dst, uint64(len(b.records)))
	var prev int64
	for _, r := range b.records {
		dst = binary.AppendVarint(dst, r.off-prev)
		dst = binary.AppendUvarint(dst, uint64(r.size))
		prev = r.off
	}
	binary.BigEndian.PutUint32(dst[start+1:], uint32(len(dst)-p))
	return binary.BigEndian.AppendUint32(dst, crc32.Checksum(dst[p:], crcTable))
}

// errSentLogTorn: an entry does not check; what follows it is not read.
var errSentLogTorn = errors.New("torn or corrupt entry")

// readSentLog reads every whole entry of the log, up to the first that does
// not check.
func readSentLog(path string) ([]*sentBatch, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*sentBatch
	for off := 0; off < len(b); {
		if len(b)-off < 9 || b[off] != sentMagic {
			return out, fmt.Errorf("offset %d: %w", off, errSentLogTorn)
		}
		n := int(binary.BigEndian.Uint32(b[off+1:]))
		if n > len(b)-off-9 {
			return out, fmt.Errorf("offset %d: %w", off, errSentLogTorn)
		}
		payload := b[off+5 : off+5+n]
		if crc32.Checksum(payload, crcTable) != binary.BigEndian.Uint32(b[off+5+n:]) {
			return out, fmt.Errorf("offset %d: %w", off, errSentLogTorn)
		}
		e, err := parseSentBatch(payload)
		if err != nil {
			return out, fmt.Errorf("offset %d: %w", off, err)
		}
		out = append(out, e)
		off += 9 + n
	}
	return out, nil
}

func parseSentBatch(p []byte) (*sentBatch, error) {
	r := sentReader{b: p}
	e := &sentBatch{}
	e.fileID = r.str()
	e.msgID = r.str()
	e.sentAt = time.UnixMilli(int64(r.uvarint()))
	e.end.offset = int64(r.uvarint())
	e.end.line = int(r.uvarint())
	e.end.advance = r.byte() == 1
	n := r.uvarint()
	if r.err == nil && n > uint64(len(p)) {
		r.err = errSentLogTorn
	}
	if r.err != nil {
		return nil, r.err
	}
	e.records = make([]recExtent, 0, n)
	var prev int64
	for i := uint64(0); i < n && r.err == nil; i++ {
		off := prev + r.varint()
		e.records = append(e.records, recExtent{off: off, size: int64(r.uvarint())})
		prev = off
	}
	return e, r.err
}

type sentReader struct {
	b   []byte
	err error
}

func (r *sentReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errSentLogTorn
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *sentReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errSentLogTorn
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *sentReader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errSentLogTorn
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *sentReader) str() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errSentLogTorn
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}
