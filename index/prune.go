package index

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
)

// Pruning. In serve the index is a cache of the log stream: it keeps what
// the stream keeps. Serve marks (Mark) the blocks indexed so far with the
// stream's last sequence of that moment: each of their records was stored
// at or before it. Once the stream's first sequence is past a mark's (its
// limits removed every message up to it), PruneTo drops those blocks. In
// cluster mode DropPartition drops a partition's copy once another member
// holds it. A record dropped is dead as a replaced one is: no search,
// count, lookup or duplicate check sees it, and the same record added
// again is indexed again. The space it takes is not reclaimed: the chunk
// store is append-only.

const prunedFile = "pruned.json"

// pruned is what was marked and dropped, kept across restarts.
type pruned struct {
	// Partitions: per partition, per shard, the last block dropped by
	// DropPartition (later blocks hold its records indexed since).
	Partitions map[string][]uint64 `json:"partitions"`
	// Marks are the marks not pruned yet, oldest first.
	Marks []mark `json:"marks,omitempty"`
	// Upto is, per shard, the last block PruneTo dropped.
	Upto []uint64 `json:"upto,omitempty"`
	// Keep is, per shard, the blocks there were at the first Mark: not
	// of the stream as far as anyone knows (an ingest, or a serve before
	// pruning), PruneTo leaves them.
	Keep []uint64 `json:"keep"`
}

type mark struct {
	Label  uint64   `json:"label"`
	Blocks []uint64 `json:"blocks"` // per shard, the blocks published then
}

// Mark records the blocks published so far under the label that label
// returns, called after they were counted (serve: the stream's last
// sequence; every record of those blocks was stored by then). A mark like
// the last one is not repeated. The first Mark of an index marks nothing:
// what it holds then came from anywhere, and stays (Keep).
func (x *Index) Mark(label func() (uint64, error)) error {
	if x.opts.ReadOnly {
		return ErrReadOnly
	}
	x.pruneMu.Lock()
	defer x.pruneMu.Unlock()
	pr, err := x.readPruned()
	if err != nil {
		return err
	}
	m := mark{Blocks: x.blockCounts()}
	if m.Label, err = label(); err != nil {
		return err
	}
	if pr.Keep == nil {
		pr.Keep = m.Blocks
		return x.writePruned(pr)
	}
	if n := len(pr.Marks); n > 0 && slices.Equal(pr.Marks[n-1].Blocks, m.Blocks) {
		return nil // nothing indexed since: the older label covers them
	}
	pr.Marks = append(pr.Marks, m)
	return x.writePruned(pr)
}

// blockCounts is, per shard, the number of blocks published.
func (x *Index) blockCounts() []uint64 {
	out := make([]uint64, len(x.shards))
	for i, s := range x.shards {
		s.mu.RLock()
		out[i] = uint64(len(s.blocks))
		s.mu.RUnlock()
	}
	return out
}

// PruneTo drops the blocks of every mark whose label is below floor
// (serve: the stream's first sequence) and returns how many records it
// dropped.
func (x *Index) PruneTo(floor uint64) (int, error) {
	if x.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	x.pruneMu.Lock()
	defer x.pruneMu.Unlock()
	pr, err := x.readPruned()
	if err != nil {
		return 0, err
	}
	i := 0
	for i < len(pr.Marks) && pr.Marks[i].Label < floor {
		i++
	}
	if i == 0 {
		return 0, nil
	}
	upto := slices.Clone(pr.Marks[i-1].Blocks)
	for k := range min(len(upto), len(pr.Upto)) {
		upto[k] = max(upto[k], pr.Upto[k])
	}
	pr.Upto, pr.Marks = upto, pr.Marks[i:]
	if err := x.writePruned(pr); err != nil {
		return 0, err
	}
	return x.dropBlocks(pr.Keep, upto), nil
}

// dropBlocks kills every record of each shard's blocks after keep, up to
// upto.
func (x *Index) dropBlocks(keep, upto []uint64) int {
	n := 0
	for i, s := range x.shards {
		if i >= len(upto) {
			break
		}
		var from uint64
		if i < len(keep) {
			from = keep[i]
		}
		s.mu.RLock()
		end := min(uint64(len(s.blocks)), upto[i])
		blocks := s.blocks[:max(end, from)][from:]
		s.mu.RUnlock()
		for _, b := range blocks {
			n += kill(b, b.all())
		}
	}
	return n
}

func (x *Index) writePruned(pr pruned) error {
	if err := writeFileAtomic(filepath.Join(x.dir, "index", prunedFile), mustJSON(pr)); err != nil {
		return fmt.Errorf("index: %w", err)
	}
	return nil
}

// kill marks the records of mask dead in b; how many were live.
func kill(b *blockMeta, mask uint64) int {
	mask &= b.all()
	old := atomic.OrUint64(&b.dead, mask)
	return bits.OnesCount64(mask &^ old)
}

// DropPartition drops every record of stream partition p indexed so far
// (after a Flush: those added before the call) and records it in the
// index's folder, so that it stays dropped after a restart; records of p
// added afterwards are kept. It returns how many it dropped.
func (x *Index) DropPartition(ctx context.Context, p int) (int, error) {
	if x.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	if err := x.Flush(ctx); err != nil {
		return 0, err
	}
	x.pruneMu.Lock()
	defer x.pruneMu.Unlock()
	pr, err := x.readPruned()
	if err != nil {
		return 0, err
	}
	marks := x.blockCounts()
	k := strconv.Itoa(p)
	if old := pr.Partitions[k]; len(old) == len(marks) {
		for i := range marks {
			marks[i] = max(marks[i], old[i])
		}
	}
	pr.Partitions[k] = marks
	if err := x.writePruned(pr); err != nil {
		return 0, fmt.Errorf("drop partition %d: %w", p, err)
	}
	return x.dropUpTo(p, marks), nil
}

// dropUpTo kills partition p's records in each shard's blocks up to marks.
func (x *Index) dropUpTo(p int, marks []uint64) int {
	x.tab.mu.RLock()
	keys := x.tab.keys
	x.tab.mu.RUnlock()
	n := 0
	for i, s := range x.shards {
		if i >= len(marks) {
			break
		}
		s.mu.RLock()
		blocks := s.blocks[:min(uint64(len(s.blocks)), marks[i])]
		s.mu.RUnlock()
		for _, b := range blocks {
			if int(b.key) < len(keys) && keys[b.key].Partition == p {
				n += kill(b, b.all())
			}
		}
	}
	return n
}

func (x *Index) readPruned() (pruned, error) { return readPrunedAt(filepath.Join(x.dir, "index")) }

// readPrunedAt reads the pruned.json of the index folder idxDir.
func readPrunedAt(idxDir string) (pruned, error) {
	pr := pruned{Partitions: map[string][]uint64{}}
	b, err := os.ReadFile(filepath.Join(idxDir, prunedFile))
	if errors.Is(err, fs.ErrNotExist) {
		return pr, nil
	}
	if err != nil {
		return pr, fmt.Errorf("index: %w", err)
	}
	if err := json.Unmarshal(b, &pr); err != nil {
		return pr, fmt.Errorf("index: %s: %w", prunedFile, err)
	}
	if pr.Partitions == nil {
		pr.Partitions = map[string][]uint64{}
	}
	return pr, nil
}

// applyPruned drops again, at Open, what PruneTo and DropPartition
// dropped.
func (x *Index) applyPruned() error {
	pr, err := x.readPruned()
	if err != nil {
		return err
	}
	x.dropBlocks(pr.Keep, pr.Upto)
	for k, marks := range pr.Partitions {
		p, err := strconv.Atoi(k)
		if err != nil {
			return fmt.Errorf("index: %s: partition %q", prunedFile, k)
		}
		x.dropUpTo(p, marks)
	}
	return nil
}
