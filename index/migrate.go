package index

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
	bindex "github.com/blevesearch/bleve_index_api"
)

// migratableVersion is the index layout Open migrates: version 3 kept
// every event as a Bleve document whose stored field "event" is the blob
// decodeHit reads, so its events are read back whole and indexed again.
const migratableVersion = 3

// migrate rewrites the version 3 index under dir as the current version,
// saying so in the log: the events are read from the old shards' stored
// fields (no mapping, no search), added to a new index beside it, and the
// new index takes the old one's place once it is complete. An
// interrupted migration starts again at the next Open.
func migrate(dir string, m meta, opts Options) error {
	log := opts.Logger
	idxDir := filepath.Join(dir, "index")
	work := filepath.Join(dir, "index.migrating")
	if err := os.RemoveAll(work); err != nil {
		return fmt.Errorf("migrate index %s: %w", dir, err)
	}
	start := time.Now()
	log.Warn("index has an older layout (version 3); migrating it to version 4 once, in place (it stays searchable by this analyzer only afterwards)",
		"dir", dir, "shards", m.Shards)
	wopts := opts
	wopts.ReadOnly, wopts.Safe, wopts.Logger = false, false, log
	nx, err := Open(work, wopts)
	if err != nil {
		return fmt.Errorf("migrate index %s: %w", dir, err)
	}
	n := 0
	for i := 0; i < m.Shards; i++ {
		path := filepath.Join(idxDir, fmt.Sprintf("shard-%02d", i))
		err := readV3Shard(path, func(h Hit) error {
			n++
			return nx.addHit(h, "")
		})
		if err != nil {
			nx.Close()
			os.RemoveAll(work)
			return fmt.Errorf("migrate index %s: shard %d: %w", dir, i, err)
		}
	}
	if err := nx.Close(); err != nil {
		os.RemoveAll(work)
		return fmt.Errorf("migrate index %s: %w", dir, err)
	}
	// Swap: the old index aside, the new one in its place, then the old
	// one removed. Open finishes a swap a crash interrupted (see below).
	old := filepath.Join(dir, "index.v3")
	if err := os.Rename(idxDir, old); err != nil {
		return fmt.Errorf("migrate index %s: %w", dir, err)
	}
	if err := os.Rename(filepath.Join(work, "index"), idxDir); err != nil {
		return fmt.Errorf("migrate index %s: %w", dir, err)
	}
	if err := errors.Join(os.RemoveAll(old), os.RemoveAll(work)); err != nil {
		log.Warn("migrate index: could not remove the old index", "err", err)
	}
	log.Warn("index migrated", "dir", dir, "events", n, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// finishSwap completes a migration interrupted between its renames: the
// old index aside and no index in its place.
func finishSwap(dir string) error {
	idxDir := filepath.Join(dir, "index")
	if _, err := os.Stat(idxDir); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	done := filepath.Join(dir, "index.migrating", "index")
	if _, err := os.Stat(filepath.Join(done, "meta.json")); err != nil {
		return nil
	}
	if _, err := os.Stat(filepath.Join(dir, "index.v3")); err != nil {
		return nil
	}
	if err := os.Rename(done, idxDir); err != nil {
		return fmt.Errorf("finish the migration of %s: %w", dir, err)
	}
	return errors.Join(os.RemoveAll(filepath.Join(dir, "index.v3")), os.RemoveAll(filepath.Join(dir, "index.migrating")))
}

// readV3Shard calls fn with every event of a version 3 shard.
func readV3Shard(path string, fn func(Hit) error) error {
	if _, err := os.Stat(filepath.Join(path, "index_meta.json")); errors.Is(err, fs.ErrNotExist) {
		return nil // a shard never written
	}
	si, err := scorch.NewScorch(scorch.Name, map[string]interface{}{"path": filepath.Join(path, "store"), "read_only": true},
		bindex.NewAnalysisQueue(1))
	if err != nil {
		return err
	}
	if err := si.Open(); err != nil {
		return err
	}
	defer si.Close()
	r, err := si.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		return fmt.Errorf("not a scorch index (%T)", r)
	}
	for _, ss := range snap.Segments() {
		seg, del := ss.Segment(), ss.Deleted()
		for num := range seg.Count() {
			if del != nil && del.Contains(uint32(num)) {
				continue
			}
			var h Hit
			var blob []byte
			err := seg.VisitStoredFields(num, func(field string, _ byte, value []byte, _ []uint64) bool {
				switch field {
				case "_id":
					h.ID = string(value)
				case "event":
					blob = append(blob[:0], value...)
				}
				return true
			})
			if err != nil {
				return err
			}
			if h.ID == "" || blob == nil {
				continue
			}
			if err := decodeHit(blob, &h); err != nil {
				return fmt.Errorf("event %s: %w", h.ID, err)
			}
			if err := fn(h); err != nil {
				return err
			}
		}
	}
	return nil
}
