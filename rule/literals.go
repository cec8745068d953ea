package rule

// literalScanner finds which of a fixed set of literals occur in a text, in
// one pass: an Aho-Corasick automaton compiled to a dense DFA over byte
// classes. Written here because the engine runs it on every event: the
// libraries measured (cloudflare/ahocorasick: pointer trie with 256-way
// nodes, ~0.9 µs for a 180-byte line with this rule pack; coregx and
// petar-dambovaliev ports: as slow or far slower) spent more time on it than
// on parsing the line. The DFA is a few hundred KB and does one table load
// per byte.
type literalScanner struct {
	class  [256]uint8 // byte -> class
	nclass int
	next   []int32  // state*nclass + class -> state
	next16 []uint16 // the same table when there are fewer than 65536 states: half the cache footprint
	out    [][]int32
	seen   []uint32 // per pattern: generation of the last report (dedup)
	gen    uint32
	hits   []int
}

func newLiteralScanner(lits []string) *literalScanner {
	s := &literalScanner{seen: make([]uint32, len(lits))}
	// Byte classes: bytes that occur in no literal share class 0.
	used := [256]bool{}
	for _, l := range lits {
		for i := 0; i < len(l); i++ {
			used[l[i]] = true
		}
	}
	s.nclass = 1
	for b := 0; b < 256; b++ {
		if used[b] {
			s.class[b] = uint8(s.nclass)
			s.nclass++
		}
	}
	if s.nclass > 256 {
		// More than 255 distinct bytes: class 0 would collide; fall back to
		// identity classes.
		s.nclass = 256
		for b := 0; b < 256; b++ {
			s.class[b] = uint8(b)
		}
	}
	// Trie.
	type node struct {
		child map[uint8]int32
		fail  int32
		out   []int32
	}
	nodes := []node{{child: map[uint8]int32{}}}
	for id, l := range lits {
		cur := int32(0)
		for i := 0; i < len(l); i++ {
			c := s.class[l[i]]
			nx, ok := nodes[cur].child[c]
			if !ok {
				nx = int32(len(nodes))
				nodes = append(nodes, node{child: map[uint8]int32{}})
				nodes[cur].child[c] = nx
			}
			cur = nx
		}
		nodes[cur].out = append(nodes[cur].out, int32(id))
	}
	// Breadth-first: failure links, outputs through them, dense transitions.
	n := s.nclass
	s.next = make([]int32, len(nodes)*n)
	s.out = make([][]int32, len(nodes))
	queue := []int32{}
	for c := 0; c < n; c++ {
		if nx, ok := nodes[0].child[uint8(c)]; ok {
			nodes[nx].fail = 0
			s.next[c] = nx
			queue = append(queue, nx)
		}
	}
	s.out[0] = nodes[0].out
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		f := nodes[u].fail
		s.out[u] = append(append([]int32(nil), nodes[u].out...), s.out[f]...)
		for c := 0; c < n; c++ {
			if nx, ok := nodes[u].child[uint8(c)]; ok {
				nodes[nx].fail = s.next[int(f)*n+c]
				s.next[int(u)*n+c] = nx
				queue = append(queue, nx)
			} else {
				s.next[int(u)*n+c] = s.next[int(f)*n+c]
			}
		}
	}
	if len(nodes) < 1<<16 {
		s.next16 = make([]uint16, len(s.next))
		for i, v := range s.next {
			s.next16[i] = uint16(v)
		}
		s.next = nil
	}
	return s
}

// scan returns the distinct indexes of the literals found in text. The slice
// is reused by the next call. Not safe for concurrent use.
func (s *literalScanner) scan(text string) []int {
	s.gen++
	if s.gen == 0 { // wrapped: forget old generations
		clear(s.seen)
		s.gen = 1
	}
	s.hits = s.hits[:0]
	n := s.nclass
	class, out := &s.class, s.out
	if next := s.next16; next != nil {
		state := 0
		for i := 0; i < len(text); i++ {
			state = int(next[state*n+int(class[text[i]])])
			if out[state] != nil {
				s.report(out[state])
			}
		}
		return s.hits
	}
	state := int32(0)
	for i := 0; i < len(text); i++ {
		state = s.next[int(state)*n+int(class[text[i]])]
		if out[state] != nil {
			s.report(out[state])
		}
	}
	return s.hits
}

func (s *literalScanner) report(o []int32) {
	for _, p := range o {
		if s.seen[p] != s.gen {
			s.seen[p] = s.gen
			s.hits = append(s.hits, int(p))
		}
	}
}
