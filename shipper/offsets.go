package shipper

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/faultline/faultline/internal/atomicfile"
)

// stateFile is the one file in --state-dir that holds every file's offset.
const stateFile = "offsets.json"

// Entry is what the shipper remembers about one file identity: how far the
// server has acknowledged it.
type Entry struct {
	Path   string `json:"path"`          // last path it was seen at (for humans)
	Gen    string `json:"gen,omitempty"` // generation, set when the file was truncated in place
	Offset int64  `json:"offset"`        // every record below this offset is acknowledged
	Line   int    `json:"line"`          // physical lines below Offset
	// Sum is the checksum of the bytes just before Offset (sumWindow of
	// them): a file that kept its device, inode and first line but was
	// rewritten (copytruncate, then the same banner) fails it on resume, and
	// a copy of the file (copytruncate's, or a .gz) passes it.
	Sum string `json:"sum,omitempty"`
	// ID is the file ID of the records when it is not the key's own: a
	// rotated copy that continues the file it was copied from.
	ID      string    `json:"id,omitempty"`
	Updated time.Time `json:"updated"`
}

// fileID is the ID the records of the file under key carry.
func (e Entry) fileID(key string) string {
	switch {
	case e.ID != "":
		return e.ID
	case e.Gen != "":
		return key + "~" + e.Gen
	}
	return key
}

type stateDoc struct {
	Version int              `json:"version"`
	Files   map[string]Entry `json:"files"`
}

// Store keeps acknowledged offsets keyed by file identity (device, inode and
// a fingerprint of the first line) and writes them to disk atomically
// (temporary file, fsync, rename, fsync of the folder), so a kill -9 or an
// OOM kill at any moment leaves either the old or the new state, never a torn
// one. Writes are coalesced: Set only marks the state dirty and a background
// loop writes it as fast as the disk allows.
type Store struct {
	dir string
	log *slog.Logger

	every      time.Duration // at most one write per this (Config.SaveInterval)
	metrics    *Metrics
	health     *Health
	flushMu    sync.Mutex    // one Flush at a time
	encodeTime time.Duration // of the last Flush (Run's pace)

	mu      sync.Mutex
	files   map[string]Entry
	saved   map[string]int64 // file ID → offset as last written to disk
	dirty   bool
	writeCh chan struct{}
	err     error     // last write error
	said    stateSaid // what was logged of write errors
}

// OpenStore reads dir/offsets.json (a missing file is an empty state).
func OpenStore(dir string, log *slog.Logger) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	s := &Store{dir: dir, log: log, files: map[string]Entry{}, writeCh: make(chan struct{}, 1), every: storeFlushEvery}
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("read state: %w", err)
	default:
		var doc stateDoc
		if err := json.Unmarshal(b, &doc); err != nil {
			// Atomic writes make this unlikely; starting over re-sends
			// (harmless, deduplicated by ID) rather than refusing to run.
			log.Error("state file unreadable, starting from the beginning of every file", "path", filepath.Join(dir, stateFile), "err", err)
		} else if doc.Files != nil {
			s.files = doc.Files
		}
	}
	s.saved = savedOffsets(s.files)
	return s, nil
}

// savedOffsets is, per file ID, the largest offset of files.
func savedOffsets(files map[string]Entry) map[string]int64 {
	out := make(map[string]int64, len(files))
	for k, e := range files {
		id := e.fileID(k)
		out[id] = max(out[id], e.Offset)
	}
	return out
}

// savedOnDisk is, per file ID, the offset the state on disk holds: the sent
// log keeps what a restart from there would send again.
func (s *Store) savedOnDisk() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saved
}

// Get returns the entry of a file identity.
func (s *Store) Get(key string) (Entry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.files[key]
	return e, ok
}

// keyedEntry is an entry with its key.
type keyedEntry struct {
	key string
	Entry
}

// byFingerprint lists the entries of files whose first line has fingerprint
// fp (keys are dev:ino:fp), largest offset first: the candidates a copy of
// one of them (a new inode) may continue.
func (s *Store) byFingerprint(fp string) []keyedEntry {
	s.mu.Lock()
	var out []keyedEntry
	for k, e := range s.files {
		if strings.HasSuffix(k, ":"+fp) {
			out = append(out, keyedEntry{k, e})
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Offset > out[j].Offset })
	return out
}

// touch keeps the entry of a file that still exists from being pruned: a
// rotated file kept for months (logrotate's rotate 52) must not be read
// again once its entry is a month old.
func (s *Store) touch(key string) {
	s.mu.Lock()
	e, ok := s.files[key]
	s.mu.Unlock()
	if ok && time.Since(e.Updated) > 24*time.Hour {
		s.Set(key, e)
	}
}

// Set records an entry and schedules a write.
func (s *Store) Set(key string, e Entry) {
	e.Updated = time.Now().UTC()
	s.mu.Lock()
	s.files[key] = e
	s.dirty = true
	s.mu.Unlock()
	select {
	case s.writeCh <- struct{}{}:
	default:
	}
}

// Run writes the state whenever it changed until ctx is done, then writes it
// a last time.
//
// Writes are at most every s.every (--save-interval, default
// storeFlushEvery): each is a temp file, an fsync and a rename (13% of the
// shipper's CPU when done on every ack). A crash then re-sends what was
// acknowledged since the last write, and what was in flight; the sent log
// (sentLogFile) makes those the batches sent before, under their IDs, so
// JetStream's duplicate window drops them.
func (s *Store) Run(ctx context.Context) {
	var retry <-chan time.Time // after a failed write: tried again without waiting for a change
	for {
		select {
		case <-ctx.Done():
			s.Flush()
			return
		case <-s.writeCh:
		case <-retry:
		}
		retry = nil
		if s.Flush() != nil {
			retry = time.After(storeRetryEvery)
		}
		// Encoding takes at most a tenth of the time: with thousands of
		// files the state is megabytes.
		select {
		case <-ctx.Done():
			s.Flush()
			return
		case <-time.After(max(s.every, 9*s.encodeTime)):
		}
	}
}

const storeFlushEvery = 50 * time.Millisecond

// storeRetryEvery: a write that failed (a full state dir) is tried again
// this often until it succeeds, whether or not more offsets changed.
const storeRetryEvery = time.Second

// Flush writes the state now if it changed.
func (s *Store) Flush() error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	if !s.dirty {
		s.mu.Unlock()
		return nil
	}
	s.prune(time.Now().Add(-30 * 24 * time.Hour))
	// Encoded from a copy: acks (Set) must not wait for the encoding of
	// thousands of files (they hold a slot of the publisher's window).
	files := maps.Clone(s.files)
	s.dirty = false
	s.mu.Unlock()
	start := time.Now()
	b, err := json.Marshal(stateDoc{Version: 1, Files: files})
	saved := savedOffsets(files)
	s.encodeTime = time.Since(start)
	if err == nil {
		err = atomicfile.WriteFile(filepath.Join(s.dir, stateFile), b, 0o600)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.dirty = true // try again on the next change
		if s.metrics != nil {
			s.metrics.stateErrors.WithLabelValues("offsets").Inc()
		}
		if s.said.failed(time.Now()) {
			s.log.Error("cannot write offsets; shipping goes on, and they are written once the state dir takes them", "err", err)
		}
		s.health.set("offsets", "cannot write them to the state dir: "+err.Error()+"; shipping goes on, and they are written once it has room (a crash meanwhile sends again what was shipped since)")
	} else {
		s.saved = saved
		s.health.clear("offsets")
		if s.err != nil && s.said.recovered() {
			s.log.Info("offsets written again")
		}
	}
	s.err = err
	return err
}

// prune forgets files not seen for a long time so that the state stays small
// on a node that runs thousands of containers over its life.
func (s *Store) prune(before time.Time) {
	for k, e := range s.files {
		if e.Updated.Before(before) {
			delete(s.files, k)
		}
	}
}

// tracker advances one open file's persisted offset over the contiguous
// prefix of acknowledged batches. Batches of one file are acknowledged in any
// order (a retried batch can be overtaken), so an ack of batch k+1 must not
// move the offset past batch k until k is acknowledged too.
type tracker struct {
	store *Store
	key   string
	path  string
	gen   string
	id    string // Entry.ID

	mu      sync.Mutex
	pending []*mark // oldest first
	retired bool    // file truncated under us: later acks must not write
	saved   int64   // offset last set
}

// mark is a batch's place in the file: once it and every earlier batch are
// acknowledged, everything below offset has been stored by the server.
type mark struct {
	offset  int64
	line    int
	sum     string // checksum of the bytes before offset ("" if unknown)
	advance bool   // false for a batch cut in the middle of a record flush
	extra   int    // acknowledgements still needed besides one (a batch sent again with its companion)
	done    bool
}

func (t *tracker) add(m *mark) {
	t.mu.Lock()
	t.pending = append(t.pending, m)
	t.mu.Unlock()
}

// ack marks m done and persists the new offset if the done prefix grew.
func (t *tracker) ack(m *mark) {
	t.mu.Lock()
	if m.extra > 0 {
		m.extra--
		t.mu.Unlock()
		return
	}
	m.done = true
	var last *mark
	i := 0
	for ; i < len(t.pending) && t.pending[i].done; i++ {
		if t.pending[i].advance {
			last = t.pending[i]
		}
	}
	t.pending = t.pending[i:]
	// Set under t.mu so that two acks racing cannot store offsets out of
	// order; never lowered (a batch of the last run sent again may save
	// less than one sent after it).
	if last != nil && !t.retired && t.store != nil && last.offset >= t.saved { // stdin has no store: nothing to resume
		t.saved = last.offset
		t.store.Set(t.key, Entry{Path: t.path, Gen: t.gen, ID: t.id, Offset: last.offset, Line: last.line, Sum: last.sum})
	}
	t.mu.Unlock()
}

// rekey moves the file's progress to another key: the rest of a truncated
// file is read from its copy, so later acks are the copy's.
func (t *tracker) rekey(key, path, id string) {
	t.mu.Lock()
	t.key, t.path, t.gen, t.id = key, path, "", id
	t.mu.Unlock()
}

func (t *tracker) retire() {
	t.mu.Lock()
	t.retired = true
	t.mu.Unlock()
}

// inFlight reports whether batches of this file await their ack.
func (t *tracker) inFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.pending)
}

// stateSaid keeps the log of a state file's write errors to one line per
// episode: a disk that stays nearly full fails some writes and takes
// others, and each temporary file's name makes every error another string.
type stateSaid struct {
	at      time.Time // when a failure was last logged
	pending bool      // a failure was logged and its recovery not yet
}

// failed tells whether to log a failure now: not if one was logged in the
// last minute.
func (s *stateSaid) failed(now time.Time) bool {
	if s.pending || now.Sub(s.at) < time.Minute {
		return false
	}
	s.at, s.pending = now, true
	return true
}

// recovered tells whether to log a recovery: once per logged failure.
func (s *stateSaid) recovered() bool {
	ok := s.pending
	s.pending = false
	return ok
}
