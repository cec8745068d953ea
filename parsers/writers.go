package parsers

import (
	"hash/maphash"
	"math/bits"
)

// writerTable maps a writer (joinKey) to its pending record. In a file of
// many interleaved writers (Ray workers, NCCL threads) most records are
// their writer's first for thousands of lines, so a Go map hashed a key's
// three strings three times a record: looked up, added, deleted when it
// closed. Here the hash is computed once and kept in the record, and the
// table holds it beside the pointer (open addressing, linear probing,
// deletion by backward shift: no tombstones).
type writerTable struct {
	seed  maphash.Seed
	slots []writerSlot // a power of 2 long, at most 3/4 full
	n     int
}

type writerSlot struct {
	h uint64
	p *pendingRecord // nil: empty
}

func newWriterTable() writerTable { return writerTable{seed: maphash.MakeSeed()} }

func (t *writerTable) hash(k joinKey) uint64 {
	return maphash.String(t.seed, k.stream) ^
		bits.RotateLeft64(maphash.String(t.seed, k.prefix), 21) ^
		bits.RotateLeft64(maphash.String(t.seed, k.nccl), 42)
}

// get returns the record of k (h its hash), nil when none.
func (t *writerTable) get(k joinKey, h uint64) *pendingRecord {
	if t.n == 0 {
		return nil
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.p == nil {
			return nil
		}
		if s.h == h && s.p.key == k {
			return s.p
		}
	}
}

// lookup is get for a key whose hash is not at hand.
func (t *writerTable) lookup(k joinKey) *pendingRecord { return t.get(k, t.hash(k)) }

// put adds p, whose key is not in the table, with its key's hash h.
func (t *writerTable) put(p *pendingRecord, h uint64) {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.grow()
	}
	p.hash = h
	t.insert(writerSlot{h, p})
	t.n++
}

func (t *writerTable) insert(s writerSlot) {
	mask := uint64(len(t.slots) - 1)
	i := s.h & mask
	for t.slots[i].p != nil {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

func (t *writerTable) grow() {
	old := t.slots
	t.slots = make([]writerSlot, max(64, 2*len(old)))
	for _, s := range old {
		if s.p != nil {
			t.insert(s)
		}
	}
}

// del removes the record of p's key (p itself, which put gave its hash).
func (t *writerTable) del(p *pendingRecord) {
	if t.n == 0 {
		return
	}
	h := p.hash
	if t.get(p.key, h) != p {
		h = t.hash(p.key) // not p's entry: whatever holds its key, as a map's delete
	}
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.p == nil {
			return
		}
		if s.h == h && s.p.key == p.key {
			t.removeAt(i, mask)
			return
		}
	}
}

// removeAt empties slot i and moves back the entries after it that
// probed past it, so that every entry stays reachable from its home.
func (t *writerTable) removeAt(i, mask uint64) {
	t.n--
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s.p == nil {
			break
		}
		// s may fill the hole when its home is at or before i on its
		// probe path: as far from j as i is, or farther.
		if (j-s.h)&mask >= (j-i)&mask {
			t.slots[i] = s
			i = j
		}
	}
	t.slots[i] = writerSlot{}
}
