// Package index stores events for post-mortem search: the records once,
// compressed, in a chunk store, and in Bleve only their terms, by blocks of
// up to 63 records of one file (a term's frequency in a block document is
// the bit mask of the block's records that have it); an in-memory catalog
// of the blocks (times, lines, levels, sources, the file) answers time
// ranges, facets, the histogram and sorting without reading the records.
// A query is evaluated on the masks and, where the index terms cannot
// tell (a phrase, a bucketed number or hex ID), checked against the
// records themselves (plan.go); pages, context and highlights read the
// records of their blocks. Several shards are written in parallel.
//
// Layout of a data directory:
//
//	DIR/index/meta.json             shard count and layout version
//	DIR/index/shard-NN/bleve/       one Bleve (scorch) index of block documents per shard
//	DIR/index/shard-NN/blocks.dat   the shard's chunk store (chunks.go)
//	DIR/findings/NNNNNN.log         the findings, one JSON line per version stored (findings.go)
package index

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"math/bits"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/atomicfile"
	"github.com/faultline/faultline/parsers"
)

// Options tune an index. The zero value is usable.
type Options struct {
	// Shards is the number of shards written in parallel for a new index
	// (default: the number of CPUs, at least 2). An existing index keeps
	// the count it was created with.
	Shards int
	// BatchSize closes a shard's batch at this many records (default
	// 16384). Each batch is a Bleve segment. Ingest of 200k lines on 2
	// quiet cores, CPU-s per million lines: 4096 26.0, 8192 24.5, 12288
	// 23.2, 16384 23.5-24.8, 32768 28.7, 65536 38.6: larger batches
	// hold the heap near the soft memory limit (peak RSS 431 and 466 MB
	// against 409), where the collector runs back to back (65536: 24
	// collections and 5.7 times the mark CPU of 16384's 18, gctrace).
	BatchSize int
	// FlushInterval closes a non-empty batch this long after its first
	// event, so live events become searchable quickly (default 1s). It
	// also seals the blocks being filled, so a bulk load (ingest) wants it
	// long: partial blocks cost terms and compress worse (1s against 1m:
	// 16% more CPU per line).
	FlushInterval time.Duration
	// Safe makes each batch wait until it is on disk (the chunk store
	// synced, Bleve's segment persisted). By default batches return once
	// searchable (scorch's unsafe_batch), which is several times faster;
	// the data on disk is still consistent, a crash only loses the last
	// batches, and ingest or JetStream replay restores them.
	Safe bool
	// ReadOnly opens an existing index for searching only (several
	// processes may then share it); Add fails.
	ReadOnly bool
	// Partitioned was the choice to index partition 0 as a term; every
	// block now carries its partition in the catalog, so it changes
	// nothing. Kept for callers.
	Partitioned bool
	// SearchTimeout bounds each search and context lookup (default
	// DefaultSearchTimeout; negative: none).
	SearchTimeout time.Duration
	// DiskReserve is the free space below which writes wait (and are
	// retried) instead of failing half-way: Bleve must never see a full
	// disk (default 64 MiB; negative: no check).
	DiskReserve int64
	// CloseRetry is how long Close keeps retrying writes that fail
	// (default 10s); what is left is not indexed, and Close says so.
	CloseRetry time.Duration
	Logger     *slog.Logger
}

func (o *Options) defaults() {
	if o.Shards <= 0 {
		o.Shards = max(runtime.NumCPU(), 2)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 16384
	}
	if o.FlushInterval <= 0 {
		o.FlushInterval = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SearchTimeout == 0 {
		o.SearchTimeout = DefaultSearchTimeout
	}
	if o.DiskReserve == 0 {
		o.DiskReserve = 64 << 20
	}
	if o.CloseRetry <= 0 {
		o.CloseRetry = 10 * time.Second
	}
}

// Index is a sharded index of events plus the stored findings.
// All methods are safe for concurrent use.
type Index struct {
	dir     string
	opts    Options
	log     *slog.Logger
	mapping mapping.IndexMapping
	shards  []*shard
	tab     *tables
	codec   *codec
	cache   *lruCache[[]Hit]  // blocks' records, by count
	tables  *lruCache[[]byte] // groups' term tables, by bytes
	readers int               // goroutines a search reads blocks with

	// The writer side: where each file's records go, and the duplicate
	// filter (a record indexed again is left out: IDs are stable).
	addMu   sync.Mutex
	routes  map[int32]*route
	ids     *idFilter
	pendMu  sync.Mutex
	pending map[string]struct{} // added, not yet searchable
	// replaced holds, while Open reads the stores, the records blocks
	// say they replace.
	replaced []recordRef

	findingsMu     sync.Mutex
	findings       []finding.Finding // in the order first stored
	findingAt      map[string]int    // finding ID -> its place in findings
	sortedFindings []finding.Finding // findings sorted for Findings; nil once stale
	flog           *findingsLog      // appended by PutFindings (nil: read-only or closed)

	added   atomic.Uint64 // events accepted by Add
	dups    atomic.Uint64 // events left out as indexed already
	indexed atomic.Uint64 // events in completed batches
	batches atomic.Uint64
	errs    atomic.Uint64

	// files are the published blocks by file (see locateAt).
	filesMu sync.Mutex
	files   map[fileRef]*fileBlocks

	// Writes that fail (a full disk): by shard, the error; logged once.
	stallMu  sync.Mutex
	stalls   map[int]error
	stallAt  time.Time
	loggedAt time.Time // of the last stall logged
	size     int64     // bleveSize, read at sizeAt
	sizeAt   time.Time

	pruneMu sync.Mutex // DropPartition's file

	closeOnce sync.Once
	closeErr  error
}

// route is where a file's records go: a frame's worth (frameBlocks
// blocks) to one shard, the next to the next, so that one file's blocks
// are built by every shard, and a shard's blocks of a file share frames.
type route struct {
	shard, count int
}

type meta struct {
	Shards  int `json:"shards"`
	Version int `json:"version"`
}

// metaVersion is the layout of the index (2: time buckets, exact numbers and
// one stored event blob; 3: time buckets from 4.3 s up; 4: blocks of
// records in a chunk store, their terms in Bleve; 5: a Bleve document per
// group of blocks, the masks of its terms in the store's term tables).
const metaVersion = 5

// ErrReadOnly is returned by Add on an index opened with Options.ReadOnly.
var ErrReadOnly = errors.New("index: opened read-only")

// Open opens the index under dir, creating it when it does not exist. An
// index of version 3 or 4 is migrated (when not read-only).
func Open(dir string, opts Options) (*Index, error) {
	opts.defaults()
	idxDir := filepath.Join(dir, "index")
	if !opts.ReadOnly {
		if err := finishSwap(dir); err != nil {
			return nil, err
		}
	}
	m, err := readMeta(idxDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if opts.ReadOnly {
			return nil, fmt.Errorf("open index %s: no index there (run 'analyzer ingest' or 'analyzer serve' first)", dir)
		}
		m = meta{Shards: opts.Shards, Version: metaVersion}
		if err := os.MkdirAll(idxDir, 0o755); err != nil {
			return nil, fmt.Errorf("create index: %w", err)
		}
		if err := writeFileAtomic(filepath.Join(idxDir, "meta.json"), mustJSON(m)); err != nil {
			return nil, fmt.Errorf("create index: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("open index %s: %w", dir, err)
	case migratable(m.Version) && opts.ReadOnly:
		return nil, fmt.Errorf("open index %s: it has index version %d, this analyzer reads version %d; 'analyzer serve' or 'analyzer ingest' migrates it once when they open it (or re-ingest the logs into a new --data-dir)",
			dir, m.Version, metaVersion)
	case migratable(m.Version):
		if err := migrate(dir, m, opts); err != nil {
			return nil, err
		}
		return Open(dir, opts)
	case m.Version != metaVersion:
		return nil, fmt.Errorf("open index %s: it has index version %d, this analyzer reads version %d: re-ingest the logs into a new --data-dir (or remove %s)",
			dir, m.Version, metaVersion, idxDir)
	}
	opts.Shards = m.Shards
	c, err := newCodec()
	if err != nil {
		return nil, err
	}
	x := &Index{
		dir: dir, opts: opts, log: opts.Logger, mapping: NewMapping(), tab: newTables(), codec: c,
		cache: newLRUCache(512, func([]Hit) int64 { return 1 }), tables: newLRUCache(256<<20, func(t []byte) int64 { return int64(len(t)) }), readers: runtime.GOMAXPROCS(0),
		routes: map[int32]*route{}, ids: newIDFilter(), files: map[fileRef]*fileBlocks{}, pending: map[string]struct{}{}, stalls: map[int]error{},
	}
	for i := 0; i < m.Shards; i++ {
		s, err := x.openShard(filepath.Join(idxDir, fmt.Sprintf("shard-%02d", i)), i)
		if err != nil {
			for _, s := range x.shards {
				s.bl.Close()
				s.store.close(false)
			}
			return nil, fmt.Errorf("open index shard %d: %w", i, err)
		}
		x.shards = append(x.shards, s)
	}
	for _, r := range x.replaced {
		x.markDead(r)
	}
	x.replaced = nil
	if err := x.applyPruned(); err != nil {
		x.Close()
		return nil, err
	}
	if err := x.loadFindings(); err != nil {
		x.Close()
		return nil, err
	}
	if !opts.ReadOnly {
		for _, s := range x.shards {
			go s.run()
		}
	}
	return x, nil
}

// openShard opens a shard's Bleve index and reads its chunk store's
// headers into the catalog. Blocks past the last one Bleve has (a crash
// after the store was written, before the batch was) are cut off.
//
// Scorch's merge policy is its default but for the floor (see
// mergeFloorDocs).
func (x *Index) openShard(path string, n int) (*shard, error) {
	opts := x.opts
	bpath := filepath.Join(path, "bleve")
	// When a writer (serve, ingest) holds the shard's lock, readers and
	// other writers alike fail after a moment instead of waiting forever.
	cfg := map[string]interface{}{"unsafe_batch": !opts.Safe, "bolt_timeout": "3s",
		"scorchMergePlanOptions": map[string]interface{}{"FloorSegmentSize": mergeFloorDocs}}
	if opts.ReadOnly {
		cfg = map[string]interface{}{"read_only": true, "bolt_timeout": "3s"}
	}
	var bl bleve.Index
	var err error
	if _, serr := os.Stat(filepath.Join(bpath, "index_meta.json")); serr == nil {
		bl, err = bleve.OpenUsing(bpath, cfg)
	} else if opts.ReadOnly {
		return nil, fmt.Errorf("%s: %w", bpath, fs.ErrNotExist)
	} else {
		if err := os.MkdirAll(path, 0o755); err != nil {
			return nil, err
		}
		bl, err = bleve.NewUsing(bpath, x.mapping, bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, cfg)
	}
	if err != nil {
		if strings.Contains(err.Error(), "timeout") {
			err = fmt.Errorf("%w (is 'analyzer serve' or 'ingest' writing it? use the UI and API of serve instead)", err)
		}
		return nil, err
	}
	s := &shard{x: x, n: n, bl: bl, blCfg: cfg, path: bpath, in: make(chan shardOp, 4096), done: make(chan struct{})}
	upto := s.upto()
	spath := filepath.Join(path, storeFile)
	end, err := scanStore(spath, true, func(d decodedHeader) error {
		if d.meta.seq != uint64(len(s.blocks))+1 || opts.ReadOnly && d.meta.seq > upto {
			return errStop
		}
		m := d.meta
		m.key = x.tab.key(d.key)
		for i, name := range d.levels {
			m.levels[i].v = x.tab.val(name)
		}
		for i, name := range d.sources {
			m.sources[i].v = x.tab.val(name)
		}
		for _, id := range m.ids {
			x.ids.insert(id)
		}
		x.noteBlock(n, &m, d.key)
		x.replaced = append(x.replaced, d.replaces...)
		s.blocks = append(s.blocks, &m)
		x.indexed.Add(uint64(m.n))
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		bl.Close()
		return nil, err
	}
	if len(s.blocks) > 0 {
		last := s.blocks[len(s.blocks)-1]
		if g := last.grp; g == nil || g.first+uint64(g.n)-1 != last.seq {
			bl.Close()
			return nil, fmt.Errorf("chunk store %s: block %d: its group is cut short (the store is corrupt)", spath, last.seq)
		}
		end = last.grp.end
	} else {
		end = 0
	}
	if s.store, err = openStore(spath, end, opts.ReadOnly); err != nil {
		bl.Close()
		return nil, err
	}
	// Blocks the store has beyond Bleve's (a crash before the batch that
	// held them was persisted) are indexed again from their records; read
	// only, they are left out. Blocks Bleve has beyond the store (a power
	// loss after Bleve synced, before the page cache reached the store)
	// are never searched: their numbers are taken again, which replaces
	// them.
	s.nextSeq = uint64(len(s.blocks))
	if !opts.ReadOnly && upto > s.nextSeq {
		if err := s.dropBeyond(s.nextSeq); err != nil {
			s.store.close(false)
			bl.Close()
			return nil, fmt.Errorf("drop the documents of blocks the store lost: %w", err)
		}
	}
	if !opts.ReadOnly && upto < s.nextSeq {
		x.log.Warn("index: indexing again blocks the last run stored but did not index", "shard", n,
			"blocks", s.nextSeq-upto)
		if err := s.reindex(s.blocks[upto:]); err != nil {
			s.store.close(false)
			bl.Close()
			return nil, err
		}
	}
	return s, nil
}

// mergeFloorDocs is the size (in documents) below which scorch's merge
// planner takes segments as all alike. Its default, 2000, counts records;
// a block document holds up to 62 of them, so 2000 blocks (124k records a
// shard) fit in the first tier, where the planner wants one segment: every
// batch's segment was merged into the one before, all of it written again
// (ingest of 200k lines on 2 shards: 6 segments a shard, merged 3 times,
// 11.5 MB written for a 5.9 MB index, 15% of the ingest's CPU). 64 blocks
// (4k records) keeps the tiers of the default policy (10 segments a tier,
// merged 10 at a time) for segments of blocks: serve's small batches are
// still merged soon, ingest's 16k-record batches wait for tiers. A
// document is a group of up to groupCap blocks since version 5: 64 blocks
// are 4 documents.
const mergeFloorDocs = 64 / groupCap

func readMeta(idxDir string) (meta, error) {
	var m meta
	b, err := os.ReadFile(filepath.Join(idxDir, "meta.json"))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("meta.json: %w", err)
	}
	if m.Shards <= 0 {
		return m, fmt.Errorf("meta.json: bad shard count %d", m.Shards)
	}
	return m, nil
}

// Dir returns the data directory.
func (x *Index) Dir() string { return x.dir }

// Mapping returns the index mapping (for tools that inspect it).
func (x *Index) Mapping() mapping.IndexMapping { return x.mapping }

// Add queues an event for indexing. Its record ID identifies it: adding a
// record that is indexed (or queued) already leaves it out, so re-ingesting
// or a replay never duplicates. Add blocks when the writers are behind
// (back-pressure, a full disk included) and returns an error only on a
// closed or read-only index or an event without ID.
func (x *Index) Add(ev *parsers.Event) error {
	if x.opts.ReadOnly {
		return ErrReadOnly
	}
	if ev.ID == "" {
		return errors.New("index: event without record ID")
	}
	return x.addHit(HitFromEvent(ev), ev.FileID)
}

// addHit is Add of an event rendered as a hit, of the file fileID.
func (x *Index) addHit(h Hit, fileID string) error {
	if h.Lines <= 1 {
		h.Lines = 0 // one line is the norm; the hit omits it
	}
	key := x.tab.key(streamKeyOf(&h, fileID))
	x.addMu.Lock()
	var replaces *recordRef
	if x.ids.add(idHash(h.ID)) {
		// Maybe indexed already: the same record again is left out, a
		// new version of it (the same ID, other fields: a newer parser)
		// replaces it.
		ref, old, found, queued := x.lookup(&h, fileID)
		if found && (queued || sameRecord(&old, &h)) {
			x.addMu.Unlock()
			x.dups.Add(1)
			return nil
		}
		if found {
			replaces = &ref
		}
	}
	x.pendMu.Lock()
	x.pending[h.ID] = struct{}{}
	x.pendMu.Unlock()
	r := x.routes[key]
	if r == nil {
		f := fnv.New32a()
		f.Write([]byte(h.File))
		f.Write([]byte(h.Node))
		r = &route{shard: int(f.Sum32() % uint32(len(x.shards)))}
		x.routes[key] = r
	}
	s := x.shards[r.shard]
	if r.count++; r.count == blockCap*frameBlocks {
		r.count, r.shard = 0, (r.shard+1)%len(x.shards)
	}
	x.addMu.Unlock()
	select {
	case s.in <- shardOp{hit: h, key: key, replaces: replaces}:
		x.added.Add(1)
		return nil
	case <-s.done:
		return errClosed
	}
}

// lookup finds a record indexed (or queued) already. queued: it is not
// searchable yet (and cannot be replaced).
func (x *Index) lookup(h *Hit, fileID string) (ref recordRef, old Hit, found, queued bool) {
	id := h.ID
	x.pendMu.Lock()
	_, queued = x.pending[id]
	x.pendMu.Unlock()
	if queued {
		return ref, old, true, true
	}
	var err error
	if fileID != "" && id == parsers.RecordID(h.Node, fileID, h.Offset) {
		// The record is at its offset in its file: a block or two to read.
		ref, old, found, err = x.locateAt(context.Background(), fileRef{h.Node, fileID}, h.Offset, id)
	} else {
		ref, old, found, err = x.locate(context.Background(), id)
	}
	if err != nil {
		x.log.Warn("index: looking up a record added again", "id", id, "err", err)
	}
	return ref, old, found, false
}

// fileRef is a file: its node and identity, what its records' IDs derive
// from (parsers.RecordID).
type fileRef struct{ node, fileID string }

// fileBlock is a block of a file and the offsets its records span.
type fileBlock struct {
	shard          int
	seq            uint64
	minOff, maxOff int64
}

// fileBlocks are a file's blocks as published; sorted while each starts
// past the one before (a file read in order).
type fileBlocks struct {
	blocks []fileBlock
	sorted bool
}

// noteBlock records a published block of shard under its file.
func (x *Index) noteBlock(shard int, m *blockMeta, k streamKey) {
	if k.FileID == "" {
		return
	}
	x.filesMu.Lock()
	defer x.filesMu.Unlock()
	f := x.files[fileRef{k.Node, k.FileID}]
	if f == nil {
		f = &fileBlocks{sorted: true}
		x.files[fileRef{k.Node, k.FileID}] = f
	}
	if n := len(f.blocks); n > 0 && m.minOff <= f.blocks[n-1].maxOff {
		f.sorted = false
	}
	f.blocks = append(f.blocks, fileBlock{shard: shard, seq: m.seq, minOff: m.minOff, maxOff: m.maxOff})
}

// locateAt finds the record of a file at an offset with ID id: the blocks
// whose offsets span it are read, when one of its records has id's hash.
func (x *Index) locateAt(ctx context.Context, ref fileRef, off int64, id string) (recordRef, Hit, bool, error) {
	x.filesMu.Lock()
	f := x.files[ref]
	var cands []fileBlock
	if f != nil {
		bs := f.blocks
		if f.sorted {
			// The first block ending at or after off, and those after it that
			// start at or before it.
			i, _ := slices.BinarySearchFunc(bs, off, func(b fileBlock, off int64) int { return cmp.Compare(b.maxOff, off) })
			bs = bs[i:]
		}
		for _, b := range bs {
			if f.sorted && b.minOff > off {
				break
			}
			if b.minOff <= off && off <= b.maxOff {
				cands = append(cands, b)
			}
		}
	}
	x.filesMu.Unlock()
	h32 := idHash(id)
	for _, c := range cands {
		s := x.shards[c.shard]
		s.mu.RLock()
		m := s.blocks[c.seq-1]
		s.mu.RUnlock()
		if ref, h, ok, err := s.findIn(m, h32, id); err != nil || ok {
			return ref, h, ok, err
		}
	}
	return recordRef{}, Hit{}, false, ctxErr(ctx)
}

// markDead marks a record replaced by a newer version.
func (x *Index) markDead(r recordRef) {
	if r.shard < 0 || r.shard >= len(x.shards) {
		return
	}
	s := x.shards[r.shard]
	s.mu.RLock()
	defer s.mu.RUnlock()
	if r.seq == 0 || r.seq > uint64(len(s.blocks)) || r.slot < 0 || r.slot >= blockCap {
		return
	}
	atomic.OrUint64(&s.blocks[r.seq-1].dead, 1<<r.slot)
}

// sameRecord reports whether two records store alike.
func sameRecord(a, b *Hit) bool {
	return string(appendRecord(nil, a)) == string(appendRecord(nil, b))
}

// published is told of blocks searchable now.
func (x *Index) published(blocks []*sealed) {
	x.pendMu.Lock()
	for _, b := range blocks {
		for _, id := range b.recIDs {
			delete(x.pending, id)
		}
	}
	x.pendMu.Unlock()
}

// Flush waits until every event added before the call is searchable.
func (x *Index) Flush(ctx context.Context) error {
	if x.opts.ReadOnly {
		return nil
	}
	acks := make([]chan error, len(x.shards))
	for i, s := range x.shards {
		acks[i] = make(chan error, 1)
		select {
		case s.in <- shardOp{flushed: acks[i]}:
		case <-s.done:
			return errClosed
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	var errs []error
	for _, a := range acks {
		select {
		case err := <-a:
			errs = append(errs, err)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errors.Join(errs...)
}

// Close flushes pending events and closes the shards.
func (x *Index) Close() error {
	x.closeOnce.Do(func() {
		var errs []error
		for _, s := range x.shards {
			if !x.opts.ReadOnly {
				close(s.in)
			}
		}
		for _, s := range x.shards {
			if !x.opts.ReadOnly {
				<-s.done
				s.persist()
			}
			if err := s.store.close(!x.opts.ReadOnly); err != nil {
				errs = append(errs, fmt.Errorf("close shard %d: %w", s.n, err))
			}
			if err := s.bl.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close shard %d: %w", s.n, err))
			}
		}
		errs = append(errs, x.closeFindings())
		x.closeErr = errors.Join(errs...)
	})
	return x.closeErr
}

// Stats are counters for /metrics and progress output.
type Stats struct {
	Added      uint64 `json:"added"`      // events accepted by Add
	Duplicates uint64 `json:"duplicates"` // of those, left out as indexed already
	Indexed    uint64 `json:"indexed"`    // events in executed batches
	Batches    uint64 `json:"batches"`
	Errors     uint64 `json:"errors"` // failed batch attempts (each is retried)
	Shards     int    `json:"shards"`
	// Stalled, when not empty, says why writes are waiting (a full
	// disk): they are retried until they succeed.
	Stalled string `json:"stalled,omitempty"`
}

// Stats returns the writer's counters.
func (x *Index) Stats() Stats {
	return Stats{Added: x.added.Load() + x.dups.Load(), Duplicates: x.dups.Load(), Indexed: x.indexed.Load() + x.dups.Load(),
		Batches: x.batches.Load(), Errors: x.errs.Load(), Shards: len(x.shards), Stalled: x.stallReason()}
}

// DocCount returns the number of events in the index.
func (x *Index) DocCount() (uint64, error) {
	var n uint64
	for _, s := range x.shards {
		s.mu.RLock()
		for _, b := range s.blocks {
			n += uint64(bits.OnesCount64(b.live()))
		}
		s.mu.RUnlock()
	}
	return n, nil
}

// DiskSize returns the bytes used by the index directory.
func (x *Index) DiskSize() (int64, error) {
	var total int64
	err := filepath.WalkDir(filepath.Join(x.dir, "index"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // scorch removes merged files as we walk
			}
			return err
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				total += fi.Size()
			}
		}
		return nil
	})
	return total, err
}

func mustJSON(v any) []byte {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		panic(err) // only called with plain structs
	}
	return append(b, '\n')
}

// writeFileAtomic writes via a temporary file, fsync and a rename, so a
// reader never sees half a file and a crash does not lose it.
func writeFileAtomic(path string, data []byte) error {
	return atomicfile.WriteFile(path, data, 0o600)
}
