package index

import (
	"math/bits"
	"sync"
)

// streamKey is what every record of a block shares: the file it comes from
// (a block never mixes files, so the context of a record is its
// neighbours in its file's blocks) and the stream partition.
type streamKey struct {
	Cluster, Node, Container, File string
	Partition                      int
	// FileID is the file's identity (parsers.Origin.FileID): records' IDs
	// derive from it.
	FileID string
}

func streamKeyOf(h *Hit, fileID string) streamKey {
	return streamKey{Cluster: h.Cluster, Node: h.Node, Container: h.Container, File: h.File, Partition: h.Partition, FileID: fileID}
}

// tables intern the values blocks refer to by number: stream keys, and
// the levels and sources that facets count. Both only grow, and stay
// small (files, and a handful of levels and sources).
type tables struct {
	mu     sync.RWMutex
	keys   []streamKey
	keyIdx map[streamKey]int32
	vals   []string
	valIdx map[string]uint16
}

func newTables() *tables {
	return &tables{keyIdx: map[streamKey]int32{}, valIdx: map[string]uint16{}}
}

func (t *tables) key(k streamKey) int32 {
	t.mu.RLock()
	i, ok := t.keyIdx[k]
	t.mu.RUnlock()
	if ok {
		return i
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.keyIdx[k]; ok {
		return i
	}
	i = int32(len(t.keys))
	t.keys = append(t.keys, k)
	t.keyIdx[k] = i
	return i
}

// maxValues bounds the level and source values: parsers know a handful.
const maxValues = 1 << 15

func (t *tables) val(v string) uint16 {
	t.mu.RLock()
	i, ok := t.valIdx[v]
	t.mu.RUnlock()
	if ok {
		return i
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.valIdx[v]; ok {
		return i
	}
	if len(t.vals) >= maxValues {
		v = "other" // a parser gone wild: its values are counted together
		if i, ok := t.valIdx[v]; ok {
			return i
		}
	}
	i = uint16(len(t.vals))
	t.vals = append(t.vals, v)
	t.valIdx[v] = i
	return i
}

// snapshot returns the tables as they are now (both slices only grow).
func (t *tables) snapshot() (keys []streamKey, vals []string) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.keys, t.vals
}

// idFilter says whether a record ID may have been added before: a
// scalable Bloom filter (a chain of filters, each twice the size of the
// one before, ~1% false positives) over 64-bit hashes of the IDs. A
// "maybe" is checked against the index (Index.hasRecord).
type idFilter struct {
	mu      sync.Mutex
	filters []*bloom
}

type bloom struct {
	bits  []uint64
	n     int // IDs added
	limit int
}

const bloomK = 7

func newBloom(capacity int) *bloom {
	// ~9.6 bits per ID for 1% at capacity.
	words := max((capacity*10+63)/64, 16)
	return &bloom{bits: make([]uint64, words), limit: capacity}
}

func (b *bloom) positions(h uint64, fn func(word int, bit uint64) bool) bool {
	h1, h2 := h, bits.RotateLeft64(h, 32)|1
	m := uint64(len(b.bits) * 64)
	for i := uint64(0); i < bloomK; i++ {
		// The high word of (h1+i*h2)*m is in [0, m), as % would be but
		// without a division (14 per record added: 2% of ingest's CPU).
		p, _ := bits.Mul64(h1+i*h2, m)
		if !fn(int(p/64), 1<<(p%64)) {
			return false
		}
	}
	return true
}

func newIDFilter() *idFilter { return &idFilter{filters: []*bloom{newBloom(1 << 16)}} }

// idHash is the ID hash stored in block headers: FNV-1a, fixed so that
// headers written by one run are read by the next; 32 bits are enough for
// a filter whose "maybe" is checked.
func idHash(id string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return h
}

// spread makes the filter's 64-bit hash of an ID hash.
func spread(h32 uint32) uint64 {
	h := uint64(h32)
	h ^= h >> 16
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// add records h and reports whether it may have been added before.
func (f *idFilter) add(h32 uint32) (maybe bool) {
	h := spread(h32)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, b := range f.filters {
		if b.positions(h, func(w int, bit uint64) bool { return b.bits[w]&bit != 0 }) {
			return true
		}
	}
	f.put(h)
	return false
}

// insert records h without asking (Open, from the headers).
func (f *idFilter) insert(h32 uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.put(spread(h32))
}

func (f *idFilter) put(h uint64) {
	last := f.filters[len(f.filters)-1]
	if last.n >= last.limit {
		last = newBloom(last.limit * 2)
		f.filters = append(f.filters, last)
	}
	last.positions(h, func(w int, bit uint64) bool { last.bits[w] |= bit; return true })
	last.n++
}
