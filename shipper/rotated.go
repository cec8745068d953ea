package shipper

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/parsers"
)

// rotatedFile is a rotated copy of a followed file: name.N or name.N.gz
// (logrotate), <id>-json.log.N (Docker's json-file driver). A larger N is
// older.
type rotatedFile struct {
	path string
	n    int
	gz   bool // named .gz (for ordering); readRotated decides by content
}

// rotatedSiblings lists the rotated copies of path, oldest first, from a
// listing of its folder read at or after since.
func (sh *Shipper) rotatedSiblings(path string, since time.Time) []rotatedFile {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	return sh.dirs.rotated(dir, since)[base]
}

// dirListings shares one read of a folder among the files in it: 10,000
// files starting at once in one folder each looked for their rotated
// copies, reading the folder (and a descriptor) 10,000 times.
type dirListings struct {
	mu   sync.Mutex
	dirs map[string]*dirListing
}

type dirListing struct {
	mu   sync.Mutex // held while the folder is read
	at   time.Time  // when it was read
	sibs map[string][]rotatedFile
}

// rotated is the rotated copies in dir by the name of their live file,
// read at or after since.
func (d *dirListings) rotated(dir string, since time.Time) map[string][]rotatedFile {
	d.mu.Lock()
	if d.dirs == nil {
		d.dirs = map[string]*dirListing{}
	}
	l := d.dirs[dir]
	if l == nil {
		l = &dirListing{}
		d.dirs[dir] = l
	}
	for k, o := range d.dirs { // forget folders not looked at for a while
		if o != l && time.Since(o.at) > time.Minute && o.mu.TryLock() {
			delete(d.dirs, k)
			o.mu.Unlock()
		}
	}
	d.mu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at.IsZero() || l.at.Before(since) {
		l.at, l.sibs = time.Now(), listRotated(dir)
	}
	return l.sibs
}

// listRotated reads dir's rotated copies (name.N, name.N.gz), oldest first
// per live file.
func listRotated(dir string) map[string][]rotatedFile {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	out := map[string][]rotatedFile{}
	for _, e := range ents {
		name := e.Name()
		rest := strings.TrimSuffix(name, ".gz")
		gz := len(rest) < len(name)
		i := strings.LastIndexByte(rest, '.')
		if i <= 0 {
			continue
		}
		n, err := strconv.Atoi(rest[i+1:])
		if err != nil || n < 0 || strconv.Itoa(n) != rest[i+1:] {
			continue
		}
		base := rest[:i]
		out[base] = append(out[base], rotatedFile{path: filepath.Join(dir, name), n: n, gz: gz})
	}
	for _, fs := range out {
		sort.Slice(fs, func(i, j int) bool {
			if fs[i].n != fs[j].n {
				return fs[i].n > fs[j].n
			}
			return fs[i].gz && !fs[j].gz // mid-compression both exist: the same content
		})
	}
	return out
}

// rotatedBase is the live file that path is a rotated copy of, when that
// file exists: a glob matching both is read as one file and its rotations.
func rotatedBase(path string) (string, bool) {
	p := strings.TrimSuffix(path, ".gz")
	i := strings.LastIndexByte(p, '.')
	if i <= 0 {
		return "", false
	}
	if n, err := strconv.Atoi(p[i+1:]); err != nil || n < 0 {
		return "", false
	}
	base := p[:i]
	if fi, err := os.Stat(base); err == nil && fi.Mode().IsRegular() {
		return base, true
	}
	return "", false
}

// scanRotated reads, oldest first, the rotated copies of src that were not
// read to their end: on start (the shipper may have been down across
// several rotations) and after each rotation (two rotations may fall between
// two looks at the path).
//
// A pass that read anything is followed by another over a new listing: the
// copies are opened by name, oldest first, and a writer that rotates again
// meanwhile renames the one not opened yet (.1 becomes .2, after the pass
// went by .2): in a rotation storm (Docker's max-size, a rotation every
// 0.4 s) it was deleted before the next rotation's scan, its lines lost.
func (sh *Shipper) scanRotated(ctx context.Context, src source, since time.Time) {
	for pass := 0; pass < maxRotatedPasses; pass++ {
		read := false
		for _, rf := range sh.rotatedSiblings(src.path, since) {
			if ctx.Err() != nil {
				return
			}
			if sh.readRotated(ctx, src, rf) {
				read = true
			}
		}
		if !read {
			return
		}
		since = time.Now()
	}
}

// maxRotatedPasses bounds the passes of one scan (a writer that rotates
// faster than it is read would keep one going; the next rotation scans
// again).
const maxRotatedPasses = 8

// readRotated reads one rotated copy from where its content was left:
//   - its own saved offset (a rename keeps the inode), if the bytes before
//     it still have their checksum;
//   - else the saved offset of a file with the same first line whose
//     checksum matches this content (a copy or a .gz of a file that was
//     being read): the records keep that file's IDs;
//   - else from the start: a file never seen.
//
// It reports whether it read the file (a copy already read to its end, or
// not there, reports false).
func (sh *Shipper) readRotated(ctx context.Context, src source, rf rotatedFile) bool {
	f, err := sh.openFile(ctx, rf.path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && ctx.Err() == nil {
			sh.skip(rf.path, parsers.SkipReason(err), err)
		}
		return false
	}
	defer func() { f.Close(); sh.fds.release() }()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return false
	}
	di := statDevIno(fi)
	// Compressed or not is told by the magic bytes: logrotate's compress
	// without compressext leaves no ".gz".
	rf.gz = parsers.FileIsGzip(f)
	fp, err := fingerprint(f)
	switch {
	case errors.Is(err, errNotReady):
		return false // empty, or one line without its newline: nothing to frame yet
	case err != nil:
		reason := "unreadable"
		if rf.gz {
			reason = "bad-gzip"
		}
		sh.skip(rf.path, reason, err)
		return false
	}
	if !sh.hold(di, rf.path) {
		return false // being read already: the file that was just rotated away
	}
	defer sh.release(di)
	key := fileKey(di, fp)
	size := fi.Size()
	if rf.gz {
		size = -1 // unknown until read; see done below
	}
	done := func(off int64) bool {
		if rf.gz {
			// The gzip trailer has the length mod 2^32.
			isize, ok := gzISize(f, fi.Size())
			return off > 0 && ok && uint32(off) == isize
		}
		return off >= size
	}
	var start int64
	var line int
	var gen, id string
	e, seen := sh.store.Get(key)
	if seen {
		if done(max(e.Offset, sh.readUpTo(key))) {
			sh.store.touch(key)
			return false
		}
		if e.Sum != "" && rotatedSum(f, fi.Size(), rf.gz, e.Offset) != e.Sum {
			seen = false // another file under a reused inode
		} else {
			start, line, gen, id = e.Offset, e.Line, e.Gen, e.ID
		}
	}
	if !seen {
		var sum string
		for _, ke := range sh.store.byFingerprint(fp) {
			if ke.key == key || ke.Offset == 0 || ke.Sum == "" {
				continue
			}
			if rotatedSum(f, fi.Size(), rf.gz, ke.Offset) == ke.Sum {
				start, line, id, sum = ke.Offset, ke.Line, ke.fileID(ke.key), ke.Sum
				break
			}
		}
		sh.store.Set(key, Entry{Path: rf.path, ID: id, Offset: start, Line: line, Sum: sum})
		if id != "" && done(start) {
			return false
		}
	}
	var r io.Reader = f
	fd := f
	if rf.gz {
		zr, err := gzip.NewReader(f)
		if err != nil {
			sh.skip(rf.path, "bad-gzip", err)
			return false
		}
		defer zr.Close()
		if _, err := io.CopyN(io.Discard, zr, start); err != nil {
			if !errors.Is(err, io.EOF) {
				sh.skip(rf.path, "bad-gzip", err)
			}
			return false
		}
		r, fd = zr, nil
	} else if _, err := f.Seek(start, io.SeekStart); err != nil {
		sh.log.Error("cannot read rotated file", "file", rf.path, "offset", start, "err", err)
		return false
	}
	rsrc := source{path: rf.path, display: src.display + rf.path[len(src.path):], container: src.container}
	c := &cursor{sh: sh, src: rsrc, f: r, fd: fd, di: di, fp: fp, key: key, gen: gen, id: id,
		base: start, line: line, log: sh.log.With("file", rf.path)}
	c.init()
	c.startReplay()
	sh.metrics.rotations.WithLabelValues("rotated").Inc()
	c.log.Info("reading rotated file", "offset", start, "seen", seen, "continues", id)
	// The newest rotation may still be written to by a writer that has not
	// reopened its file yet (logrotate's create mode before the SIGHUP).
	var quiet time.Duration
	if rf.n <= 1 && !rf.gz {
		quiet = sh.cfg.RotateWait
	}
	c.readToEnd(ctx, quiet)
	sh.markRead(key, c.base)
	return true
}

// readToEnd reads the file until it has been quiet for quiet, then finishes
// it. When ctx ends first, what was read is sent and the rest is read on the
// next start.
func (c *cursor) readToEnd(ctx context.Context, quiet time.Duration) {
	c.ctx = ctx
	last := time.Now()
	for ctx.Err() == nil {
		n, err := c.fill()
		if err != nil {
			c.log.Error("read failed", "offset", c.base, "err", err)
			break
		}
		if n > 0 {
			last = time.Now()
			c.lines()
			continue
		}
		if time.Since(last) >= quiet {
			break
		}
		c.idle(time.Now())
		sleepCtx(ctx, c.sh.cfg.PollInterval/5)
	}
	if ctx.Err() != nil {
		c.closeBatch(true)
		return
	}
	c.finish()
}

// rotatedSum is the checksum of the bytes before off in a rotated file
// (decompressed for .gz).
func rotatedSum(f *os.File, size int64, gz bool, off int64) string {
	if !gz {
		return sumAt(f, off)
	}
	zr, err := gzip.NewReader(io.NewSectionReader(f, 0, size))
	if err != nil {
		return ""
	}
	n := min(off, sumWindow)
	if _, err := io.CopyN(io.Discard, zr, off-n); err != nil {
		return ""
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(zr, b); err != nil {
		return ""
	}
	return sumBytes(b)
}

// gzISize reads the uncompressed length (mod 2^32) from the gzip trailer.
func gzISize(f *os.File, size int64) (uint32, bool) {
	var b [4]byte
	if size < 18 {
		return 0, false
	}
	if _, err := f.ReadAt(b[:], size-4); err != nil {
		return 0, false
	}
	return binary.LittleEndian.Uint32(b[:]), true
}

// markRead notes that key was read to off in this run: a rotated file read
// to its end is not read again while the acks of its last batches are on
// their way.
func (sh *Shipper) markRead(key string, off int64) {
	sh.mu.Lock()
	if sh.readTo == nil {
		sh.readTo = map[string]int64{}
	}
	if off > sh.readTo[key] {
		sh.readTo[key] = off
	}
	sh.mu.Unlock()
}

func (sh *Shipper) readUpTo(key string) int64 {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.readTo[key]
}

// readCopy finishes the old content of a file that was truncated under us
// from its copy (copytruncate's name.1): the lines written between our last
// read and the truncation are only there. The copy is recognized by its
// first line and by the bytes we still hold (or a checkpoint); it is read
// from where we were, with the same record IDs, and its progress is saved
// under its own key.
func (c *cursor) readCopy(ctx context.Context) bool {
	if c.fd == nil || c.fp == "" {
		return false
	}
	sibs := c.sh.rotatedSiblings(c.src.path, time.Now())
	for i := len(sibs) - 1; i >= 0; i-- { // newest first
		rf := sibs[i]
		if rf.gz {
			continue
		}
		f, err := os.Open(rf.path)
		if err != nil {
			continue
		}
		fi, err := f.Stat()
		if err != nil || !c.isCopy(f, fi) {
			f.Close()
			continue
		}
		di := statDevIno(fi)
		if !c.sh.hold(di, rf.path) {
			f.Close()
			continue
		}
		readEnd := c.base + int64(c.w-c.r)
		c.log.Info("copytruncate: reading the rest of the old content from the copy", "copy", rf.path, "offset", readEnd)
		copyKey := fileKey(di, c.fp)
		id := c.fileID()
		// What was acknowledged so far, and every later ack, is the copy's.
		e, ok := c.sh.store.Get(c.key)
		if !ok || e.fileID(c.key) != id {
			e = Entry{Offset: c.lastSafe.offset, Line: c.lastSafe.line}
		}
		c.sh.store.Set(copyKey, Entry{Path: rf.path, ID: id, Offset: e.Offset, Line: e.Line, Sum: e.Sum})
		c.tracker.rekey(copyKey, rf.path, id)
		live := c.fd
		c.fd, c.f = f, f
		if _, err := f.Seek(readEnd, io.SeekStart); err == nil {
			c.readToEnd(ctx, 0)
		}
		c.sh.markRead(copyKey, c.base)
		c.fd, c.f = live, live
		f.Close()
		c.sh.release(di)
		return true
	}
	return false
}

// isCopy tells whether f holds the content this cursor was reading: the same
// first line, and the bytes still in the buffer (or the last checkpoint)
// there.
func (c *cursor) isCopy(f *os.File, fi os.FileInfo) bool {
	if statDevIno(fi) == c.di {
		return false
	}
	if fp, err := fingerprint(f); err != nil || fp != c.fp {
		return false
	}
	start := c.base - int64(c.r)
	if n := min(int64(c.w), fi.Size()-start); n > 0 && (n >= 64 || n == int64(c.w)) {
		b := make([]byte, n)
		if _, err := f.ReadAt(b, start); err != nil {
			return false
		}
		return bytes.Equal(b, c.buf[:n])
	}
	for k := len(c.checkpoints) - 1; k >= 0; k-- {
		if ck := c.checkpoints[k]; ck.off <= fi.Size() {
			return sumAt(f, ck.off) == ck.sum
		}
	}
	return false
}

// firstTime reports whether key is seen for the first time.
func (sh *Shipper) firstTime(key string) bool {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.once == nil {
		sh.once = map[string]bool{}
	}
	seen := sh.once[key]
	sh.once[key] = true
	return !seen
}

// skip reports, once per path and reason, input that is not shipped.
func (sh *Shipper) skip(path, reason string, err error) {
	if !sh.firstTime("skip:" + reason + ":" + path) {
		return
	}
	sh.metrics.skipped.WithLabelValues(reason).Inc()
	sh.log.Warn("not shipping file", "file", path, "reason", reason, "err", fmt.Sprint(err))
}

// heldBack reports, once per file, a file whose first line has no newline
// yet: nothing of it is shipped until the line ends (or reaches 4 KiB).
func (sh *Shipper) heldBack(path string, size int64) {
	if !sh.firstTime("held:" + path) {
		return
	}
	sh.metrics.skipped.WithLabelValues("no-first-line").Inc()
	sh.log.Info("file held back: its first line has no newline yet", "file", path, "bytes", size)
}

// isGzipFile tells a gzip file by its magic bytes, whatever its name.
func isGzipFile(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return parsers.FileIsGzip(f)
}
