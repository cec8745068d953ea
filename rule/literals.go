package rule

import (
	"cmp"
	"slices"
	"strings"
)

// literalScanner finds which of a fixed set of literals occur in a text, in
// one pass. The engine runs it on every event, so it is built for the case
// of nearly every text holding none of them: each literal of 4 bytes or
// more is represented by one 4-byte window of it (its anchor, the rarest
// looking one), and the scan hashes every 4-byte window of the text into a
// bitmap of the anchors (8 KB, in L1). Windows are independent of each
// other, so the loop runs at a couple of cycles a byte; the Aho-Corasick DFA
// it replaces (11,000 states over this pack) chained a dependent table load
// per byte and took 5 ns a byte. A set bit is checked against the anchors'
// exact 4 bytes, and an anchor against its literal. Literals under 4 bytes
// (none in the built-in pack) are looked for one by one.
type literalScanner struct {
	lits    []string
	filter  [1 << (anchorHashBits - 6)]uint64
	keys    []uint32 // the anchors' 4 bytes (little-endian), sorted
	anchors []anchor // in the order of keys
	short   []int32  // literals under 4 bytes
	seen    []uint32 // per literal: the scan (generation) that last found it
	end     []int    // per literal: end of its first occurrence in the text of that scan
	gen     uint32
	hits    []int
}

type anchor struct {
	lit int32 // index in lits
	off int32 // offset of the anchor in the literal
}

const anchorHashBits = 16

func anchorHash(w uint32) uint32 { return (w * 0x9E3779B1) >> (32 - anchorHashBits) }

func newLiteralScanner(lits []string) *literalScanner {
	s := &literalScanner{lits: lits, seen: make([]uint32, len(lits)), end: make([]int, len(lits))}
	type keyed struct {
		key uint32
		a   anchor
	}
	var ks []keyed
	for i, l := range lits {
		if len(l) < 4 {
			s.short = append(s.short, int32(i))
			continue
		}
		off := rarestWindow(l)
		ks = append(ks, keyed{load32(l, off), anchor{int32(i), int32(off)}})
	}
	slices.SortStableFunc(ks, func(a, b keyed) int { return cmp.Compare(a.key, b.key) })
	for _, k := range ks {
		s.keys = append(s.keys, k.key)
		s.anchors = append(s.anchors, k.a)
		h := anchorHash(k.key)
		s.filter[h>>6] |= 1 << (h & 63)
	}
	return s
}

func load32(s string, i int) uint32 {
	return uint32(s[i]) | uint32(s[i+1])<<8 | uint32(s[i+2])<<16 | uint32(s[i+3])<<24
}

// rarestWindow returns the offset of the literal's 4-byte window made of
// the bytes least common in logs (a guess by byte class: a window of
// lower-case letters and spaces occurs in most lines, one with capitals,
// digits next to punctuation or symbols in few), so that as few text
// windows as possible need checking.
func rarestWindow(l string) int {
	best, bestScore := 0, 1<<30
	for i := 0; i+4 <= len(l); i++ {
		sc := 0
		for j := i; j < i+4; j++ {
			sc += byteCommonness(l[j])
		}
		if isWordByte(l[i]) && isWordByte(l[i+3]) && (!isWordByte(l[i+1]) || !isWordByte(l[i+2])) {
			// The end of one word and the start of the next ("L er" of
			// "NCCL error"): rarer together than any 4 bytes of one word
			// ("NCCL" is in every NCCL line).
			sc -= 6
		}
		if sc < bestScore {
			best, bestScore = i, sc
		}
	}
	return best
}

func isWordByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9'
}

func byteCommonness(b byte) int {
	switch {
	case strings.IndexByte(" etaoinsrlc", b) >= 0:
		return 4
	case b >= 'a' && b <= 'z', b >= '0' && b <= '9':
		return 3
	case strings.IndexByte(".:,-_/=[]()'\"", b) >= 0:
		return 2
	case b >= 'A' && b <= 'Z':
		return 1
	}
	return 0
}

// scan returns the distinct indexes of the literals found in text, in the
// order of the end of their first occurrence (a longer literal first when
// two end at one byte). The slice is reused by the next call. Not safe for
// concurrent use.
func (s *literalScanner) scan(text string) []int {
	s.gen++
	if s.gen == 0 { // wrapped: forget old generations
		clear(s.seen)
		s.gen = 1
	}
	s.hits = s.hits[:0]
	if len(s.keys) > 0 && len(text) >= 4 {
		w := uint32(text[0])<<8 | uint32(text[1])<<16 | uint32(text[2])<<24
		for i := 3; i < len(text); i++ {
			w = w>>8 | uint32(text[i])<<24
			if h := anchorHash(w); s.filter[h>>6]&(1<<(h&63)) != 0 {
				s.check(text, i-3, w)
			}
		}
	}
	for _, p := range s.short {
		if i := strings.Index(text, s.lits[p]); i >= 0 {
			s.found(int(p), i+len(s.lits[p]))
		}
	}
	if len(s.hits) > 1 {
		slices.SortFunc(s.hits, func(a, b int) int {
			if s.end[a] != s.end[b] {
				return s.end[a] - s.end[b]
			}
			return len(s.lits[b]) - len(s.lits[a])
		})
	}
	return s.hits
}

// check verifies the literals anchored at the 4 bytes w found at text[i:].
func (s *literalScanner) check(text string, i int, w uint32) {
	k, ok := slices.BinarySearch(s.keys, w)
	if !ok {
		return
	}
	for ; k < len(s.keys) && s.keys[k] == w; k++ {
		a := s.anchors[k]
		l := s.lits[a.lit]
		start := i - int(a.off)
		if start >= 0 && start+len(l) <= len(text) && text[start:start+len(l)] == l {
			s.found(int(a.lit), start+len(l))
		}
	}
}

func (s *literalScanner) found(p, end int) {
	if s.seen[p] != s.gen {
		s.seen[p] = s.gen
		s.end[p] = end
		s.hits = append(s.hits, p)
	} else if end < s.end[p] {
		s.end[p] = end
	}
}
