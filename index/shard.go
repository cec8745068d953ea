package index

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/document"
	"github.com/blevesearch/bleve/v2/index/scorch"
	bindex "github.com/blevesearch/bleve_index_api"
	segment "github.com/blevesearch/scorch_segment_api/v2"
	zapx "github.com/blevesearch/zapx/v17"
)

// shard is one Bleve index of block documents, its chunk store and its
// writer goroutine. Shards seal blocks, compress them and build their
// segments in parallel.
type shard struct {
	x *Index
	n int
	// bl is the shard's Bleve index, reopened when a batch fails (see
	// recover): views hold blMu to read, recover to swap it.
	blMu  sync.RWMutex
	bl    bleve.Index
	blCfg map[string]interface{}
	path  string // of bl
	store *blockStore
	in    chan shardOp
	done  chan struct{}

	mu     sync.RWMutex
	blocks []*blockMeta // published; blocks[i].seq == i+1

	segMu   sync.Mutex
	segSeqs map[segment.Segment][]uint64

	nextSeq uint64  // writer only
	scratch scratch // writer only
}

// shardOp is a record to index, or (flushed not nil) a flush request to
// ack. The record travels by value: a pointer made each record a heap
// object (of about 300 bytes) that the block copies anyway.
type shardOp struct {
	hit      Hit
	key      int32
	replaces *recordRef // the older version of hit, when it has one
	flushed  chan error
}

// uptoKey is the Bleve internal value naming the last block of the
// shard's last batch: written in the same batch, it says after a crash
// which blocks of the chunk store Bleve has (see openShardStore).
var uptoKey = []byte("faultline.upto")

// openBlock is a block being filled by the writer: its records, as they
// come; seal orders and indexes them.
type openBlock struct {
	key   int32
	hits  []Hit
	bytes int // of the records' text, roughly
	// replaces are older versions of its records, to mark dead.
	replaces []recordRef
}

// add appends a record to the block.
func (b *openBlock) add(h *Hit) {
	if b.hits == nil {
		b.hits = make([]Hit, 0, blockCap)
	}
	b.hits = append(b.hits, *h)
	b.bytes += len(h.Message) + len(h.ID) + 64
}

// full reports whether the block takes no more records.
func (b *openBlock) full() bool { return len(b.hits) == blockCap || b.bytes >= maxBlockBytes }

// maxBlockBytes seals a block of long records early: a block is read
// whole for any one of its records.
const maxBlockBytes = 64 << 10

// termField indexes termFields by name.
var termFieldIdx = func() map[string]int {
	m := map[string]int{}
	for i, f := range termFields {
		m[f] = i
	}
	return m
}()

// The fields' places in termFields.
const (
	fMessage = iota
	fStream
	fComponent
	fProcess
	fCause
	fIP
	fFields
	fPID
	fRank
	nTermFields // len(termFields)
)

func init() {
	// zap sizes a new segment's buffer as the last segment's bytes per
	// document times (documents + 100): made for a document per record, it
	// is 21 times too much for the few group documents of a batch (5 in a
	// batch of ingest: buffers of 15 MB for segments of 710 kB, held until
	// the segment is persisted, 144 MB of the 800 MB that ingest of 200k
	// lines allocates, zeroed and faulted in). The last segment's size per
	// document, with room to grow by a quarter, is what a batch of groups
	// needs.
	zapx.NewSegmentBufferNumResultsBump = 0
	zapx.NewSegmentBufferNumResultsFactor = 1.25
	if len(termFields) != nTermFields {
		panic("index: nTermFields is not len(termFields)")
	}
	for i, f := range []string{FieldMessage, FieldStream, FieldComponent, FieldProcess, FieldCause, FieldIP, FieldFields, FieldPID, FieldRank} {
		if termFieldIdx[f] != i {
			panic("index: the field constants are not termFields' order")
		}
	}
}

// termDict numbers the terms of the blocks of one write (a shard's batch)
// once: a block's terms are term numbers with their records' masks, and a
// group's table is made with arrays indexed by number, with no map lookup
// per term of each block (one per token and block, then one per term of
// each block of the group, were a third of the index's CPU). The numbers
// are the write's alone: reset once its groups are made.
type termDict struct {
	ids   [nTermFields]map[string]int32
	terms [][]byte // by number: its map key's bytes (shared, read only)
	// By number: the last block (serial) that holds the term and its place
	// in that block's terms of its field; the last group that does and
	// its entry there.
	blockAt, blockSlot []int32
	groupAt, groupEnt  []int32
	blocks, groups     int32 // serials given
	// The keyword fields' last value and its number: a file's records
	// mostly repeat the one before's (no lookup then).
	lastKw  [nTermFields]string
	lastID  [nTermFields]int32
	lastPID int
	pidID   int32
	pidIDs  map[int]int32 // the numbers of the PIDs' terms
}

// id is the number of field's term t.
func (d *termDict) id(field int, t []byte) int32 {
	if id, ok := d.ids[field][string(t)]; ok {
		return id
	}
	return d.add(field, t)
}

// add numbers t, a term of field it does not have.
func (d *termDict) add(field int, t []byte) int32 {
	m := d.ids[field]
	if m == nil {
		m = make(map[string]int32, 256)
		d.ids[field] = m
	}
	k := string(t)
	id := int32(len(d.terms))
	m[k] = id
	// Bleve only reads a term: it shares the key's bytes.
	d.terms = append(d.terms, unsafe.Slice(unsafe.StringData(k), len(k)))
	d.blockAt = append(d.blockAt, -1)
	d.blockSlot = append(d.blockSlot, 0)
	d.groupAt = append(d.groupAt, -1)
	d.groupEnt = append(d.groupEnt, 0)
	return id
}

// reset forgets the write's terms (their maps keep their room).
func (d *termDict) reset() {
	for _, m := range d.ids {
		clear(m)
	}
	clear(d.terms) // the terms' bytes are the groups' documents' now
	d.terms = d.terms[:0]
	d.blockAt, d.blockSlot = d.blockAt[:0], d.blockSlot[:0]
	d.groupAt, d.groupEnt = d.groupAt[:0], d.groupEnt[:0]
	d.lastKw, d.lastPID = [nTermFields]string{}, 0
	clear(d.pidIDs)
}

// pidNum is the number of PID pid's term (made by b when new), looked up
// by the PID: not a string lookup of its term, made first.
func (d *termDict) pidNum(pid int, b *blockTerms) int32 {
	if id, ok := d.pidIDs[pid]; ok {
		return id
	}
	if d.pidIDs == nil {
		d.pidIDs = make(map[int]int32, 256)
	}
	id := d.id(fPID, b.pidTerm(pid))
	d.pidIDs[pid] = id
	return id
}

// kwID is the number of keyword field's value v.
func (d *termDict) kwID(field int, v string) int32 {
	if v == d.lastKw[field] && v != "" {
		return d.lastID[field]
	}
	id := d.id(field, unsafe.Slice(unsafe.StringData(v), len(v))) // read only
	d.lastKw[field], d.lastID[field] = v, id
	return id
}

// blockTerms gathers a block's terms by field: their numbers as they came
// (see groupTerms) and the masks of the records that hold them.
type blockTerms struct {
	d      *termDict
	serial int32
	n      int // records
	ids    [nTermFields][]int32
	masks  [nTermFields][]uint64
	s      *scratch
}

// newBlockTerms starts the terms of a block of d's write. With sc, they
// are gathered in its buffers until finish.
func newBlockTerms(d *termDict, sc *scratch) *blockTerms {
	b := &blockTerms{d: d, serial: d.blocks, s: sc}
	d.blocks++
	if sc != nil {
		for f := range b.ids {
			b.ids[f], b.masks[f] = sc.ids[f][:0], sc.masks[f][:0]
		}
	}
	return b
}

// finish moves the block's terms out of the writer's buffers, into two
// arrays of their size: grown term by term in arrays of their own per
// field, they were 6% of the bytes ingest allocates and a third of the
// CPU of its slice growth.
func (b *blockTerms) finish() {
	sc := b.s
	if sc == nil {
		return
	}
	n := 0
	for f := range b.ids {
		n += len(b.ids[f])
	}
	ids, masks := make([]int32, n), make([]uint64, n)
	at := 0
	for f := range b.ids {
		k := len(b.ids[f])
		copy(ids[at:], b.ids[f])
		copy(masks[at:], b.masks[f])
		sc.ids[f], sc.masks[f] = b.ids[f], b.masks[f]
		b.ids[f], b.masks[f] = ids[at:at+k:at+k], masks[at:at+k:at+k]
		at += k
	}
	b.s = nil
}

// scratch is a writer's reused buffers.
type scratch struct {
	dict termDict       // the terms of the write being gathered
	pids map[int][]byte // the terms of recent PIDs
	kv   []byte
	toks []logToken
	low  []byte
	// The terms of the block being sealed (see newBlockTerms).
	ids   [nTermFields][]int32
	masks [nTermFields][]uint64
}

func (b *blockTerms) add(field int, t []byte, bit uint64) {
	b.addID(field, b.d.id(field, t), bit)
}

// addID adds the term numbered id to record bit's terms.
func (b *blockTerms) addID(field int, id int32, bit uint64) {
	d := b.d
	if d.blockAt[id] == b.serial {
		b.masks[field][d.blockSlot[id]] |= bit
		return
	}
	d.blockAt[id] = b.serial
	d.blockSlot[id] = int32(len(b.ids[field]))
	b.ids[field] = append(b.ids[field], id)
	b.masks[field] = append(b.masks[field], bit)
}

// record adds the terms of h, record bit of its block.
func (b *blockTerms) record(h *Hit, bit uint64) {
	var buf [64]byte
	msg := unsafe.Slice(unsafe.StringData(h.Message), len(h.Message)) // read only
	var toks []logToken
	var low []byte
	var ascii bool
	if sc := b.s; sc != nil {
		sc.toks = tokenizeLog(msg, sc.toks[:0])
		sc.low, ascii = lowerASCIIInto(sc.low, msg)
		toks, low = sc.toks, sc.low
	} else {
		toks = tokenizeLog(msg, nil)
		low, ascii = lowerASCII(msg)
	}
	d := b.d
	for _, t := range toks {
		tok := low[t.start:t.end]
		if !ascii {
			tok = lower(msg[t.start:t.end])
		}
		// Most tokens are terms of the write already: a token found as a
		// term is exact (a bucket term starts with bucketMark, which no
		// token does), so indexTerm is only asked about new tokens.
		id, ok := d.ids[fMessage][string(tok)]
		if !ok {
			if term, exact := indexTerm(tok, buf[:0]); exact {
				id = d.add(fMessage, term)
			} else {
				id = d.id(fMessage, term)
			}
		}
		b.addID(fMessage, id, bit)
	}
	kw := func(field int, v string) {
		if v != "" {
			b.addID(field, d.kwID(field, v), bit)
		}
	}
	kw(fStream, h.Stream)
	kw(fComponent, h.Component)
	kw(fProcess, h.Process)
	kw(fCause, h.Cause)
	kw(fIP, h.IP)
	if len(h.Fields) > 0 {
		// In key order: the same record makes the same terms in the same
		// order (see groupTerms).
		var keysBuf [16]string
		keys := keysBuf[:0]
		for k := range h.Fields {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var kv []byte
		if b.s != nil {
			kv = b.s.kv[:0]
		}
		for _, k := range keys {
			kv = append(append(append(kv[:0], k...), '='), h.Fields[k]...)
			b.add(fFields, kv, bit)
		}
		if b.s != nil {
			b.s.kv = kv
		}
	}
	if h.PID != 0 {
		if h.PID != d.lastPID {
			d.lastPID, d.pidID = h.PID, d.pidNum(h.PID, b)
		}
		b.addID(fPID, d.pidID, bit)
	}
	if h.Rank != nil {
		b.add(fRank, intTerm(int64(*h.Rank)), bit)
	}
}

// pidTerm is the term of a PID: a file's records have few.
func (b *blockTerms) pidTerm(pid int) []byte {
	sc := b.s
	if sc == nil {
		return intTerm(int64(pid))
	}
	if t, ok := sc.pids[pid]; ok {
		return t
	}
	if sc.pids == nil || len(sc.pids) >= 4096 {
		sc.pids = make(map[int][]byte, 256)
	}
	t := intTerm(int64(pid))
	sc.pids[pid] = t
	return t
}

// template is what orders a block's records: the start of the message
// with its numbers blanked, so that lines printed by one statement stand
// together and their words' masks are runs (see maskCode).
func template(msg string) tmplKey {
	var t tmplKey
	b := &t.b
	n := 0
	for i := 0; i < len(msg) && n < len(b); i++ {
		c := msg[i]
		if c >= '0' && c <= '9' {
			if n > 0 && b[n-1] == '#' {
				continue
			}
			c = '#'
		}
		b[n] = c
		n++
	}
	t.n = uint8(n)
	return t
}

// tmplKey is a template, held in place (not a string of its own per
// record).
type tmplKey struct {
	b [40]byte
	n uint8
}

func (t *tmplKey) bytes() []byte { return t.b[:t.n] }

func addNamed(ms []namedMask, name string, bit uint64) []namedMask {
	if name == "" {
		return ms
	}
	for i := range ms {
		if ms[i].name == name {
			ms[i].mask |= bit
			return ms
		}
	}
	return append(ms, namedMask{name, bit})
}

type namedMask struct {
	name string
	mask uint64
}

// sealed is a block ready to be written: its catalog entry, its header
// and payload (uncompressed), and its document.
type sealed struct {
	meta            *blockMeta
	raw             []byte
	terms           *blockTerms // nil once its group is made
	levels, sources []string
	recIDs          []string
	replaces        []recordRef
	// Made when the block is numbered (number).
	header []byte
}

// seal orders the records of b by template, and makes its catalog entry,
// payload and Bleve document.
func (s *shard) seal(b *openBlock) (*sealed, error) {
	x := s.x
	hs := b.hits
	var tmplBuf [blockCap]tmplKey
	var orderBuf [blockCap]int
	tmpl, order := tmplBuf[:0], orderBuf[:0]
	if len(hs) > blockCap {
		tmpl, order = make([]tmplKey, 0, len(hs)), make([]int, 0, len(hs))
	}
	for i := range hs {
		tmpl, order = append(tmpl, template(hs[i].Message)), append(order, i)
	}
	slices.SortStableFunc(order, func(a, b int) int { return bytes.Compare(tmpl[a].bytes(), tmpl[b].bytes()) })
	permute(hs, order)
	n := len(hs)
	m := &blockMeta{key: b.key, n: n, times: make([]int64, n), lines: make([]int32, n), ids: make([]uint32, n)}
	var levels, sources []namedMask
	terms := newBlockTerms(&s.scratch.dict, &s.scratch)
	terms.n = n
	recIDs := make([]string, n)
	for i := range hs {
		h := &hs[i]
		bit := uint64(1) << i
		if !h.Time.IsZero() {
			t := timeNanos(h.Time)
			m.times[i] = t
			if m.timed == 0 || t < m.minT {
				m.minT = t
			}
			if m.timed == 0 || t > m.maxT {
				m.maxT = t
			}
			m.timed |= bit
		}
		m.lines[i] = int32(min(max(h.Line, 0), 1<<31-1))
		m.ids[i] = idHash(h.ID)
		recIDs[i] = h.ID
		if i == 0 || h.Offset < m.minOff {
			m.minOff = h.Offset
		}
		if i == 0 || h.Offset > m.maxOff {
			m.maxOff = h.Offset
		}
		levels = addNamed(levels, h.Level, bit)
		sources = addNamed(sources, h.Source, bit)
		terms.record(h, bit)
	}
	var levelNames, sourceNames []string
	for _, nm := range levels {
		m.levels = append(m.levels, valueMask{v: x.tab.val(nm.name), mask: nm.mask})
		levelNames = append(levelNames, nm.name)
	}
	for _, nm := range sources {
		m.sources = append(m.sources, valueMask{v: x.tab.val(nm.name), mask: nm.mask})
		sourceNames = append(sourceNames, nm.name)
	}
	terms.finish()
	keys, _ := x.tab.snapshot()
	raw := appendPayload(make([]byte, 0, b.bytes), hs, keys[b.key])
	m.rawLen = int32(len(raw))
	sb := &sealed{meta: m, raw: raw, recIDs: recIDs, replaces: b.replaces, levels: levelNames, sources: sourceNames,
		terms: terms}
	return sb, nil
}

// permute puts hs in the order order gives (hs[i] becomes the hs[order[i]]
// of before), in place: a block's records are its own. It uses up order.
func permute(hs []Hit, order []int) {
	for i := range hs {
		if order[i] < 0 || order[i] == i {
			continue
		}
		tmp := hs[i]
		j := i
		for {
			k := order[j]
			order[j] = -1
			if k == i {
				hs[j] = tmp
				break
			}
			hs[j] = hs[k]
			j = k
		}
	}
}

// groupCap is the most blocks a group (one Bleve document) holds: a
// term of many of its blocks is then one posting, not one per block
// (Bleve's segments cost per posting).
const groupCap = 64

// groupTerms makes the term table and the Bleve fields of a group of
// blocks of d's write. The table holds an entry per term of the group: a
// mask of the group's blocks that hold it (uvarint), then for each of them
// the code of its records' mask (uvarint, see maskCode); a term's
// frequency in the group's document is its entry's offset plus one. The
// entries are in the order of the blocks, of their fields and of the
// fields' terms as their records gave them, so the same records make the
// same table (see reindex).
func groupTerms(d *termDict, blocks []*blockTerms) ([]byte, []*blockField) {
	serial := d.groups
	d.groups++
	type ent struct {
		pres uint64
		end  int32 // of its codes in flat, while filling
		id   int32
		f    int32
	}
	ncodes := 0
	for _, b := range blocks {
		for f := range b.ids {
			ncodes += len(b.ids[f])
		}
	}
	ents := make([]ent, 0, ncodes/2)
	type code struct {
		e    int32
		code uint64
	}
	codes := make([]code, 0, ncodes)
	var perField [nTermFields]int
	for j, b := range blocks {
		for f := range b.ids {
			for i, id := range b.ids[f] {
				var e int32
				if d.groupAt[id] == serial {
					e = d.groupEnt[id]
				} else {
					e = int32(len(ents))
					d.groupAt[id], d.groupEnt[id] = serial, e
					ents = append(ents, ent{id: id, f: int32(f)})
					perField[f]++
				}
				ents[e].pres |= 1 << j
				codes = append(codes, code{e, uint64(maskCode(b.masks[f][i], b.n))})
			}
		}
	}
	var at int32
	for i := range ents {
		at += int32(bits.OnesCount64(ents[i].pres))
		ents[i].end = at - int32(bits.OnesCount64(ents[i].pres)) // its start, then its end
	}
	flat := make([]uint64, len(codes))
	for _, c := range codes {
		flat[ents[c.e].end] = c.code
		ents[c.e].end++
	}
	var fields [nTermFields]*blockField
	for f, n := range perField {
		if n > 0 {
			fields[f] = &blockField{name: termFields[f], freqs: make(bindex.TokenFrequencies, n)}
		}
	}
	slab := make([]bindex.TokenFreq, len(ents))
	table := make([]byte, 0, len(ents)*2+len(codes)*2)
	start := 0
	for i, e := range ents {
		off := len(table)
		table = binary.AppendUvarint(table, e.pres)
		for _, c := range flat[start:e.end] {
			table = binary.AppendUvarint(table, c)
		}
		start = int(e.end)
		tf := &slab[i]
		tf.Term = d.terms[e.id]
		tf.SetFrequency(off + 1)
		fields[e.f].freqs[unsafe.String(unsafe.SliceData(tf.Term), len(tf.Term))] = tf
	}
	var out []*blockField
	for _, gf := range fields {
		if gf != nil {
			out = append(out, gf)
		}
	}
	return table, out
}

// forEntry calls fn with each block of a group (its index in the group)
// holding the term whose entry is at off in the group's table, and the
// code of its records' mask.
func forEntry(table []byte, off uint64, fn func(j int, code uint64)) error {
	if off >= uint64(len(table)) {
		return errBadBlob
	}
	b := table[off:]
	pres, w := binary.Uvarint(b)
	if w <= 0 {
		return errBadBlob
	}
	b = b[w:]
	for pres != 0 {
		j := bits.TrailingZeros64(pres)
		pres &= pres - 1
		c, w := binary.Uvarint(b)
		if w <= 0 {
			return errBadBlob
		}
		b = b[w:]
		fn(j, c)
	}
	return nil
}

// groupBuild is a group of a write: its catalog entry, table and
// document.
type groupBuild struct {
	meta  *groupMeta
	table []byte
	doc   *document.Document
}

// groups cuts numbered blocks (consecutive) of d's write into groups of
// about the same size and makes their tables and documents.
func groups(d *termDict, blocks []*sealed) []*groupBuild {
	var out []*groupBuild
	ng := (len(blocks) + groupCap - 1) / groupCap
	for i, k := 0, 0; k < ng; k++ {
		size := (len(blocks) - i) / (ng - k)
		gb := blocks[i : i+size]
		i += size
		g := &groupMeta{first: gb[0].meta.seq, n: len(gb)}
		ts := make([]*blockTerms, len(gb))
		for j, b := range gb {
			ts[j] = b.terms
			b.terms = nil
			b.meta.grp = g
		}
		out = append(out, newGroupBuild(g, d, ts))
	}
	return out
}

func newGroupBuild(g *groupMeta, d *termDict, ts []*blockTerms) *groupBuild {
	table, fields := groupTerms(d, ts)
	doc := document.NewDocument(seqID(g.first))
	for _, f := range fields {
		doc.AddField(f)
	}
	return &groupBuild{meta: g, table: table, doc: doc}
}

// number gives a block its number in the shard, and with it its header
// and document.
func (s *shard) number(b *sealed) {
	s.nextSeq++
	m := b.meta
	m.seq = s.nextSeq
	keys, _ := s.x.tab.snapshot()
	b.header = encodeHeader(make([]byte, 0, 128+16*m.n), m, keys[m.key], b.levels, b.sources, b.replaces)
}

// frames packs blocks into frames: runs of consecutive blocks of one file
// (up to frameBlocks, or maxFrameRaw bytes), their payloads compressed
// together, which compresses several times better than alone. It sets
// each block's place in the store as if the frames were appended at off.
func (s *shard) frames(blocks []*sealed, off int64) []byte {
	size := 0
	for _, b := range blocks {
		size += len(b.raw)/4 + len(b.header) + 32
	}
	out := make([]byte, 0, size)
	var payload []byte
	for i := 0; i < len(blocks); {
		j := i + 1
		raw := len(blocks[i].raw)
		for j < len(blocks) && j-i < frameBlocks && blocks[j].meta.key == blocks[i].meta.key && raw+len(blocks[j].raw) <= maxFrameRaw {
			raw += len(blocks[j].raw)
			j++
		}
		group := blocks[i:j]
		var hdr []byte
		payload = payload[:0]
		hdr = binary.AppendUvarint(hdr, uint64(len(group)))
		for _, b := range group {
			hdr = binary.AppendUvarint(hdr, uint64(len(b.header)))
			hdr = append(hdr, b.header...)
			payload = append(payload, b.raw...)
		}
		comp := s.x.codec.enc.EncodeAll(payload, make([]byte, 0, len(payload)/3))
		crc := crc32c(comp)
		frameOff := off + int64(len(out))
		hdr = binary.LittleEndian.AppendUint32(hdr, crc)
		hdr = binary.AppendUvarint(hdr, uint64(len(payload)))
		payOff := frameOff + frameHead + int64(len(hdr))
		var rawOff int32
		for _, b := range group {
			m := b.meta
			m.frameOff, m.payOff, m.payLen, m.payCRC, m.frameRaw = frameOff, payOff, int32(len(comp)), crc, int32(len(payload))
			m.rawOff = rawOff
			rawOff += m.rawLen
		}
		out = appendFrame(out, hdr, comp)
		for _, b := range group {
			b.meta.frameLen = int32(int64(len(out)) - (frameOff - off))
		}
		i = j
	}
	return out
}

// A frame holds up to frameBlocks blocks (4 blocks of a file: ~250
// records) and maxFrameRaw bytes: reading one record decompresses its
// frame.
const (
	frameBlocks = 4
	maxFrameRaw = 256 << 10
)

// seqID is the Bleve document ID of the group whose first block is seq: fixed width, so IDs sort
// as numbers.
func seqID(seq uint64) string {
	var b [16]byte
	const hexd = "0123456789abcdef"
	for i := 15; i >= 0; i-- {
		b[i] = hexd[seq&15]
		seq >>= 4
	}
	return string(b[:])
}

func parseSeqID(id []byte) uint64 {
	if len(id) != 16 {
		return 0
	}
	v, err := strconv.ParseUint(string(id), 16, 64)
	if err != nil {
		return 0
	}
	return v
}

// blockField is a field of a group document: its terms with their table
// entries' offsets plus one as frequencies, indexed only.
type blockField struct {
	name  string
	freqs bindex.TokenFrequencies
}

func (f *blockField) Name() string                                      { return f.name }
func (f *blockField) ArrayPositions() []uint64                          { return nil }
func (f *blockField) Options() bindex.FieldIndexingOptions              { return bindex.IndexField }
func (f *blockField) Value() []byte                                     { return nil }
func (f *blockField) EncodedFieldType() byte                            { return 't' }
func (f *blockField) Analyze()                                          {}
func (f *blockField) AnalyzedLength() int                               { return 1 } // zap stores it with every posting (as its norm) and takes 0 for no posting at all
func (f *blockField) AnalyzedTokenFrequencies() bindex.TokenFrequencies { return f.freqs }
func (f *blockField) NumPlainTextBytes() uint64                         { return 0 }
func (f *blockField) Size() int                                         { return 64 + 48*len(f.freqs) }

func (s *shard) run() {
	defer close(s.done)
	open := map[int32]*openBlock{}
	var ready []*sealed
	readyRecs := 0
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	timerOn := false
	var lastErr error

	sealAll := func() {
		// In key order: a file's blocks are then consecutive, and so
		// is a frame (see frames).
		for _, k := range slices.Sorted(maps.Keys(open)) {
			b := open[k]
			if sb, err := s.seal(b); err == nil {
				ready = append(ready, sb)
				readyRecs += len(b.hits)
			} else {
				lastErr = err
			}
			delete(open, k)
		}
	}
	execute := func(closing bool) {
		if timerOn {
			timer.Stop()
			timerOn = false
		}
		if len(ready) == 0 {
			return
		}
		if err := s.write(ready, closing); err != nil {
			lastErr = err
		}
		ready, readyRecs = ready[:0], 0
	}
	for {
		select {
		case op, ok := <-s.in:
			if !ok {
				sealAll()
				execute(true)
				return
			}
			if op.flushed != nil {
				sealAll()
				execute(false)
				op.flushed <- lastErr
				lastErr = nil
				continue
			}
			b := open[op.key]
			if b == nil {
				b = &openBlock{key: op.key}
				open[op.key] = b
			}
			b.add(&op.hit)
			if op.replaces != nil {
				b.replaces = append(b.replaces, *op.replaces)
			}
			if b.full() {
				sb, err := s.seal(b)
				if err != nil {
					lastErr = err
				} else {
					ready = append(ready, sb)
					readyRecs += len(b.hits)
				}
				delete(open, op.key)
			}
			if readyRecs >= s.x.opts.BatchSize {
				execute(false)
			} else if !timerOn {
				timer.Reset(s.x.opts.FlushInterval)
				timerOn = true
			}
		case <-timer.C:
			timerOn = false
			sealAll()
			execute(false)
		}
	}
}

// write stores the blocks and indexes them, retrying while the disk is
// full or writes fail, then publishes them to searches. closing gives up
// after Options.CloseRetry instead of retrying for ever.
func (s *shard) write(blocks []*sealed, closing bool) error {
	x := s.x
	// A file's blocks first, in order: they share frames.
	slices.SortStableFunc(blocks, func(a, b *sealed) int { return cmp.Compare(a.meta.key, b.meta.key) })
	for _, b := range blocks {
		s.number(b)
	}
	gs := groups(&s.scratch.dict, blocks)
	s.scratch.dict.reset()
	frames := s.frames(blocks, s.store.size)
	for _, g := range gs {
		frames = appendTable(frames, g.meta, g.table)
		g.meta.end = s.store.size + int64(len(frames))
		g.meta.tabOff, g.meta.tabLen, g.meta.tabCRC = g.meta.end-int64(len(g.table)), int32(len(g.table)), crc32c(g.table)
	}
	stored := false
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err := x.checkSpace(int64(len(frames)))
		if err == nil && !stored {
			if err = s.store.append(frames, x.opts.Safe); err == nil {
				stored = true
			}
		}
		if err == nil {
			err = s.index(gs, blocks[len(blocks)-1].meta.seq)
		}
		if err == nil {
			if attempt > 0 {
				x.resumed(s.n)
			}
			break
		}
		x.errs.Add(1)
		x.stalled(s.n, err)
		x.log.Debug("index write failed; retrying", "shard", s.n, "attempt", attempt, "err", err)
		if stored && !errors.Is(err, ErrDiskFull) {
			// Bleve failed part-way (scorch leaves a batch whose persist
			// failed half-closed, and the next use of it panics): open it
			// again from disk, and index again what it lost.
			if rerr := s.recover(); rerr != nil {
				x.log.Warn("index: reopening a shard after a failed batch", "shard", s.n, "err", rerr)
			}
		}
		if closing && time.Since(start) > x.opts.CloseRetry {
			return fmt.Errorf("index shard %d: %d blocks not written: %w", s.n, len(blocks), err)
		}
		time.Sleep(min(100*time.Millisecond<<min(attempt, 6), 5*time.Second))
	}
	s.mu.Lock()
	n := 0
	for _, b := range blocks {
		s.blocks = append(s.blocks, b.meta)
		n += b.meta.n
	}
	s.mu.Unlock()
	keys, _ := x.tab.snapshot()
	for _, b := range blocks {
		x.noteBlock(s.n, b.meta, keys[b.meta.key])
	}
	for _, b := range blocks {
		for _, r := range b.replaces {
			x.markDead(r)
		}
	}
	x.indexed.Add(uint64(n))
	x.batches.Add(1)
	x.published(blocks)
	return nil
}

// index runs the Bleve batch of groups, whose last block is last.
func (s *shard) index(gs []*groupBuild, last uint64) error {
	batch := s.bl.NewBatch()
	for _, g := range gs {
		if err := batch.IndexAdvanced(g.doc); err != nil {
			return err
		}
	}
	var upto [8]byte
	binary.BigEndian.PutUint64(upto[:], last)
	batch.SetInternal(uptoKey, upto[:])
	if err := s.bl.Batch(batch); err != nil {
		return fmt.Errorf("index shard %d: batch of %d groups: %w", s.n, len(gs), err)
	}
	return nil
}

// recover closes and opens the shard's Bleve index again, then indexes
// again, from the chunk store, the published blocks it lost (unsafe
// batches not persisted yet).
func (s *shard) recover() error {
	s.blMu.Lock()
	defer s.blMu.Unlock()
	if s.bl != nil {
		_ = s.bl.Close()
		s.bl = nil
	}
	s.segMu.Lock()
	s.segSeqs = nil
	s.segMu.Unlock()
	bl, err := bleve.OpenUsing(s.path, s.blCfg)
	if err != nil {
		return fmt.Errorf("index shard %d: reopen: %w", s.n, err)
	}
	s.bl = bl
	s.mu.RLock()
	blocks := s.blocks
	s.mu.RUnlock()
	if upto := s.upto(); upto < uint64(len(blocks)) {
		return s.reindex(blocks[upto:])
	}
	return nil
}

// upto is the last block Bleve has (see uptoKey).
func (s *shard) upto() uint64 {
	if v, err := s.bl.GetInternal(uptoKey); err == nil && len(v) == 8 {
		return binary.BigEndian.Uint64(v)
	}
	return 0
}

// reindex makes the Bleve documents of published blocks again from their
// records in the chunk store, group by group (blocks starts a group): the
// records make the table stored with them again (checked), whose offsets
// the documents' frequencies are.
func (s *shard) reindex(blocks []*blockMeta) error {
	for len(blocks) > 0 {
		batch := s.bl.NewBatch()
		k := 0
		for ng := 0; k < len(blocks) && ng < 64; ng++ {
			g := blocks[k].grp
			if g == nil || g.first != blocks[k].seq || k+g.n > len(blocks) {
				return fmt.Errorf("index shard %d: index again from block %d: not the start of a whole group", s.n, blocks[k].seq)
			}
			var d termDict
			ts := make([]*blockTerms, g.n)
			for j, m := range blocks[k : k+g.n] {
				hits, err := s.records(m)
				if err != nil {
					return err
				}
				terms := newBlockTerms(&d, nil)
				terms.n = m.n
				for i := range hits {
					terms.record(&hits[i], 1<<i)
				}
				ts[j] = terms
			}
			gb := newGroupBuild(g, &d, ts)
			if crc32c(gb.table) != g.tabCRC || len(gb.table) != int(g.tabLen) {
				return fmt.Errorf("index shard %d: index again block %d: its records make another term table than the one stored", s.n, g.first)
			}
			if err := batch.IndexAdvanced(gb.doc); err != nil {
				return err
			}
			k += g.n
		}
		var upto [8]byte
		binary.BigEndian.PutUint64(upto[:], blocks[k-1].seq)
		batch.SetInternal(uptoKey, upto[:])
		if err := s.bl.Batch(batch); err != nil {
			return fmt.Errorf("index shard %d: index again %d blocks: %w", s.n, k, err)
		}
		blocks = blocks[k:]
	}
	return nil
}

// dropBeyond deletes the group documents Bleve has past block last (a
// power loss after Bleve synced, before the page cache reached the
// store): the blocks numbered again after last are grouped otherwise, and
// a document left over would give them another group's terms.
func (s *shard) dropBeyond(last uint64) error {
	ai, err := s.bl.Advanced()
	if err != nil {
		return err
	}
	r, err := ai.Reader()
	if err != nil {
		return err
	}
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		r.Close()
		return fmt.Errorf("not a scorch index (%T)", r)
	}
	batch := s.bl.NewBatch()
	for _, ss := range snap.Segments() {
		seg := ss.Segment()
		for i := range seg.Count() {
			if ss.Deleted() != nil && ss.Deleted().Contains(uint32(i)) {
				continue
			}
			id, err := seg.DocID(i)
			if err != nil {
				r.Close()
				return err
			}
			if seq := parseSeqID(id); seq > last {
				batch.Delete(string(id))
			}
		}
	}
	r.Close()
	if batch.Size() == 0 {
		return nil
	}
	var upto [8]byte
	binary.BigEndian.PutUint64(upto[:], last)
	batch.SetInternal(uptoKey, upto[:])
	return s.bl.Batch(batch)
}

// persist waits until everything indexed is on disk. With unsafe_batch,
// scorch's Close does not wait for the persister, so without this the last
// batches before Close would be lost. An empty batch carrying a persisted
// callback is the barrier.
func (s *shard) persist() {
	if s.x.opts.Safe {
		return
	}
	done := make(chan error, 1)
	b := s.bl.NewBatch()
	b.SetPersistedCallback(func(err error) { done <- err })
	if err := s.bl.Batch(b); err != nil {
		s.x.log.Error("index persist barrier", "shard", s.n, "err", err)
		return
	}
	select {
	case err := <-done:
		if err != nil {
			s.x.log.Error("index persist", "shard", s.n, "err", err)
		}
	case <-time.After(10 * time.Minute):
		s.x.log.Error("index persist: timed out", "shard", s.n)
	}
}

// view is the shard as a search sees it now; close it soon (it holds
// off recover).
func (s *shard) view() (*view, error) {
	s.blMu.RLock()
	s.mu.RLock()
	blocks := s.blocks
	s.mu.RUnlock()
	keys, vals := s.x.tab.snapshot()
	v := &view{sh: s, blocks: blocks, keys: keys, vals: vals, unlock: s.blMu.RUnlock}
	fail := func(err error) (*view, error) {
		s.blMu.RUnlock()
		return nil, fmt.Errorf("index shard %d: %w", s.n, err)
	}
	if s.bl == nil {
		return fail(errors.New("not open (being recovered)"))
	}
	ai, err := s.bl.Advanced()
	if err != nil {
		return fail(err)
	}
	r, err := ai.Reader()
	if err != nil {
		return fail(err)
	}
	snap, ok := r.(*scorch.IndexSnapshot)
	if !ok {
		r.Close()
		return fail(fmt.Errorf("not a scorch index (%T)", r))
	}
	v.snap = snap
	live := map[segment.Segment]bool{}
	for _, ss := range snap.Segments() {
		seg := ss.Segment()
		seqs, err := s.segmentSeqs(seg)
		if err != nil {
			v.close()
			return nil, err
		}
		live[seg] = true
		v.segs = append(v.segs, segView{seg: seg, del: ss.Deleted(), seqs: seqs})
	}
	s.segMu.Lock()
	if len(s.segSeqs) > 2*len(live)+16 {
		for seg := range s.segSeqs {
			if !live[seg] {
				delete(s.segSeqs, seg)
			}
		}
	}
	s.segMu.Unlock()
	return v, nil
}

// segmentSeqs returns the block of each document of seg, read once per
// segment (segments never change).
func (s *shard) segmentSeqs(seg segment.Segment) ([]uint64, error) {
	s.segMu.Lock()
	seqs, ok := s.segSeqs[seg]
	s.segMu.Unlock()
	if ok {
		return seqs, nil
	}
	n := seg.Count()
	seqs = make([]uint64, n)
	for i := range n {
		id, err := seg.DocID(i)
		if err != nil {
			return nil, fmt.Errorf("index shard %d: document %d: %w", s.n, i, err)
		}
		seqs[i] = parseSeqID(id)
	}
	s.segMu.Lock()
	if s.segSeqs == nil {
		s.segSeqs = map[segment.Segment][]uint64{}
	}
	s.segSeqs[seg] = seqs
	s.segMu.Unlock()
	return seqs, nil
}

// records returns the records of block m, from the cache or the store:
// reading a frame decodes (and caches) all its blocks.
func (s *shard) records(m *blockMeta) ([]Hit, error) {
	k := cacheKey{s.n, m.seq}
	if hits, ok := s.x.cache.get(k); ok {
		return hits, nil
	}
	raw, err := s.store.readFrame(s.x.codec, m)
	if err != nil {
		return nil, err
	}
	keys, _ := s.x.tab.snapshot()
	s.mu.RLock()
	blocks := s.blocks
	s.mu.RUnlock()
	var mine []Hit
	// The frame's blocks are consecutive: around m.
	at := int(m.seq) - 1
	if at >= len(blocks) || blocks[at] != m {
		return nil, fmt.Errorf("chunk store %s: block %d: not published", s.store.path, m.seq)
	}
	lo, hi := at, at+1
	for lo > 0 && blocks[lo-1].frameOff == m.frameOff {
		lo--
	}
	for hi < len(blocks) && blocks[hi].frameOff == m.frameOff {
		hi++
	}
	for _, b := range blocks[lo:hi] {
		if b.rawOff < 0 || int(b.rawOff+b.rawLen) > len(raw) {
			return nil, fmt.Errorf("chunk store %s: block %d: beyond its frame", s.store.path, b.seq)
		}
		hits, err := decodePayload(raw[b.rawOff:b.rawOff+b.rawLen], b, keys[b.key])
		if err != nil {
			return nil, fmt.Errorf("chunk store %s: block %d: %w", s.store.path, b.seq, err)
		}
		s.x.cache.put(cacheKey{s.n, b.seq}, hits)
		if b == m {
			mine = hits
		}
	}
	if mine == nil {
		return nil, fmt.Errorf("chunk store %s: block %d: not in its frame", s.store.path, m.seq)
	}
	return mine, nil
}

// findIn finds a live record of block m with ID id (hash h32).
func (s *shard) findIn(m *blockMeta, h32 uint32, id string) (recordRef, Hit, bool, error) {
	var mask uint64
	for r, v := range m.ids {
		if v == h32 {
			mask |= 1 << r
		}
	}
	var found Hit
	var ref recordRef
	ok := false
	err := s.forRecords(m, mask, func(slot int, h *Hit) {
		if !ok && h.ID == id {
			found, ok = *h, true
			ref = recordRef{shard: s.n, seq: m.seq, slot: slot}
		}
	})
	return ref, found, ok, err
}

// forRecords calls fn with the live records of mask in block m.
func (s *shard) forRecords(m *blockMeta, mask uint64, fn func(slot int, h *Hit)) error {
	mask &= m.live()
	if mask == 0 {
		return nil
	}
	hits, err := s.records(m)
	if err != nil {
		return err
	}
	for mask != 0 {
		r := bits.TrailingZeros64(mask)
		mask &= mask - 1
		if r < len(hits) {
			fn(r, &hits[r])
		}
	}
	return nil
}

var errClosed = errors.New("index: closed")
