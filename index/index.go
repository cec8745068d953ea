// Package index stores events in Bleve for post-mortem search: a lean
// mapping with a log-aware analyzer, a batching writer over several shards
// written in parallel and searched together through a bleve.IndexAlias, the
// query language a user types, context around a hit, and the findings of the
// rules beside the events.
//
// Layout of a data directory:
//
//	DIR/index/meta.json    shard count (fixed at creation: it routes IDs)
//	DIR/index/shard-NN/    one Bleve (scorch) index per shard
//	DIR/findings/NNNNNN.log the findings, one JSON line per version stored (findings.go)
package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
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
	// Shards is the number of Bleve indexes written in parallel for a new
	// index (default: the number of CPUs, at least 2). An existing index
	// keeps the count it was created with, since it decides which shard
	// holds an ID and so makes re-indexing overwrite instead of duplicate.
	Shards int
	// BatchSize closes a shard's batch at this many events (default 2000).
	BatchSize int
	// FlushInterval closes a non-empty batch this long after its first
	// event, so live events become searchable quickly (default 1s).
	FlushInterval time.Duration
	// Safe makes each batch wait until it is on disk. By default batches
	// return once searchable (scorch's unsafe_batch), which is several
	// times faster; the data on disk is still consistent, a crash only
	// loses the last batches, and ingest or JetStream replay restores them.
	Safe bool
	// ReadOnly opens an existing index for searching only (several
	// processes may then share it); Add fails.
	ReadOnly bool
	// Partitioned indexes the stream partition of every event, 0 included
	// (serve in cluster mode, where every event came through one): a
	// filter on partition 0 is then its term, not every event without a
	// partition term, which walks the whole index (at 300k events 175 ms
	// against 22 ms for another partition). Events indexed before, without
	// the term, are then in no partition.
	Partitioned bool
	// SearchTimeout bounds each search and context lookup (default
	// DefaultSearchTimeout; negative: none).
	SearchTimeout time.Duration
	Logger        *slog.Logger
}

func (o *Options) defaults() {
	if o.Shards <= 0 {
		o.Shards = max(runtime.NumCPU(), 2)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 2000
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
}

// Index is a sharded Bleve index of events plus the stored findings.
// All methods are safe for concurrent use.
type Index struct {
	dir     string
	opts    Options
	log     *slog.Logger
	mapping mapping.IndexMapping
	shards  []*shard
	alias   bleve.IndexAlias
	builder docBuilder
	// windowMin is windowMinHits; tests lower it.
	windowMin int
	// bleveFacets makes facets Bleve's only, for tests that compare.
	bleveFacets bool

	// Time bounds of the indexed events (see Bounds).
	boundsMu    sync.Mutex
	boundsKnown bool
	lo, hi      time.Time

	findingsMu     sync.Mutex
	findings       []finding.Finding // in the order first stored
	findingAt      map[string]int    // finding ID -> its place in findings
	sortedFindings []finding.Finding // findings sorted for Findings; nil once stale
	flog           *findingsLog      // appended by PutFindings (nil: read-only or closed)

	added   atomic.Uint64 // events accepted by Add
	indexed atomic.Uint64 // events in completed batches
	batches atomic.Uint64
	errs    atomic.Uint64
	// windowed counts pages found in a time window (see timePage).
	windowed atomic.Uint64

	closeOnce sync.Once
	closeErr  error
}

type meta struct {
	Shards  int `json:"shards"`
	Version int `json:"version"`
}

// metaVersion is the layout of the shards' documents; an index of another
// version cannot be searched correctly (2: time buckets, exact numbers and
// one stored event blob; 3: time buckets from 4.3 s up).
const metaVersion = 3

// ErrReadOnly is returned by Add on an index opened with Options.ReadOnly.
var ErrReadOnly = errors.New("index: opened read-only")

// Open opens the index under dir, creating it when it does not exist.
func Open(dir string, opts Options) (*Index, error) {
	opts.defaults()
	idxDir := filepath.Join(dir, "index")
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
	case m.Version != metaVersion:
		return nil, fmt.Errorf("open index %s: it has index version %d, this analyzer reads version %d: re-ingest the logs into a new --data-dir (or remove %s)",
			dir, m.Version, metaVersion, idxDir)
	}
	opts.Shards = m.Shards

	x := &Index{
		dir:       dir,
		opts:      opts,
		log:       opts.Logger,
		mapping:   NewMapping(),
		windowMin: windowMinHits,
	}
	x.builder = newDocBuilder(x.mapping)
	x.builder.partitioned = opts.Partitioned
	members := make([]bleve.Index, 0, m.Shards)
	for i := 0; i < m.Shards; i++ {
		path := filepath.Join(idxDir, fmt.Sprintf("shard-%02d", i))
		bi, err := openShard(path, x.mapping, opts)
		if err != nil && strings.Contains(err.Error(), "timeout") {
			err = fmt.Errorf("%w (is 'analyzer serve' or 'ingest' writing it? use the UI and API of serve instead)", err)
		}
		if err != nil {
			for _, s := range x.shards {
				s.idx.Close()
			}
			return nil, fmt.Errorf("open index shard %d: %w", i, err)
		}
		s := &shard{x: x, n: i, idx: bi, in: make(chan shardOp, opts.BatchSize), done: make(chan struct{})}
		x.shards = append(x.shards, s)
		members = append(members, bi)
	}
	x.alias = bleve.NewIndexAlias(members...)
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

// Scorch's default merge policy stays: 20 segments per tier and merge
// instead of 10 rewrote events fewer times and won ~15% at 1.7M events,
// but at 4.3M it left 205 segments instead of 49, and every batch looks
// its IDs up in every segment of its shard (re-indexing replaces), which
// then cost more than the merges saved: 10.2k vs 10.9k events per
// CPU-second, and slower queries.
func openShard(path string, im mapping.IndexMapping, opts Options) (bleve.Index, error) {
	// When a writer (serve, ingest) holds the shard's lock, readers and
	// other writers alike fail after a moment instead of waiting forever.
	cfg := map[string]interface{}{"unsafe_batch": !opts.Safe, "bolt_timeout": "3s"}
	if opts.ReadOnly {
		cfg = map[string]interface{}{"read_only": true, "bolt_timeout": "3s"}
	}
	if _, err := os.Stat(filepath.Join(path, "index_meta.json")); err == nil {
		return bleve.OpenUsing(path, cfg)
	}
	if opts.ReadOnly {
		return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
	}
	return bleve.NewUsing(path, im, bleve.Config.DefaultIndexType, bleve.Config.DefaultKVStore, cfg)
}

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

// shardFor routes an ID to a shard; stable across runs for a given count.
func (x *Index) shardFor(id string) *shard {
	h := fnv.New32a()
	h.Write([]byte(id))
	return x.shards[h.Sum32()%uint32(len(x.shards))]
}

// Add queues an event for indexing; its document ID is the record ID, so
// adding the same record again replaces it. Add blocks when the writers are
// behind (back-pressure) and returns an error only on a closed or read-only
// index or an event without ID. Indexing errors are logged and counted.
func (x *Index) Add(ev *parsers.Event) error {
	if x.opts.ReadOnly {
		return ErrReadOnly
	}
	if ev.ID == "" {
		return errors.New("index: event without record ID")
	}
	// Building the document here spreads that work over the callers.
	doc := x.builder.build(ev)
	s := x.shardFor(ev.ID)
	select {
	case s.in <- shardOp{doc: doc}:
		x.added.Add(1)
		x.widenBounds(eventTime(ev))
		return nil
	case <-s.done:
		return errors.New("index: closed")
	}
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
			return errors.New("index: closed")
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
				<-s.done
			}
			if err := s.idx.Close(); err != nil {
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
	Added   uint64 `json:"added"`   // events accepted by Add
	Indexed uint64 `json:"indexed"` // events in executed batches
	Batches uint64 `json:"batches"`
	Errors  uint64 `json:"errors"` // failed batches
	Shards  int    `json:"shards"`
}

// Stats returns the writer's counters.
func (x *Index) Stats() Stats {
	return Stats{Added: x.added.Load(), Indexed: x.indexed.Load(), Batches: x.batches.Load(),
		Errors: x.errs.Load(), Shards: len(x.shards)}
}

// DocCount returns the number of documents in all shards.
func (x *Index) DocCount() (uint64, error) {
	n, err := x.alias.DocCount()
	if err != nil {
		return 0, fmt.Errorf("index doc count: %w", err)
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
