package index

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
)

// The nodes of a parsed query. Each has a meaning on one record (match),
// which is what a search answers; plan.go finds the records through the
// index and calls match only where the index terms cannot tell.
type node interface{ isNode() }

type (
	andNode  struct{ kids []node }
	orNode   struct{ kids []node }
	notNode  struct{ kid node }
	allNode  struct{}
	noneNode struct{}
	// termNode: a token of the message is term (lower-cased).
	termNode struct{ term string }
	// phraseNode: tokens at consecutive positions, one of pos[i] at the
	// i-th. whole, when set, is the typed chunk the phrase came from.
	phraseNode struct {
		pos   [][]string
		whole string
	}
	// patternNode: a token (of the message) or the value (of a keyword
	// field) matches re, whole.
	patternNode struct {
		field, pattern, display string
		re                      *regexp.Regexp
	}
	// fuzzyNode: a token within dist edits of term.
	fuzzyNode struct {
		term string
		dist int
	}
	// kwNode: a keyword field's value is value.
	kwNode struct{ field, value string }
	// rangeNode: a number field (pid, rank, line) in [lo, hi].
	rangeNode struct {
		field  string
		lo, hi int64
	}
	// timeNode: the event's time in [lo, hi] ns; untimed events never.
	timeNode struct{ lo, hi int64 }
	// partNode: the event's stream partition is one of parts.
	partNode struct{ parts []int }
	// untimedNode: the event has no time.
	untimedNode struct{}
	// afterIDNode: the event's ID sorts after id (the tie-breaker of a
	// cursor, applied with the time of the cursor).
	afterIDNode struct{ id string }
)

func (andNode) isNode()      {}
func (orNode) isNode()       {}
func (notNode) isNode()      {}
func (allNode) isNode()      {}
func (noneNode) isNode()     {}
func (termNode) isNode()     {}
func (phraseNode) isNode()   {}
func (*patternNode) isNode() {}
func (fuzzyNode) isNode()    {}
func (kwNode) isNode()       {}
func (rangeNode) isNode()    {}
func (timeNode) isNode()     {}
func (partNode) isNode()     {}
func (untimedNode) isNode()  {}
func (afterIDNode) isNode()  {}

func (n andNode) String() string  { return fmt.Sprintf("AND%v", n.kids) }
func (n orNode) String() string   { return fmt.Sprintf("OR%v", n.kids) }
func (n notNode) String() string  { return fmt.Sprintf("NOT(%v)", n.kid) }
func (n termNode) String() string { return fmt.Sprintf("%q", n.term) }
func (n *patternNode) String() string {
	return fmt.Sprintf("%s:/%s/", n.field, n.pattern)
}

// andOf is the conjunction of ns, flattened; nils and match-alls are left
// out.
func andOf(ns ...node) node {
	var kids []node
	for _, n := range ns {
		switch n := n.(type) {
		case nil, allNode:
		case andNode:
			kids = append(kids, n.kids...)
		case noneNode:
			return noneNode{}
		default:
			kids = append(kids, n)
		}
	}
	switch len(kids) {
	case 0:
		return allNode{}
	case 1:
		return kids[0]
	}
	return andNode{kids}
}

// orOf is the disjunction of ns, flattened.
func orOf(ns ...node) node {
	var kids []node
	for _, n := range ns {
		switch n := n.(type) {
		case nil, noneNode:
		case orNode:
			kids = append(kids, n.kids...)
		case allNode:
			return allNode{}
		default:
			kids = append(kids, n)
		}
	}
	switch len(kids) {
	case 0:
		return noneNode{}
	case 1:
		return kids[0]
	}
	return orNode{kids}
}

// recordToken is a token of a message: its lower-cased text and where it
// stands.
type recordToken struct {
	term       string
	start, end int
	pos        int
}

// messageTokens are the tokens of a message, lower-cased as the index
// terms are (tokenizeLog, then ASCII or Unicode lower case).
func messageTokens(msg string) []recordToken {
	in := []byte(msg)
	toks := tokenizeLog(in, nil)
	low, ascii := lowerASCII(in)
	out := make([]recordToken, len(toks))
	for i, t := range toks {
		var term string
		if ascii {
			term = string(low[t.start:t.end])
		} else {
			term = string(lower(in[t.start:t.end]))
		}
		out[i] = recordToken{term: term, start: t.start, end: t.end, pos: t.pos}
	}
	return out
}

// record is a stored record being matched, its tokens made on first use.
type record struct {
	h    *Hit
	toks []recordToken
	done bool
}

func (r *record) tokens() []recordToken {
	if !r.done {
		r.toks, r.done = messageTokens(r.h.Message), true
	}
	return r.toks
}

// match reports whether the record matches n.
func match(n node, r *record) bool {
	switch n := n.(type) {
	case andNode:
		for _, k := range n.kids {
			if !match(k, r) {
				return false
			}
		}
		return true
	case orNode:
		for _, k := range n.kids {
			if match(k, r) {
				return true
			}
		}
		return false
	case notNode:
		return !match(n.kid, r)
	case allNode:
		return true
	case noneNode:
		return false
	case termNode:
		// A token that cannot be its term is not looked at: most are not.
		for _, t := range r.tokens() {
			if t.term == n.term {
				return true
			}
		}
		return false
	case phraseNode:
		return phraseAt(n, r.tokens()) >= 0
	case *patternNode:
		if n.field != FieldMessage {
			return anyValue(r.h, n.field, n.re.MatchString)
		}
		for _, t := range r.tokens() {
			if n.re.MatchString(t.term) {
				return true
			}
		}
		return false
	case fuzzyNode:
		for _, t := range r.tokens() {
			if withinEdits(n.term, t.term, n.dist) {
				return true
			}
		}
		return false
	case kwNode:
		return anyValue(r.h, n.field, func(v string) bool { return v == n.value })
	case rangeNode:
		var v int64
		switch n.field {
		case FieldPID:
			if r.h.PID == 0 {
				return false
			}
			v = int64(r.h.PID)
		case FieldRank:
			if r.h.Rank == nil {
				return false
			}
			v = int64(*r.h.Rank)
		case FieldLine:
			v = int64(max(r.h.Line, 0))
		}
		return v >= n.lo && v <= n.hi
	case timeNode:
		if r.h.Time.IsZero() {
			return false
		}
		ns := timeNanos(r.h.Time)
		return ns >= n.lo && ns <= n.hi
	case partNode:
		return slices.Contains(n.parts, r.h.Partition)
	case untimedNode:
		return r.h.Time.IsZero()
	case afterIDNode:
		return r.h.ID > n.id
	}
	panic(fmt.Sprintf("index: match of %T", n))
}

// anyValue reports whether a value of a keyword field of h satisfies ok.
// An empty value is no value (it was never indexed).
func anyValue(h *Hit, field string, ok func(string) bool) bool {
	var v string
	switch field {
	case FieldCluster:
		v = h.Cluster
	case FieldNode:
		v = h.Node
	case FieldContainer:
		v = h.Container
	case FieldFile:
		v = h.File
	case FieldStream:
		v = h.Stream
	case FieldSource:
		v = h.Source
	case FieldLevel:
		v = h.Level
	case FieldComponent:
		v = h.Component
	case FieldProcess:
		v = h.Process
	case FieldCause:
		v = h.Cause
	case FieldIP:
		v = h.IP
	case FieldFields:
		for k, fv := range h.Fields {
			if ok(k + "=" + fv) {
				return true
			}
		}
		return false
	default:
		return false
	}
	return v != "" && ok(v)
}

// phraseAt returns the index in toks of the first token of the first
// match of p (in position order), or -1.
func phraseAt(p phraseNode, toks []recordToken) int {
	if len(toks) == 0 {
		return -1
	}
	// A chunk comes before its segments and parts, which share or follow
	// its position: order the tokens by position.
	order := make([]int, len(toks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(toks[a].pos, toks[b].pos) })
	firstPos, lastPos := toks[order[0]].pos, toks[order[len(order)-1]].pos
	span := lastPos - firstPos + 1
	at := make([]int, span+1) // order[at[i]:at[i+1]]: the tokens at position firstPos+i
	for i := range at {
		at[i] = len(order)
	}
	for k := len(order) - 1; k >= 0; k-- {
		at[toks[order[k]].pos-firstPos] = k
	}
	for i := span - 1; i >= 0; i-- { // a position without tokens starts where the next does
		at[i] = min(at[i], at[i+1])
	}
	has := func(pos int, alts []string) bool {
		if len(alts) == 0 {
			return true // a gap in the phrase matches any token
		}
		i := pos - firstPos
		if i < 0 || i >= span {
			return false
		}
		for _, k := range order[at[i]:at[i+1]] {
			if slices.Contains(alts, toks[k].term) {
				return true
			}
		}
		return false
	}
	for start := firstPos; start+len(p.pos)-1 <= lastPos; start++ {
		ok := true
		for k, alts := range p.pos {
			if !has(start+k, alts) {
				ok = false
				break
			}
		}
		if ok && at[start-firstPos] < len(order) {
			return order[at[start-firstPos]]
		}
	}
	return -1
}

// withinEdits reports whether a and b are at most d edits apart
// (insertions, deletions, substitutions and transpositions of runes: the
// distance of Bleve's fuzzy terms).
func withinEdits(a, b string, d int) bool {
	if a == b {
		return true
	}
	ra, rb := []rune(a), []rune(b)
	if abs(len(ra)-len(rb)) > d {
		return false
	}
	// Optimal string alignment, three rows.
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		low := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			c := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				c = min(c, prev2[j-2]+1)
			}
			cur[j] = c
			low = min(low, c)
		}
		if low > d {
			return false
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)] <= d
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// highlightRanges returns the ranges of h's message that the positive
// text clauses of n match, merged as highlights shows them.
func highlightRanges(n node, h *Hit) [][2]int {
	r := &record{h: h}
	var rs [][2]int
	positiveLeaves(n, func(n node) {
		switch n := n.(type) {
		case termNode:
			for _, t := range r.tokens() {
				if t.term == n.term {
					rs = append(rs, [2]int{t.start, t.end})
				}
			}
		case phraseNode:
			rs = append(rs, phraseRanges(n, r.tokens())...)
		case *patternNode:
			if n.field == FieldMessage {
				for _, t := range r.tokens() {
					if n.re.MatchString(t.term) {
						rs = append(rs, [2]int{t.start, t.end})
					}
				}
			}
		case fuzzyNode:
			for _, t := range r.tokens() {
				if withinEdits(n.term, t.term, n.dist) {
					rs = append(rs, [2]int{t.start, t.end})
				}
			}
		}
	})
	return mergeRanges(rs, h.Message)
}

// phraseRanges are the tokens of every match of p.
func phraseRanges(p phraseNode, toks []recordToken) [][2]int {
	var rs [][2]int
	for from := 0; from < len(toks); {
		i := phraseAt(p, toks[from:])
		if i < 0 {
			break
		}
		i += from
		startPos := toks[i].pos
		endPos := startPos + len(p.pos) - 1
		next := len(toks)
		for j := i; j < len(toks) && toks[j].pos <= endPos; j++ {
			k := toks[j].pos - startPos
			if len(p.pos[k]) == 0 || slices.Contains(p.pos[k], toks[j].term) {
				rs = append(rs, [2]int{toks[j].start, toks[j].end})
			}
			next = j + 1
		}
		// Go on after the first position of this match.
		for next = i; next < len(toks) && toks[next].pos == startPos; next++ {
		}
		from = next
	}
	return rs
}

// mergeRanges sorts ranges of msg and merges those that overlap: a whole
// chunk and its parts overlap, and parts matched by a phrase (ray, utils,
// py) read better as one mark when only punctuation separates them
// (ray_utils.py).
func mergeRanges(rs [][2]int, msg string) [][2]int {
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(b[1], a[1])) })
	out := rs[:1]
	for _, r := range rs[1:] {
		last := &out[len(out)-1]
		if r[0] <= last[1] || r[0] <= len(msg) && onlyPunct(msg[last[1]:r[0]]) {
			last[1] = max(last[1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}

// onlyPunct reports whether s is a short run of punctuation inside a chunk.
func onlyPunct(s string) bool {
	if len(s) == 0 || len(s) > 2 {
		return false
	}
	for _, r := range s {
		if isWord(r) || isBreak(r) {
			return false
		}
	}
	return true
}
