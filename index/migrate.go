package index

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/blevesearch/bleve/v2/index/scorch"
	bindex "github.com/blevesearch/bleve_index_api"
)

// migratable reports whether Open migrates an index of version v:
// version 3 kept every event as a Bleve document whose stored field
// "event" is the blob decodeHit reads, version 4 its records in the same
// chunk store as now (a Bleve document per block): either way the events
// are read back whole and indexed again.
func migratable(v int) bool { return v == 3 || v == 4 }

// migrate rewrites the version 3 or 4 index under dir as the current
// version, saying so in the log: the events are read from the old shards
// (their stored fields, or their chunk stores; no search), added to a new
// index beside it, and the new index takes the old one's place once it is
// complete. An interrupted migration starts again at the next Open.
func migrate(dir string, m meta, opts Options) error {
	log := opts.Logger
	idxDir := filepath.Join(dir, "index")
	work := filepath.Join(dir, "index.migrating")
	if err := os.RemoveAll(work); err != nil {
		return fmt.Errorf("migrate index %s: %w", dir, err)
	}
	start := time.Now()
	log.Warn(fmt.Sprintf("index has an older layout (version %d); migrating it to version %d once, in place (it stays searchable by this analyzer only afterwards)", m.Version, metaVersion),
		"dir", dir, "shards", m.Shards)
	wopts := opts
	wopts.ReadOnly, wopts.Safe, wopts.Logger = false, false, log
	nx, err := Open(work, wopts)
	if err != nil {
		return fmt.Errorf("migrate index %s: %w", dir, err)
	}
	n := 0
	add := func(h Hit, fileID string) error {
		n++
		return nx.addHit(h, fileID)
	}
	var dead map[recordRef]bool
	var pr pruned
	if m.Version == 4 {
		if pr, err = readPrunedAt(idxDir); err == nil {
			dead, err = deadV4(idxDir, m.Shards)
		}
		if err != nil {
			nx.Close()
			os.RemoveAll(work)
			return fmt.Errorf("migrate index %s: %w", dir, err)
		}
	}
	for i := 0; i < m.Shards; i++ {
		path := filepath.Join(idxDir, fmt.Sprintf("shard-%02d", i))
		var err error
		if m.Version == 3 {
			err = readV3Shard(path, func(h Hit) error { return add(h, "") })
		} else {
			err = readV4Shard(path, i, nx.codec, dead, pr, add)
		}
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
	old := filepath.Join(dir, fmt.Sprintf("index.v%d", m.Version))
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
	old := ""
	for _, v := range []string{"index.v3", "index.v4"} {
		if _, err := os.Stat(filepath.Join(dir, v)); err == nil {
			old = v
		}
	}
	if old == "" {
		return nil
	}
	if err := os.Rename(done, idxDir); err != nil {
		return fmt.Errorf("finish the migration of %s: %w", dir, err)
	}
	return errors.Join(os.RemoveAll(filepath.Join(dir, old)), os.RemoveAll(filepath.Join(dir, "index.migrating")))
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

// deadV4 is the set of the records of a version 4 index that later
// versions replaced (named by the blocks that hold those).
func deadV4(idxDir string, shards int) (map[recordRef]bool, error) {
	dead := map[recordRef]bool{}
	for i := range shards {
		_, err := scanStore(filepath.Join(idxDir, fmt.Sprintf("shard-%02d", i), storeFile), false, func(d decodedHeader) error {
			for _, r := range d.replaces {
				dead[r] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
	}
	return dead, nil
}

// readV4Shard calls fn with every live record of shard n of a version 4
// index, read from its chunk store (whose blocks and frames are this
// version's).
//
// The blocks pruned.json says were dropped (PruneTo, DropPartition) are
// left out; its marks not pruned yet are not carried over (the new index's
// first Mark keeps what it holds, as for any index before pruning).
func readV4Shard(path string, n int, c *codec, dead map[recordRef]bool, pr pruned, fn func(h Hit, fileID string) error) error {
	spath := filepath.Join(path, storeFile)
	var ds []decodedHeader
	if _, err := scanStore(spath, false, func(d decodedHeader) error {
		ds = append(ds, d)
		return nil
	}); err != nil {
		return err
	}
	st, err := openStore(spath, 0, true)
	if err != nil {
		return err
	}
	defer st.close(false)
	var raw []byte
	rawAt := int64(-1)
	at := func(v []uint64) uint64 {
		if n < len(v) {
			return v[n]
		}
		return 0
	}
	dropped := func(d *decodedHeader) bool {
		seq := d.meta.seq
		if n < len(pr.Upto) && seq > at(pr.Keep) && seq <= pr.Upto[n] {
			return true
		}
		return seq <= at(pr.Partitions[strconv.Itoa(d.key.Partition)])
	}
	for i := range ds {
		m := &ds[i].meta
		if dropped(&ds[i]) {
			continue
		}
		if m.frameOff != rawAt {
			if raw, err = st.readFrame(c, m); err != nil {
				return err
			}
			rawAt = m.frameOff
		}
		if m.rawOff < 0 || int(m.rawOff+m.rawLen) > len(raw) {
			return fmt.Errorf("chunk store %s: block %d: beyond its frame", spath, m.seq)
		}
		hits, err := decodePayload(raw[m.rawOff:m.rawOff+m.rawLen], m, ds[i].key)
		if err != nil {
			return fmt.Errorf("chunk store %s: block %d: %w", spath, m.seq, err)
		}
		for slot := range hits {
			if dead[recordRef{shard: n, seq: m.seq, slot: slot}] {
				continue
			}
			if err := fn(hits[slot], ds[i].key.FileID); err != nil {
				return err
			}
		}
	}
	return nil
}
