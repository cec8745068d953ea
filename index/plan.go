package index

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"regexp/syntax"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/RoaringBitmap/roaring/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/numeric"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	"github.com/blevesearch/vellum"
	lev "github.com/blevesearch/vellum/levenshtein"
	vre "github.com/blevesearch/vellum/regexp"
)

// How a search finds its records. A query is evaluated once per shard over
// the shard's blocks, as two bit masks per block: sure, the records that
// match, and maybe, the records the index terms cannot decide (a phrase,
// a bucketed number or hex ID, a pattern that may match a bucketed token).
// A leaf of the query is a term lookup (its postings give each block's
// mask as the term's frequency) or a predicate over the catalog (time,
// line, level, source, the file a block belongs to); AND, OR and NOT
// combine masks. The maybe records are then read from the chunk store and
// matched one by one (match), so the hits are exact.

// view is a shard as one search sees it: the blocks published when it
// started and a Bleve snapshot holding at least those.
type view struct {
	sh     *shard
	blocks []*blockMeta
	segs   []segView
	snap   *scorch.IndexSnapshot
	keys   []streamKey
	vals   []string
	unlock func()
}

// segView is a segment of the snapshot: its deleted documents and, by
// document number, the block each document is (its seq; 0 for none).
type segView struct {
	seg  segment.Segment
	del  *roaring.Bitmap
	seqs []uint64
}

func (v *view) close() {
	if v.snap != nil {
		v.snap.Close()
		v.snap = nil
	}
	if v.unlock != nil {
		v.unlock()
		v.unlock = nil
	}
}

// maskSet holds per block of a view the records found: sure match, maybe
// match (nil: none).
type maskSet struct {
	sure, maybe []uint64
}

func (v *view) newSet() maskSet { return maskSet{sure: make([]uint64, len(v.blocks))} }

func (m *maskSet) addMaybe(i int, mask uint64, n int) {
	if m.maybe == nil {
		m.maybe = make([]uint64, n)
	}
	m.maybe[i] |= mask
}

// plan is one query's evaluation: the view and what its leaves need.
type plan struct {
	ctx context.Context
	v   *view
}

var errStop = errors.New("stop")

// eval returns the records of the view matching n.
func (p *plan) eval(n node) (maskSet, error) {
	if err := ctxErr(p.ctx); err != nil {
		return maskSet{}, err
	}
	v := p.v
	nb := len(v.blocks)
	switch n := n.(type) {
	case allNode:
		s := v.newSet()
		for i, b := range v.blocks {
			s.sure[i] = b.all()
		}
		return s, nil
	case noneNode:
		return v.newSet(), nil
	case andNode:
		var out maskSet
		for k, kid := range n.kids {
			s, err := p.eval(kid)
			if err != nil {
				return out, err
			}
			if k == 0 {
				out = s
				continue
			}
			any := false
			for i := range nb {
				possA := out.sure[i] | at(out.maybe, i)
				possB := s.sure[i] | at(s.maybe, i)
				sure := out.sure[i] & s.sure[i]
				maybe := possA & possB &^ sure
				out.sure[i] = sure
				if maybe != 0 {
					out.addMaybe(i, 0, nb)
					out.maybe[i] = maybe
				} else if out.maybe != nil {
					out.maybe[i] = 0
				}
				any = any || sure|maybe != 0
			}
			if !any {
				return v.newSet(), nil
			}
		}
		return out, nil
	case orNode:
		out := v.newSet()
		for _, kid := range n.kids {
			s, err := p.eval(kid)
			if err != nil {
				return out, err
			}
			for i := range nb {
				out.sure[i] |= s.sure[i]
				if m := at(s.maybe, i); m != 0 {
					out.addMaybe(i, m, nb)
				}
			}
		}
		if out.maybe != nil {
			for i := range nb {
				out.maybe[i] &^= out.sure[i]
			}
		}
		return out, nil
	case notNode:
		s, err := p.eval(n.kid)
		if err != nil {
			return s, err
		}
		for i, b := range v.blocks {
			s.sure[i] = b.all() &^ (s.sure[i] | at(s.maybe, i))
		}
		return s, nil
	case termNode:
		return p.term(FieldMessage, n.term)
	case phraseNode:
		return p.phrase(n)
	case *patternNode:
		return p.pattern(n)
	case fuzzyNode:
		return p.fuzzy(n)
	case kwNode:
		return p.keyword(n)
	case rangeNode:
		return p.numRange(n)
	case timeNode:
		s := v.newSet()
		for i, b := range v.blocks {
			if b.timed == 0 || b.maxT < n.lo || b.minT > n.hi {
				continue
			}
			if b.minT >= n.lo && b.maxT <= n.hi {
				s.sure[i] = b.timed
				continue
			}
			for r := 0; r < b.n; r++ {
				if b.timed&(1<<r) != 0 && b.times[r] >= n.lo && b.times[r] <= n.hi {
					s.sure[i] |= 1 << r
				}
			}
		}
		return s, nil
	case untimedNode:
		s := v.newSet()
		for i, b := range v.blocks {
			s.sure[i] = b.all() &^ b.timed
		}
		return s, nil
	case partNode:
		match := p.keys(func(k streamKey) bool {
			for _, q := range n.parts {
				if k.Partition == q {
					return true
				}
			}
			return false
		})
		s := v.newSet()
		for i, b := range v.blocks {
			if match[b.key] {
				s.sure[i] = b.all()
			}
		}
		return s, nil
	case afterIDNode:
		// Only the records can tell: everything may match.
		s := v.newSet()
		for i, b := range v.blocks {
			s.addMaybe(i, b.all(), nb)
		}
		return s, nil
	}
	return maskSet{}, fmt.Errorf("index: no plan for %T", n)
}

func at(m []uint64, i int) uint64 {
	if m == nil {
		return 0
	}
	return m[i]
}

// keys returns, by stream key, whether a block-level leaf matches it.
func (p *plan) keys(ok func(streamKey) bool) []bool {
	m := make([]bool, len(p.v.keys))
	for i, k := range p.v.keys {
		m[i] = ok(k)
	}
	return m
}

// term is the records with a token term in field (message) or value term
// (a keyword field held as terms).
func (p *plan) term(field, term string) (maskSet, error) {
	s := p.v.newSet()
	idx := []byte(term)
	exact := true
	if field == FieldMessage {
		idx, exact = indexTerm([]byte(term), nil)
	}
	dst := s.sure
	if !exact {
		s.maybe = make([]uint64, len(p.v.blocks))
		dst = s.maybe
	}
	if err := p.v.postings(field, idx, dst); err != nil {
		return s, err
	}
	return s, nil
}

// phrase: the records holding a term of every position may match; those
// holding the typed chunk whole surely do.
func (p *plan) phrase(n phraseNode) (maskSet, error) {
	v := p.v
	var cand []uint64
	for _, alts := range n.pos {
		if len(alts) == 0 {
			continue
		}
		pos := make([]uint64, len(v.blocks))
		for _, a := range alts {
			t, _ := indexTerm([]byte(a), nil)
			if err := v.postings(FieldMessage, t, pos); err != nil {
				return maskSet{}, err
			}
		}
		if cand == nil {
			cand = pos
			continue
		}
		for i := range cand {
			cand[i] &= pos[i]
		}
	}
	s := v.newSet()
	if cand == nil {
		return s, nil
	}
	if n.whole != "" {
		if t, exact := indexTerm([]byte(n.whole), nil); exact {
			if err := v.postings(FieldMessage, t, s.sure); err != nil {
				return s, err
			}
		}
	}
	for i := range cand {
		if m := cand[i] &^ s.sure[i]; m != 0 {
			s.addMaybe(i, m, len(cand))
		}
	}
	return s, nil
}

// keyword is the records whose field has value n.value.
func (p *plan) keyword(n kwNode) (maskSet, error) {
	v := p.v
	s := v.newSet()
	switch n.field {
	case FieldCluster, FieldNode, FieldContainer, FieldFile:
		match := p.keys(func(k streamKey) bool { return keyField(k, n.field) == n.value && n.value != "" })
		for i, b := range v.blocks {
			if match[b.key] {
				s.sure[i] = b.all()
			}
		}
		return s, nil
	case FieldLevel, FieldSource:
		for i, b := range v.blocks {
			for _, vm := range b.valueMasks(n.field) {
				if v.vals[vm.v] == n.value {
					s.sure[i] |= vm.mask
				}
			}
		}
		return s, nil
	}
	return p.term(n.field, n.value)
}

func keyField(k streamKey, field string) string {
	switch field {
	case FieldCluster:
		return k.Cluster
	case FieldNode:
		return k.Node
	case FieldContainer:
		return k.Container
	}
	return k.File
}

func (b *blockMeta) valueMasks(field string) []valueMask {
	if field == FieldLevel {
		return b.levels
	}
	return b.sources
}

// numRange is pid, rank (terms) or line (catalog) in [lo, hi].
func (p *plan) numRange(n rangeNode) (maskSet, error) {
	v := p.v
	s := v.newSet()
	if n.field == FieldLine {
		for i, b := range v.blocks {
			for r, l := range b.lines {
				if int64(l) >= n.lo && int64(l) <= n.hi {
					s.sure[i] |= 1 << r
				}
			}
		}
		return s, nil
	}
	if n.lo == n.hi {
		return p.term(n.field, string(intTerm(n.lo)))
	}
	// Terms of one shift sort like their values: a range of terms.
	lo, hi := intTerm(n.lo), intTerm(n.hi)
	end := append(append([]byte(nil), hi...), 0) // exclusive end just past hi
	a := vellum.AlwaysMatch{}
	for _, sv := range v.segs {
		dict, err := sv.seg.Dictionary(n.field)
		if err != nil {
			return s, err
		}
		it := dict.AutomatonIterator(&a, lo, end)
		for {
			e, err := it.Next()
			if err != nil {
				return s, err
			}
			if e == nil {
				break
			}
			if err := v.orPostings(&sv, dict, []byte(e.Term), s.sure); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// postings ORs into out, per block, the masks of term in field.
func (v *view) postings(field string, term []byte, out []uint64) error {
	for _, sv := range v.segs {
		dict, err := sv.seg.Dictionary(field)
		if err != nil {
			return fmt.Errorf("index: dictionary %s: %w", field, err)
		}
		if err := v.orPostings(&sv, dict, term, out); err != nil {
			return err
		}
	}
	return nil
}

func (v *view) orPostings(sv *segView, dict segment.TermDictionary, term []byte, out []uint64) error {
	_, err := v.orPostingsCount(sv, dict, term, out)
	return err
}

// orPostingsCount is orPostings, also counting the records found. A
// posting is a group's: its frequency names the term's entry in the
// group's table (see groupTerms), which gives each block's mask.
func (v *view) orPostingsCount(sv *segView, dict segment.TermDictionary, term []byte, out []uint64) (int, error) {
	pl, err := dict.PostingsList(term, sv.del, nil)
	if err != nil {
		return 0, fmt.Errorf("index: postings of %q: %w", term, err)
	}
	if pl == nil || pl.Count() == 0 {
		return 0, nil
	}
	blocks := v.blocks
	n := 0
	it := pl.Iterator(true, false, false, nil)
	for {
		post, err := it.Next()
		if err != nil {
			return n, fmt.Errorf("index: postings of %q: %w", term, err)
		}
		if post == nil {
			return n, nil
		}
		num := post.Number()
		if num >= uint64(len(sv.seqs)) {
			continue
		}
		seq := sv.seqs[num]
		if seq == 0 || seq > uint64(len(blocks)) {
			continue // not published when this search began
		}
		g := blocks[seq-1].grp
		if g == nil || g.first != seq || seq-1+uint64(g.n) > uint64(len(blocks)) {
			continue
		}
		tab, err := v.table(g)
		if err != nil {
			return n, err
		}
		f := post.Frequency()
		if f == 0 {
			continue
		}
		err = forEntry(tab, f-1, func(j int, code uint64) {
			if j >= g.n {
				return
			}
			i := int(seq) - 1 + j
			m := codeMask(code, blocks[i].n)
			out[i] |= m
			n += bits.OnesCount64(m)
		})
		if err != nil {
			return n, fmt.Errorf("index shard %d: table of block %d: entry of %q: %w", v.sh.n, seq, term, err)
		}
	}
}

// table returns the term table of group g.
func (v *view) table(g *groupMeta) ([]byte, error) {
	x := v.sh.x
	k := cacheKey{v.sh.n, g.first}
	if tab, ok := x.tables.get(k); ok {
		return tab, nil
	}
	tab, err := v.sh.store.readTable(g)
	if err != nil {
		return nil, err
	}
	x.tables.put(k, tab)
	return tab, nil
}

// pattern: the index terms it matches surely match; the buckets of the
// token classes it may match may (see terms.go).
func (p *plan) pattern(n *patternNode) (maskSet, error) {
	v := p.v
	s := v.newSet()
	switch n.field {
	case FieldCluster, FieldNode, FieldContainer, FieldFile:
		match := p.keys(func(k streamKey) bool {
			val := keyField(k, n.field)
			return val != "" && n.re.MatchString(val)
		})
		for i, b := range v.blocks {
			if match[b.key] {
				s.sure[i] = b.all()
			}
		}
		return s, nil
	case FieldLevel, FieldSource:
		for i, b := range v.blocks {
			for _, vm := range b.valueMasks(n.field) {
				if n.re.MatchString(v.vals[vm.v]) {
					s.sure[i] |= vm.mask
				}
			}
		}
		return s, nil
	}
	parsed, err := syntax.Parse(n.pattern, syntax.Perl)
	if err != nil {
		return s, fmt.Errorf("query: %s: %w", n.display, err)
	}
	a, err := vre.NewParsedWithLimit(n.pattern, parsed, vre.DefaultLimit)
	if err != nil {
		return s, fmt.Errorf("query: %s: %w", n.display, err)
	}
	prefix := literalPrefix(parsed)
	// Words and buckets (each at least one word) count towards the bound.
	w := newWords()
	if err := p.expand(n.field, a, prefix, n.display, w, s.sure); err != nil {
		return s, err
	}
	if n.field != FieldMessage {
		return s, nil
	}
	maybe, err := p.lossyCandidates(parsed, strings.ToLower(prefix), n.display, w)
	if err != nil {
		return s, err
	}
	if maybe != nil {
		for i := range maybe {
			maybe[i] &^= s.sure[i]
		}
		s.maybe = maybe
	}
	return s, nil
}

// expand ORs into out the masks of the exact terms of field that a
// matches (bucket terms are no words and never match), failing when they
// are more than MaxTermExpansion.
func (p *plan) expand(field string, a vellum.Automaton, prefix, display string, w *words, out []uint64) error {
	var beg, end []byte
	if prefix != "" {
		beg = []byte(prefix)
		end = exclusiveEnd(beg)
	}
	for _, sv := range p.v.segs {
		dict, err := sv.seg.Dictionary(field)
		if err != nil {
			return err
		}
		it := dict.AutomatonIterator(a, beg, end)
		for k := 0; ; k++ {
			if k%1024 == 0 && ctxErr(p.ctx) != nil {
				return ctxErr(p.ctx)
			}
			e, err := it.Next()
			if err != nil {
				return fmt.Errorf("query: %s: %w", display, err)
			}
			if e == nil {
				break
			}
			if len(e.Term) > 0 && e.Term[0] == bucketMark {
				continue
			}
			if err := w.add(e.Term, display); err != nil {
				return err
			}
			if err := p.v.orPostings(&sv, dict, []byte(e.Term), out); err != nil {
				return err
			}
		}
	}
	return nil
}

// words counts the words a pattern stands for in a shard, failing past
// MaxTermExpansion.
type words struct {
	seen  map[string]struct{}
	extra int // of buckets
}

func newWords() *words { return &words{seen: map[string]struct{}{}} }

func (w *words) add(term, display string) error {
	if _, ok := w.seen[term]; ok {
		return nil
	}
	w.seen[term] = struct{}{}
	return w.check(display)
}

func (w *words) addN(n int, display string) error {
	w.extra += n
	return w.check(display)
}

func (w *words) check(display string) error {
	if len(w.seen)+w.extra > MaxTermExpansion {
		return fmt.Errorf("%w: %s matches more than %d different words; make it more specific (a longer literal part, no leading wildcard) or add filters",
			ErrQueryTooBroad, display, MaxTermExpansion)
	}
	return nil
}

func exclusiveEnd(in []byte) []byte {
	rv := append([]byte(nil), in...)
	for i := len(rv) - 1; i >= 0; i-- {
		rv[i]++
		if rv[i] != 0 {
			return rv[:i+1]
		}
	}
	return nil
}

// literalPrefix is the literal every match of a parsed regexp starts with.
func literalPrefix(s *syntax.Regexp) string {
	for s != nil && s.Op == syntax.OpConcat {
		if len(s.Sub) < 1 {
			return ""
		}
		s = s.Sub[0]
	}
	if s.Op == syntax.OpLiteral && s.Flags&syntax.FoldCase == 0 {
		return string(s.Rune)
	}
	return ""
}

// requiredRuns are the alphanumeric runs of the literals every match of a
// parsed regexp contains (those of a top-level concatenation).
func requiredRuns(s *syntax.Regexp) []string {
	var lits []*syntax.Regexp
	switch s.Op {
	case syntax.OpLiteral:
		lits = []*syntax.Regexp{s}
	case syntax.OpConcat:
		for _, sub := range s.Sub {
			if sub.Op == syntax.OpLiteral {
				lits = append(lits, sub)
			}
		}
	case syntax.OpCapture:
		if len(s.Sub) == 1 {
			return requiredRuns(s.Sub[0])
		}
	}
	var runs []string
	for _, l := range lits {
		if l.Flags&syntax.FoldCase != 0 {
			continue
		}
		var b strings.Builder
		flush := func() {
			if b.Len() > 0 {
				runs = append(runs, b.String())
				b.Reset()
			}
		}
		for _, r := range l.Rune {
			if isWord(r) {
				b.WriteRune(r)
			} else {
				flush()
			}
		}
		flush()
	}
	return runs
}

// bucket classes, the characters their tokens are made of, and whether
// a bucket's code (the bytes after its class) agrees with a token prefix.
var bucketClasses = []struct {
	class  byte
	chars  func(r rune) bool // every character of such a token
	agrees func(code, prefix string) bool
}{
	{bucketNumber, func(r rune) bool { return r >= '0' && r <= '9' }, func(code, p string) bool {
		return len(code) > 1 && startsAlike(code[1:], p) // the length, then the first digits
	}},
	{bucketHex, isHexRune, startsAlike},
	{bucketHex0x, func(r rune) bool { return isHexRune(r) || r == 'x' }, func(code, p string) bool {
		switch {
		case len(p) >= 2:
			return p[:2] == "0x" && startsAlike(code, p[2:])
		case len(p) == 1:
			return p == "0"
		}
		return true
	}},
	{bucketLong, func(r rune) bool { return r < utf8.RuneSelf && isWord(r) || r >= utf8.RuneSelf }, startsAlike},
	{bucketCompound, func(rune) bool { return true }, startsAlike},
}

// startsAlike reports whether the shorter of a and b starts the other.
func startsAlike(a, b string) bool {
	n := min(len(a), len(b))
	return a[:n] == b[:n]
}

func isHexRune(r rune) bool { return r >= '0' && r <= '9' || r >= 'a' && r <= 'f' }

// lossyCandidates are the records whose bucketed tokens a pattern with
// literal prefix prefix may match; nil when it can match none.
func (p *plan) lossyCandidates(parsed *syntax.Regexp, prefix, display string, w *words) ([]uint64, error) {
	runs := requiredRuns(parsed)
	var out []uint64
	for _, c := range bucketClasses {
		if !allRunes(prefix, c.chars) {
			continue
		}
		possible := true
		for _, r := range runs {
			if !allRunes(strings.ToLower(r), c.chars) {
				possible = false
			}
		}
		if !possible {
			continue
		}
		cand := make([]uint64, len(p.v.blocks))
		if err := p.buckets(c.class, c.agrees, prefix, display, w, cand); err != nil {
			return nil, err
		}
		if c.class == bucketCompound && prefix == "" {
			// A compound that matches holds each required run within one
			// of its parts; a run with a letter beyond hex is in a part
			// that is an exact term (or a long one): narrow to those.
			if narrowed, ok, err := p.recordsWithRuns(runs, display); err != nil {
				return nil, err
			} else if ok {
				for i := range cand {
					cand[i] &= narrowed[i]
				}
			}
		}
		if out == nil {
			out = cand
			continue
		}
		for i := range out {
			out[i] |= cand[i]
		}
	}
	return out, nil
}

func allRunes(s string, ok func(rune) bool) bool {
	for _, r := range s {
		if !ok(r) {
			return false
		}
	}
	return true
}

// buckets ORs into out the masks of every bucket term of class whose code
// agrees with prefix.
func (p *plan) buckets(class byte, agrees func(code, prefix string) bool, prefix, display string, w *words, out []uint64) error {
	beg := []byte{bucketMark, class}
	end := []byte{bucketMark, class + 1}
	a := vellum.AlwaysMatch{}
	for _, sv := range p.v.segs {
		dict, err := sv.seg.Dictionary(FieldMessage)
		if err != nil {
			return err
		}
		it := dict.AutomatonIterator(&a, beg, end)
		for k := 0; ; k++ {
			if k%1024 == 0 && ctxErr(p.ctx) != nil {
				return ctxErr(p.ctx)
			}
			e, err := it.Next()
			if err != nil {
				return err
			}
			if e == nil {
				break
			}
			if !agrees(e.Term[2:], prefix) {
				continue
			}
			n, err := p.v.orPostingsCount(&sv, dict, []byte(e.Term), out)
			if err != nil {
				return err
			}
			if w != nil {
				// A bucket stands for as many words as records hold one
				// of its words, at most: count those.
				if err := w.addN(n, display); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// recordsWithRuns are the records holding, for one of runs with a letter
// beyond hex, an exact term containing it (or a long word); ok is false
// when no run narrows (or one stands for too many terms).
func (p *plan) recordsWithRuns(runs []string, display string) ([]uint64, bool, error) {
	for _, r := range runs {
		r = strings.ToLower(r)
		if allRunes(r, func(c rune) bool { return isHexRune(c) || c == 'x' }) {
			continue
		}
		a, err := vre.New(".*" + regexpQuote(r) + ".*")
		if err != nil {
			return nil, false, nil
		}
		out := make([]uint64, len(p.v.blocks))
		err = p.expand(FieldMessage, a, "", display, newWords(), out)
		if errors.Is(err, ErrQueryTooBroad) {
			continue
		}
		if err != nil {
			return nil, false, err
		}
		if err := p.buckets(bucketLong, startsAlike, "", display, nil, out); err != nil {
			return nil, false, err
		}
		return out, true, nil
	}
	return nil, false, nil
}

func regexpQuote(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`\.+*?()|[]{}^$`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// fuzzy: the exact terms within the distance surely match; a bucketed
// token may only when the term is shaped like one.
func (p *plan) fuzzy(n fuzzyNode) (maskSet, error) {
	v := p.v
	s := v.newSet()
	var a vellum.Automaton
	var err error
	switch n.dist {
	case 1:
		a, err = lev1.BuildDfa(n.term, 1)
	default:
		a, err = lev2.BuildDfa(n.term, 2)
	}
	if err != nil {
		return s, fmt.Errorf("query: %s~%d: %w", n.term, n.dist, err)
	}
	if err := p.expand(FieldMessage, a, "", n.term+"~"+strconv.Itoa(n.dist), newWords(), s.sure); err != nil {
		return s, err
	}
	if fuzzyMayBeLossy(n.term, n.dist) {
		for i, b := range v.blocks {
			if m := b.all() &^ s.sure[i]; m != 0 {
				s.addMaybe(i, m, len(v.blocks))
			}
		}
	}
	return s, nil
}

// fuzzyMayBeLossy reports whether a token within d edits of term may be
// one the index buckets: a long number or hex ID, a long word, or a
// compound holding one (see indexTerm). Typed words are not.
func fuzzyMayBeLossy(term string, d int) bool {
	digits, hex, run, letters := 0, 0, 0, 0
	for _, r := range term {
		switch {
		case r >= '0' && r <= '9':
			digits++
			run++
		case r >= 'a' && r <= 'f':
			run++
			letters++
		default:
			letters++
			run = 0
		}
		hex = max(hex, run)
	}
	n := utf8.RuneCountInString(term)
	return digits+d > maxExactDigits || hex+d >= minHexID || n+d > maxExactPart || letters <= d
}

var lev1, lev2 *lev.LevenshteinAutomatonBuilder

func init() {
	// Bleve's own fuzzy queries count a transposition as one edit: so do
	// these (and withinEdits).
	var err error
	if lev1, err = lev.NewLevenshteinAutomatonBuilder(1, true); err != nil {
		panic(err)
	}
	if lev2, err = lev.NewLevenshteinAutomatonBuilder(2, true); err != nil {
		panic(err)
	}
}

// intTerm is the term of v in the number fields: Bleve's prefix coding at
// shift 0, whose byte order is numeric order.
func intTerm(v int64) []byte { return numeric.MustNewPrefixCodedInt64(v, 0) }

// verify matches the maybe records of s one by one, adding those that
// match root to the sure ones. Blocks are read in parallel.
func (p *plan) verify(root node, s *maskSet) error {
	if s.maybe == nil {
		return nil
	}
	var todo []int
	for i, m := range s.maybe {
		if m&^s.sure[i] != 0 {
			todo = append(todo, i)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	workers := min(len(todo), max(1, p.v.sh.x.readers))
	var mu sync.Mutex
	var firstErr error
	next := 0
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				mu.Lock()
				if next == len(todo) || firstErr != nil {
					mu.Unlock()
					return
				}
				i := todo[next]
				next++
				mu.Unlock()
				if err := ctxErr(p.ctx); err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				hits, err := p.v.sh.records(p.v.blocks[i])
				if err != nil {
					mu.Lock()
					firstErr = cmpErr(firstErr, err)
					mu.Unlock()
					return
				}
				todoMask := s.maybe[i] &^ s.sure[i]
				var found uint64
				for todoMask != 0 {
					r := bits.TrailingZeros64(todoMask)
					todoMask &= todoMask - 1
					if r < len(hits) && match(root, &record{h: &hits[r]}) {
						found |= 1 << r
					}
				}
				s.sure[i] |= found // each i is one worker's
			}
		})
	}
	wg.Wait()
	s.maybe = nil
	return firstErr
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
