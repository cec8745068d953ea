package index

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// The chunk store holds the records themselves, once, compressed: per
// shard one append-only file of frames. A frame is
//
//	magic "FLB\x01" | header length u32 | payload length u32 | CRC-32C of the header u32 | header | payload
//
// (little-endian). The header is the number of blocks, each block's
// catalog entry (uvarint length + blockMeta: uncompressed, what Open reads
// back into memory), then the CRC-32C of the payload (u32) and its length
// decompressed (uvarint). The payload is the blocks' stored records
// (appendPayload), one after the other, zstd-compressed together: a few
// consecutive blocks of one file (see shard.frames). Bleve never sees the
// text.
//
// Since version 5 a Bleve document is a group of up to groupCap
// consecutive blocks of one write (see groupTerms): its terms are the
// blocks' terms, each term's frequency the place in the group's term
// table of its entry, which gives the blocks that hold the term and in
// each the mask of its records. The table follows its blocks in the store
// as a table frame:
//
//	magic "FLT\x01" | header length u32 | payload length u32 | CRC-32C of the header u32 | header | payload
//
// whose header is the group's first block (uvarint), its number of
// blocks (uvarint) and the CRC-32C of the payload (u32), and whose payload
// is the table, uncompressed (searches read it whole, see Index.tables). A
// write's frames are its blocks' frames then its groups' tables: blocks
// whose table is not there (a torn write) are cut off with them.
const (
	storeFile   = "blocks.dat"
	frameHead   = 16
	maxFrameHdr = 1 << 20
	maxPayload  = 256 << 20
)

var (
	frameMagic = [4]byte{'F', 'L', 'B', 1}
	tableMagic = [4]byte{'F', 'L', 'T', 1}
)

// groupMeta is a group of blocks in the catalog: its Bleve document is
// its first block's number, and its term table is in the store.
type groupMeta struct {
	first  uint64 // the seq of its first block
	n      int    // blocks
	tabOff int64  // the table's offset and length in the store file
	tabLen int32
	tabCRC uint32
	end    int64 // the end of its table frame
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// blockCap is the most records a block holds: a term's frequency in a
// block document is the mask of its records (see maskCode), which zap
// encodes shifted left by one.
const blockCap = 62

// maskCode is the frequency a term of a block of n records has when the
// records of mask hold it: small codes for the usual masks (zap writes
// frequencies as varints; most terms are in one record, or in a run of
// records, which seal sorts by template), the mask itself past them.
//
//	1                 every record
//	2 + r             record r alone (r < 62)
//	64 + lo*62 + hi   records lo to hi (lo < hi)
//	4096 + mask       any other mask
func maskCode(mask uint64, n int) int {
	switch {
	case mask == maskN(n):
		return 1
	case mask&(mask-1) == 0:
		return 2 + bits.TrailingZeros64(mask)
	}
	lo, hi := bits.TrailingZeros64(mask), 63-bits.LeadingZeros64(mask)
	if mask == maskN(hi+1)&^maskN(lo) {
		return 64 + lo*blockCap + hi
	}
	return int(4096 + mask)
}

// codeMask is the mask of a code in a block of n records.
func codeMask(code uint64, n int) uint64 {
	switch {
	case code == 1:
		return maskN(n)
	case code < 64:
		return 1 << (code - 2)
	case code < 4096:
		lo, hi := (code-64)/blockCap, (code-64)%blockCap
		return maskN(int(hi)+1) &^ maskN(int(lo))
	}
	return (code - 4096) & maskN(n)
}

// blockMeta is a block in the catalog: what searches read without
// decompressing it.
type blockMeta struct {
	seq   uint64 // the block's number in its shard (its Bleve document ID)
	key   int32  // the file it belongs to, in Index.keys
	n     int    // records
	timed uint64 // mask of the records with a time
	// minT, maxT bound the times of the timed records.
	minT, maxT int64
	times      []int64 // per record, Unix ns (0 when untimed)
	lines      []int32
	ids        []uint32 // per record, idHash of its ID: Get and the duplicate check
	// minOff, maxOff bound the records' file offsets.
	minOff, maxOff int64
	levels         []valueMask // records by level (Index.vals)
	sources        []valueMask
	// Where the records are: the frame (its offset and length in the
	// store file), its payload (offset, length, CRC-32C, decompressed
	// length), and the block's bytes within the decompressed payload.
	frameOff         int64
	frameLen         int32
	payOff           int64
	payLen, frameRaw int32
	payCRC           uint32
	rawOff, rawLen   int32
	grp              *groupMeta // the group of blocks its Bleve document is
	// dead is the mask of records replaced by a later version (atomic:
	// set by the writer that indexed the new one, read by searches).
	dead uint64
}

// live is the mask of the block's records not replaced.
func (b *blockMeta) live() uint64 { return b.all() &^ atomic.LoadUint64(&b.dead) }

// recordRef names a record: shard, block and slot.
type recordRef struct {
	shard int
	seq   uint64
	slot  int
}

type valueMask struct {
	v    uint16
	mask uint64
}

// all is the mask of every record of b.
func (b *blockMeta) all() uint64 { return maskN(b.n) }

func maskN(n int) uint64 {
	if n >= 64 {
		return ^uint64(0)
	}
	return uint64(1)<<n - 1
}

// encodeHeader renders the header of a frame.
//
// replaces are the records this block's records are new versions of: a
// reader marks them dead, whichever shard holds them, atomically with this
// block being there.
func encodeHeader(b []byte, m *blockMeta, key streamKey, levels, sources []string, replaces []recordRef) []byte {
	b = binary.AppendUvarint(b, m.seq)
	for _, s := range [...]string{key.Cluster, key.Node, key.Container, key.File, key.FileID} {
		b = appendString(b, s)
	}
	b = binary.AppendVarint(b, int64(key.Partition))
	b = binary.AppendUvarint(b, uint64(m.n))
	b = binary.AppendUvarint(b, m.timed)
	var prevT int64
	for i := 0; i < m.n; i++ {
		if m.timed&(1<<i) != 0 {
			b = binary.AppendVarint(b, m.times[i]-prevT)
			prevT = m.times[i]
		}
	}
	var prevL int32
	for _, l := range m.lines {
		b = binary.AppendVarint(b, int64(l-prevL))
		prevL = l
	}
	for _, id := range m.ids {
		b = binary.LittleEndian.AppendUint32(b, id)
	}
	b = binary.AppendVarint(b, m.minOff)
	b = binary.AppendVarint(b, m.maxOff-m.minOff)
	for _, vs := range [...]struct {
		vm    []valueMask
		names []string
	}{{m.levels, levels}, {m.sources, sources}} {
		b = binary.AppendUvarint(b, uint64(len(vs.vm)))
		for i, v := range vs.vm {
			b = appendString(b, vs.names[i])
			b = binary.AppendUvarint(b, v.mask)
		}
	}
	b = binary.AppendUvarint(b, uint64(m.rawLen))
	b = binary.AppendUvarint(b, uint64(len(replaces)))
	for _, r := range replaces {
		b = binary.AppendUvarint(b, uint64(r.shard))
		b = binary.AppendUvarint(b, r.seq)
		b = binary.AppendUvarint(b, uint64(r.slot))
	}
	return b
}

// decodedHeader is a header read back: the meta and what it names by value.
type decodedHeader struct {
	meta            blockMeta
	key             streamKey
	levels, sources []string
	replaces        []recordRef
}

func decodeHeader(b []byte) (decodedHeader, error) {
	var d decodedHeader
	r := blobReader{b: b}
	uv := func() uint64 {
		v, w := binary.Uvarint(r.b)
		if w <= 0 {
			r.err, r.b = errBadBlob, nil
			return 0
		}
		r.b = r.b[w:]
		return v
	}
	m := &d.meta
	m.seq = uv()
	d.key.Cluster, d.key.Node, d.key.Container, d.key.File, d.key.FileID = r.str(), r.str(), r.str(), r.str(), r.str()
	d.key.Partition = int(r.int())
	m.n = int(uv())
	if r.err != nil || m.n <= 0 || m.n > blockCap {
		return d, errBadBlob
	}
	m.timed = uv()
	m.times = make([]int64, m.n)
	m.lines = make([]int32, m.n)
	var t int64
	first := true
	for i := 0; i < m.n; i++ {
		if m.timed&(1<<i) != 0 {
			t += r.int()
			m.times[i] = t
			if first || t < m.minT {
				m.minT = t
			}
			if first || t > m.maxT {
				m.maxT = t
			}
			first = false
		}
	}
	var l int64
	for i := range m.lines {
		l += r.int()
		m.lines[i] = int32(l)
	}
	if r.err != nil || len(r.b) < 4*m.n {
		return d, errBadBlob
	}
	m.ids = make([]uint32, m.n)
	for i := range m.ids {
		m.ids[i] = binary.LittleEndian.Uint32(r.b[4*i:])
	}
	r.b = r.b[4*m.n:]
	m.minOff = r.int()
	m.maxOff = m.minOff + r.int()
	for k := 0; k < 2; k++ {
		n := uv()
		if n > 64 {
			return d, errBadBlob
		}
		for range n {
			name := r.str()
			mask := uv()
			if k == 0 {
				d.levels = append(d.levels, name)
				m.levels = append(m.levels, valueMask{mask: mask})
			} else {
				d.sources = append(d.sources, name)
				m.sources = append(m.sources, valueMask{mask: mask})
			}
		}
	}
	m.rawLen = int32(uv())
	nr := uv()
	if nr > blockCap {
		return d, errBadBlob
	}
	for range nr {
		d.replaces = append(d.replaces, recordRef{shard: int(uv()), seq: uv(), slot: int(uv())})
	}
	if r.err != nil {
		return d, r.err
	}
	return d, nil
}

// appendFrame appends the frame of a block to b.
func appendFrame(b, hdr, payload []byte) []byte { return appendFrameOf(b, frameMagic, hdr, payload) }

func appendFrameOf(b []byte, magic [4]byte, hdr, payload []byte) []byte {
	b = append(b, magic[:]...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(hdr)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(hdr, castagnoli))
	b = append(b, hdr...)
	return append(b, payload...)
}

// blockStore is a shard's store file.
type blockStore struct {
	f    *os.File
	path string
	size int64 // end of the last whole frame
}

// scanStore reads the headers of every whole frame of the store at path,
// calling fn with each block's. It returns the end of the last good frame:
// a torn or corrupt tail (a crash while appending) ends the scan there.
//
// grouped (version 5) reads the table frames too: a block is only given
// to fn with its group (blockMeta.grp) once the write it belongs to is
// whole (every block it stored has its table), and the end returned is
// that of a whole write. Unless grouped (a version 4 store, read to be
// migrated), table frames are not expected and blocks have no group.
func scanStore(path string, grouped bool, fn func(d decodedHeader) error) (int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("chunk store: %w", err)
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<20)
	var off, good int64
	var head [frameHead]byte
	var hdr []byte
	var pending []decodedHeader // of the write being read
	claimed := 0                // of pending, those whose table was read
	for {
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return good, nil // the end, or a torn frame head
		}
		hl, pl := binary.LittleEndian.Uint32(head[4:]), binary.LittleEndian.Uint32(head[8:])
		magic := [4]byte(head[:4])
		if magic != frameMagic && (!grouped || magic != tableMagic) || hl > maxFrameHdr || pl > maxPayload {
			return good, nil
		}
		hdr = append(hdr[:0], make([]byte, hl)...)
		if _, err := io.ReadFull(br, hdr); err != nil || crc32.Checksum(hdr, castagnoli) != binary.LittleEndian.Uint32(head[12:]) {
			return good, nil
		}
		if n, err := br.Discard(int(pl)); err != nil || n != int(pl) {
			return good, nil
		}
		n := int32(frameHead + int(hl) + int(pl))
		if magic == tableMagic {
			g, err := decodeTableHeader(hdr)
			if err != nil {
				return good, nil
			}
			g.tabOff, g.tabLen, g.end = off+frameHead+int64(hl), int32(pl), off+int64(n)
			rest := pending[claimed:]
			if g.n > len(rest) || rest[0].meta.seq != g.first {
				return good, nil
			}
			for i := range g.n {
				rest[i].meta.grp = g
			}
			claimed += g.n
			off += int64(n)
			if claimed == len(pending) {
				for _, d := range pending {
					if err := fn(d); err != nil {
						return good, err
					}
				}
				pending, claimed = pending[:0], 0
				good = off
			}
			continue
		}
		blocks, crc, raw, err := decodeFrameHeader(hdr)
		if err != nil {
			return good, nil
		}
		var rawOff int32
		for i := range blocks {
			m := &blocks[i].meta
			m.frameOff, m.frameLen = off, n
			m.payOff, m.payLen, m.payCRC, m.frameRaw = off+frameHead+int64(hl), int32(pl), crc, raw
			m.rawOff = rawOff
			rawOff += m.rawLen
		}
		if rawOff != raw {
			return good, nil
		}
		off += int64(n)
		if grouped {
			pending = append(pending, blocks...)
			continue
		}
		for _, d := range blocks {
			if err := fn(d); err != nil {
				return good, err
			}
		}
		good = off
	}
}

// appendTable appends the table frame of group g to b.
func appendTable(b []byte, g *groupMeta, table []byte) []byte {
	var hdr []byte
	hdr = binary.AppendUvarint(hdr, g.first)
	hdr = binary.AppendUvarint(hdr, uint64(g.n))
	hdr = binary.LittleEndian.AppendUint32(hdr, crc32c(table))
	return appendFrameOf(b, tableMagic, hdr, table)
}

func decodeTableHeader(b []byte) (*groupMeta, error) {
	first, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, errBadBlob
	}
	n, w2 := binary.Uvarint(b[w:])
	if w2 <= 0 || n == 0 || n > groupCap || len(b) != w+w2+4 {
		return nil, errBadBlob
	}
	return &groupMeta{first: first, n: int(n), tabCRC: binary.LittleEndian.Uint32(b[w+w2:])}, nil
}

// readTable reads the term table of group g.
func (s *blockStore) readTable(g *groupMeta) ([]byte, error) {
	if s.f == nil {
		return nil, fmt.Errorf("chunk store %s: missing", s.path)
	}
	b := make([]byte, g.tabLen)
	if _, err := s.f.ReadAt(b, g.tabOff); err != nil {
		return nil, fmt.Errorf("chunk store %s: table of block %d: %w", s.path, g.first, err)
	}
	if crc32c(b) != g.tabCRC {
		return nil, fmt.Errorf("chunk store %s: table of block %d: bad checksum", s.path, g.first)
	}
	return b, nil
}

// decodeFrameHeader reads a frame's header: its blocks' headers, the
// payload's CRC and decompressed length.
func decodeFrameHeader(b []byte) ([]decodedHeader, uint32, int32, error) {
	k, w := binary.Uvarint(b)
	if w <= 0 || k == 0 || k > 1024 {
		return nil, 0, 0, errBadBlob
	}
	b = b[w:]
	out := make([]decodedHeader, 0, k)
	for range k {
		l, w := binary.Uvarint(b)
		if w <= 0 || uint64(len(b)-w) < l {
			return nil, 0, 0, errBadBlob
		}
		d, err := decodeHeader(b[w : w+int(l)])
		if err != nil {
			return nil, 0, 0, err
		}
		out = append(out, d)
		b = b[w+int(l):]
	}
	if len(b) < 4 {
		return nil, 0, 0, errBadBlob
	}
	crc := binary.LittleEndian.Uint32(b)
	raw, w := binary.Uvarint(b[4:])
	if w <= 0 || raw > maxPayload {
		return nil, 0, 0, errBadBlob
	}
	return out, crc, int32(raw), nil
}

func openStore(path string, size int64, readOnly bool) (*blockStore, error) {
	flag := os.O_RDWR | os.O_CREATE
	if readOnly {
		flag = os.O_RDONLY
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if readOnly && errors.Is(err, os.ErrNotExist) {
		return &blockStore{path: path}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("chunk store: %w", err)
	}
	s := &blockStore{f: f, path: path, size: size}
	if !readOnly {
		// Drop a torn tail (or the blocks Bleve never got: see openShard).
		if fi, err := f.Stat(); err == nil && fi.Size() != size {
			if err := f.Truncate(size); err != nil {
				f.Close()
				return nil, fmt.Errorf("chunk store: truncate to %d: %w", size, err)
			}
		}
	}
	return s, nil
}

// append writes frames at the end; on an error the file is cut back to
// where it was, so that a retry writes them again whole.
func (s *blockStore) append(frames []byte, sync bool) error {
	if _, err := s.f.WriteAt(frames, s.size); err != nil {
		_ = s.f.Truncate(s.size)
		return fmt.Errorf("chunk store: write %d bytes: %w", len(frames), err)
	}
	if sync {
		if err := s.f.Sync(); err != nil {
			_ = s.f.Truncate(s.size)
			return fmt.Errorf("chunk store: sync: %w", err)
		}
	}
	s.size += int64(len(frames))
	return nil
}

func (s *blockStore) close(sync bool) error {
	if s.f == nil {
		return nil
	}
	var err error
	if sync {
		err = s.f.Sync()
	}
	return errors.Join(err, s.f.Close())
}

// codec compresses payloads; safe for concurrent use.
type codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

func newCodec() (*codec, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithLowerEncoderMem(true), zstd.WithEncoderCRC(false))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxPayload),
		zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	return &codec{enc: enc, dec: dec}, nil
}

// readFrame reads and decompresses the payload of the frame of block m.
func (s *blockStore) readFrame(c *codec, m *blockMeta) ([]byte, error) {
	if s.f == nil {
		return nil, fmt.Errorf("chunk store %s: missing", s.path)
	}
	comp := make([]byte, m.payLen)
	if _, err := s.f.ReadAt(comp, m.payOff); err != nil {
		return nil, fmt.Errorf("chunk store %s: block %d: %w", s.path, m.seq, err)
	}
	if crc32.Checksum(comp, castagnoli) != m.payCRC {
		return nil, fmt.Errorf("chunk store %s: block %d: bad checksum", s.path, m.seq)
	}
	out, err := c.dec.DecodeAll(comp, make([]byte, 0, m.frameRaw))
	if err != nil {
		return nil, fmt.Errorf("chunk store %s: block %d: %w", s.path, m.seq, err)
	}
	if len(out) != int(m.frameRaw) {
		return nil, fmt.Errorf("chunk store %s: block %d: %d bytes, want %d", s.path, m.seq, len(out), m.frameRaw)
	}
	return out, nil
}

// lruCache keeps values up to max of cost: the blocks' records (a page, the
// checks of a query and the context of a hit read the same few blocks;
// each costs 1) and the groups' term tables (a word in most groups reads
// every table once; each costs its bytes).
type lruCache[V any] struct {
	mu    sync.Mutex
	max   int64
	cost  func(V) int64
	size  int64
	tick  uint64
	items map[cacheKey]*cacheItem[V]
}

type cacheKey struct {
	shard int
	seq   uint64
}

type cacheItem[V any] struct {
	v    V
	used uint64
}

func newLRUCache[V any](max int64, cost func(V) int64) *lruCache[V] {
	return &lruCache[V]{max: max, cost: cost, items: map[cacheKey]*cacheItem[V]{}}
}

func (c *lruCache[V]) get(k cacheKey) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	it := c.items[k]
	if it == nil {
		var zero V
		return zero, false
	}
	c.tick++
	it.used = c.tick
	return it.v, true
}

func (c *lruCache[V]) put(k cacheKey, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.items[k]; old != nil {
		c.size -= c.cost(old.v)
		delete(c.items, k)
	}
	if n := c.cost(v); c.size+n > c.max && len(c.items) > 0 {
		// Evict the least recently used quarter: rare, and cheaper than a list.
		used := make([]uint64, 0, len(c.items))
		for _, it := range c.items {
			used = append(used, it.used)
		}
		slices.Sort(used)
		cut := used[len(used)/4]
		for k, it := range c.items {
			if it.used <= cut {
				c.size -= c.cost(it.v)
				delete(c.items, k)
			}
		}
	}
	c.tick++
	c.items[k] = &cacheItem[V]{v: v, used: c.tick}
	c.size += c.cost(v)
}
