// Package pipeline is the offline front half of Faultline: it expands the
// user's NODE=PATH arguments into files, frames, joins and parses each file
// with package parsers, and hands the events of all files to a function in
// time order, so that the rule engine sees the launch as it happened, just as
// it does live.
package pipeline

import (
	"bytes"
	"compress/gzip"
	"container/heap"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/faultline/faultline/parsers"
)

// Input is one argument: a file or folder, and the node it belongs to
// ("" = derive it from the path).
type Input struct {
	Node string
	Path string
}

// ParseArgs turns "NODE=PATH" and "PATH" arguments into inputs.
func ParseArgs(args []string) ([]Input, error) {
	if len(args) == 0 {
		return nil, errors.New("no input: give log files or folders (PATH or NODE=PATH)")
	}
	out := make([]Input, 0, len(args))
	for _, a := range args {
		in := Input{Path: a}
		// NODE=PATH, unless the whole argument is an existing path that
		// happens to contain '='.
		if i := strings.IndexByte(a, '='); i > 0 {
			if _, err := os.Stat(a); err != nil {
				in = Input{Node: a[:i], Path: a[i+1:]}
			}
		}
		if in.Path == "" {
			return nil, fmt.Errorf("%q: empty path", a)
		}
		out = append(out, in)
	}
	return out, nil
}

// File is one log file to read, with its labels.
type File struct {
	Path      string
	Node      string
	Container string
	// Data, when not nil, is the file's content (rule fixtures give log
	// lines inline); Path is then only a label.
	Data []byte
}

// Options configure Replay.
type Options struct {
	Cluster string
	// Warn receives problems with the input ("file:line: ..."); the replay
	// goes on. Nil discards them.
	Warn func(error)
	// ReuseFields hands every event of a file one Fields map, cleared
	// from one event to the next: fn must then not keep an event's
	// Fields past its call (copy them: maps.Clone). For the callers that
	// read each event once and keep nothing of it (diagnose's engine,
	// which clones what it keeps); the rest get a map of their own per
	// event, so that keeping an event is safe by default.
	ReuseFields bool
}

// Stats count what a replay read.
type Stats struct {
	Files    int
	Bytes    int64
	Lines    int64
	Records  int64
	Warnings int64
	// Failed are the files that could not be read, or not to their end
	// (each error names its file); their other events were replayed.
	Failed []error
}

// Replay reads every file of the inputs and calls fn with their events
// (fn must not keep the pointer; see ReplayFiles),
// merged across files by time (events without a time keep their place in
// their file). It stops at the first error of fn or when ctx is done.
func Replay(ctx context.Context, inputs []Input, opts Options, fn func(*parsers.Event) error) (Stats, error) {
	files, err := Expand(inputs, opts.Warn)
	if err != nil {
		return Stats{}, err
	}
	return ReplayFiles(ctx, files, opts, fn)
}

// ReplayFiles is Replay over an explicit file list. fn must not keep the
// event after it returns (the next event reuses it); copy what it needs
// (and its Fields too with Options.ReuseFields).
func ReplayFiles(ctx context.Context, files []File, opts Options, fn func(*parsers.Event) error) (Stats, error) {
	var st Stats
	warn := func(err error) {
		st.Warnings++
		if opts.Warn != nil {
			opts.Warn(err)
		}
	}
	h := &cursorHeap{}
	var cursors []*cursor
	defer func() {
		for _, c := range cursors {
			c.close()
		}
	}()
	pool := newFilePool()
	for i, f := range files {
		c, err := openCursor(pool, f, i, opts.Cluster, warn)
		if err != nil {
			warn(err)
			st.Failed = append(st.Failed, err)
			continue
		}
		c.reuse = opts.ReuseFields
		cursors = append(cursors, c)
		st.Files++
		if c.advance() {
			heap.Push(h, c)
		}
	}
	n := 0
	for h.Len() > 0 {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return st, err
			}
		}
		c := (*h)[0]
		// fn gets the cursor's own event: one allocation less per event.
		if err := fn(&c.head); err != nil {
			return st, err
		}
		if c.advance() {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	for _, c := range cursors {
		st.Bytes += c.reader.Offset()
		st.Lines += int64(c.lines)
		st.Records += int64(c.records)
		if c.failed != nil {
			st.Failed = append(st.Failed, c.failed)
		}
	}
	return st, ctx.Err()
}

// cursor pulls the events of one file in order.
type cursor struct {
	idx     int
	file    File
	f       *lazyFile
	gz      *gzip.Reader
	failed  error // the read error that ended the file early
	reader  *parsers.Reader
	joiner  *parsers.Joiner
	queue   recordHeap
	slab    []parsers.Record
	free    []*parsers.Record // records whose event was built: keep reuses them
	eof     bool
	lines   int
	records int
	last    time.Time // time of the previous event, for events that have none
	read    time.Time // the file's modification time: the time of records that have none
	head    parsers.Event
	reuse   bool              // Options.ReuseFields
	fields  map[string]string // head's Fields, reused from one event to the next (reuse)
	key     time.Time
	warn    func(error)
}

func openCursor(pool *filePool, f File, idx int, cluster string, warn func(error)) (*cursor, error) {
	c := &cursor{idx: idx, file: f}
	var r io.Reader
	id := f.Path
	var gz bool
	if f.Data != nil {
		r = bytes.NewReader(f.Data)
		gz = parsers.IsGzip(f.Data)
	} else {
		// Opened for the identity, closed at once: the pool opens it
		// again when it is read.
		fid, isGz, mtime, err := identify(f.Path)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		id, gz, c.read = fid, isGz, mtime
		lf := pool.file(f.Path)
		c.f, r = lf, lf
	}
	if gz { // told by content, not by a ".gz" name
		gz, err := gzip.NewReader(r)
		if err != nil {
			c.close()
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		c.gz, r = gz, gz
	}
	c.warn = func(err error) { warn(fmt.Errorf("%s: %w", f.Path, err)) }
	c.reader = parsers.NewReader(r, parsers.ReaderOptions{EOFIsEnd: true, Warn: c.warn})
	origin := parsers.Origin{Cluster: cluster, Node: f.Node, Container: f.Container, File: f.Path, FileID: id}
	// Offline, nothing is flushed for being idle (the whole file is there),
	// so the joiner's clock need not be read for every line.
	c.joiner = parsers.NewJoiner(origin, parsers.JoinOptions{Now: func() time.Time { return time.Time{} }}, func(r parsers.Record) {
		c.queue.push(queued{r.Offset, c.keep(r)})
	})
	return c, nil
}

// keep stores a completed record: in one released before (its event was
// built from a copy), else in the cursor's slab, allocated 256 records at a
// time. The window holds about maxReorder records, so a file's replay
// allocates a few slabs instead of one per 256 records (51 KB each: large
// objects, zeroed and collected; their allocation alone was 1% of diagnose).
func (c *cursor) keep(r parsers.Record) *parsers.Record {
	if n := len(c.free); n > 0 {
		p := c.free[n-1]
		c.free = c.free[:n-1]
		*p = r
		return p
	}
	if len(c.slab) == cap(c.slab) {
		c.slab = make([]parsers.Record, 0, 256)
	}
	c.slab = append(c.slab, r)
	return &c.slab[len(c.slab)-1]
}

func (c *cursor) close() {
	if c.gz != nil {
		c.gz.Close()
	}
	if c.f != nil {
		c.f.Close()
	}
}

// maxReorder bounds how many completed records a cursor holds back while an
// earlier record of another process is still being joined.
const maxReorder = 1024

// advance loads the file's next event into c.head; false at the end.
//
// The joiner completes records in the order they end, not the order they
// start (a `ray status` block stays open while other processes log), so
// completed records pass through an offset-ordered window: events then come
// out in file order.
func (c *cursor) advance() bool {
	for !c.ready() {
		if c.eof {
			if len(c.queue) == 0 {
				return false
			}
			break
		}
		l, err := c.reader.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				c.warn(err)
				c.failed = fmt.Errorf("%s: %w", c.file.Path, err)
			}
			c.eof = true
			c.joiner.Flush()
			continue
		}
		c.lines++
		c.joiner.Add(l)
	}
	rec := c.queue.pop().rec
	c.records++
	if c.reuse {
		if c.fields == nil {
			c.fields = make(map[string]string, 8)
		}
		c.head = parsers.ParseReusing(*rec, c.fields)
	} else {
		c.head = parsers.Parse(*rec)
	}
	c.free = append(c.free, rec) // the event holds a copy
	if c.head.Time.IsZero() {
		c.key = c.last
	} else {
		c.key = c.head.Time
		c.last = c.head.Time
	}
	if c.head.Time.IsZero() {
		// Neither its text, its framing nor an earlier record of its
		// process gave it a time (the joiner fills that in): the time the
		// file was last written, as the shipper gives it the time it read
		// it. Its place in the merge stays that of its file (c.key).
		c.head.Time, c.head.Record.Time = c.read, c.read
	}
	return true
}

// ready reports whether the earliest completed record can be released. The
// cursor keeps a window of maxReorder completed records and releases the
// lowest offset: nearly every record completes within a few hundred records
// of its start, so the window restores file order at O(log n) a record
// without asking the joiner what it still holds. A record held longer (a
// writer that fell silent mid-traceback) comes out a little late, which the
// time merge across files tolerates.
func (c *cursor) ready() bool {
	return len(c.queue) > 0 && (c.eof || len(c.queue) >= maxReorder)
}

// recordHeap is a min-heap of completed records by file offset (kept
// beside the pointer so that comparisons do not chase it). Written out
// rather than container/heap: every record is pushed and popped once, and
// the interface calls of Less and Swap were 3% of diagnose.
type recordHeap []queued

type queued struct {
	off int64
	rec *parsers.Record
}

func (h *recordHeap) push(q queued) {
	*h = append(*h, q)
	a := *h
	for i := len(a) - 1; i > 0; {
		p := (i - 1) / 2
		if a[p].off <= a[i].off {
			break
		}
		a[p], a[i] = a[i], a[p]
		i = p
	}
}

func (h *recordHeap) pop() queued {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a[n] = queued{}
	a = a[:n]
	for i := 0; ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && a[r].off < a[l].off {
			m = r
		}
		if a[i].off <= a[m].off {
			break
		}
		a[i], a[m] = a[m], a[i]
		i = m
	}
	*h = a
	return top
}

type cursorHeap []*cursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	if !h[i].key.Equal(h[j].key) {
		return h[i].key.Before(h[j].key)
	}
	return h[i].idx < h[j].idx
}
func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)   { *h = append(*h, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// SortFiles orders files by node then path, for stable output.
func SortFiles(files []File) {
	sort.Slice(files, func(i, j int) bool {
		if files[i].Node != files[j].Node {
			return files[i].Node < files[j].Node
		}
		return files[i].Path < files[j].Path
	})
}

// identify opens path once for its identity (parsers.Identify, the one the
// shipper uses), whether it is gzip-compressed (by its magic bytes) and its
// modification time.
func identify(path string) (string, bool, time.Time, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", false, time.Time{}, fmt.Errorf("file identity: %w", err)
	}
	defer f.Close()
	id, err := parsers.Identify(f)
	if err != nil && !errors.Is(err, parsers.ErrNoFirstLine) {
		return "", false, time.Time{}, err
	}
	var mtime time.Time
	if fi, err := f.Stat(); err == nil {
		mtime = fi.ModTime().UTC()
	}
	return id.String(), parsers.FileIsGzip(f), mtime, nil
}
