package index

import (
	"encoding/binary"
	"errors"
	"slices"
	"time"
	"unsafe"

	bindex "github.com/blevesearch/bleve_index_api"
)

// termField is an indexed field whose terms are known without analysis:
// keywords, exact numbers, time buckets. It fills Bleve's token
// frequencies directly, saving the token stream of an analyzer per field;
// a single term (the usual case) needs no allocation beyond the map.
type termField struct {
	name  string
	opts  bindex.FieldIndexingOptions
	terms [][]byte
	one   [1][]byte        // terms of a single-term field
	key   string           // the single term as a string, when known
	tf    bindex.TokenFreq // the single term's frequency
	freqs bindex.TokenFrequencies
	// fixed: freqs came from a freqCache, shared by every document with
	// the same value, and Analyze has nothing to do; length and plain are
	// then AnalyzedLength and NumPlainTextBytes.
	fixed         bool
	length, plain int
}

// shared makes f a field whose frequencies tfs come from a freqCache.
func (f *termField) shared(name string, opts bindex.FieldIndexingOptions, tfs bindex.TokenFrequencies, plain int) *termField {
	f.name, f.opts, f.freqs, f.fixed = name, opts, tfs, true
	f.length, f.plain = len(tfs), plain
	return f
}

// set makes f a single-term field.
func (f *termField) set(name string, opts bindex.FieldIndexingOptions, term []byte, key string) *termField {
	f.name, f.opts, f.key = name, opts, key
	f.one[0] = term
	f.terms = f.one[:]
	return f
}

func (f *termField) Name() string                         { return f.name }
func (f *termField) ArrayPositions() []uint64             { return nil }
func (f *termField) Options() bindex.FieldIndexingOptions { return f.opts }
func (f *termField) Value() []byte                        { return nil } // never stored
func (f *termField) EncodedFieldType() byte               { return 't' }
func (f *termField) AnalyzedLength() int {
	if f.fixed {
		return f.length
	}
	return len(f.terms)
}

func (f *termField) AnalyzedTokenFrequencies() bindex.TokenFrequencies { return f.freqs }

func (f *termField) NumPlainTextBytes() uint64 {
	if f.fixed {
		return uint64(f.plain)
	}
	var n int
	for _, t := range f.terms {
		n += len(t)
	}
	return uint64(n)
}

func (f *termField) Size() int { return 64 + int(f.NumPlainTextBytes()) }

func (f *termField) Analyze() {
	if f.fixed {
		return
	}
	if len(f.terms) == 1 {
		key := f.key
		if key == "" {
			key = string(f.terms[0])
		}
		f.tf.Term = f.terms[0]
		f.tf.SetFrequency(1)
		f.freqs = bindex.TokenFrequencies{key: &f.tf}
		return
	}
	tfs := make([]bindex.TokenFreq, len(f.terms))
	f.freqs = make(bindex.TokenFrequencies, len(f.terms))
	for i, t := range f.terms {
		if tf, ok := f.freqs[string(t)]; ok {
			tf.SetFrequency(tf.Frequency() + 1)
			continue
		}
		tfs[i].Term = t
		tfs[i].SetFrequency(1)
		f.freqs[string(t)] = &tfs[i]
	}
}

// storedField is a stored-only field: the event blob.
type storedField struct {
	name  string
	value []byte
}

func (f *storedField) Name() string                                      { return f.name }
func (f *storedField) ArrayPositions() []uint64                          { return nil }
func (f *storedField) Options() bindex.FieldIndexingOptions              { return bindex.StoreField }
func (f *storedField) Value() []byte                                     { return f.value }
func (f *storedField) EncodedFieldType() byte                            { return 't' }
func (f *storedField) Analyze()                                          {}
func (f *storedField) AnalyzedLength() int                               { return 0 }
func (f *storedField) AnalyzedTokenFrequencies() bindex.TokenFrequencies { return nil }
func (f *storedField) NumPlainTextBytes() uint64                         { return uint64(len(f.value)) }
func (f *storedField) Size() int                                         { return 48 + len(f.value) }

// The stored event: everything a hit shows, as one stored value instead of
// a stored field each. Zap writes and reads stored values per field with
// their type and array positions; one blob per event makes writing the
// stored section and loading a hit a single value.
//
// Layout (version 1): the version byte, a flags byte, then the strings of
// eventStrings as uvarint length + bytes, then time (varint unix ns, when
// flagged), line, lines, offset, pid (varints), rank (varint, when
// flagged), and the number of source fields followed by name, value pairs,
// then the partition (varint, when flagged). The partition comes last and
// only when not 0, so blobs without one are as before and an older reader
// of a newer blob reads everything else.
const eventBlobVersion = 1

const (
	blobHasTime = 1 << iota
	blobHasRank
	blobHasPartition
)

var errBadBlob = errors.New("index: bad stored event")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// encodeHit renders h as the stored event.
func encodeHit(b []byte, h *Hit) []byte {
	var flags byte
	if !h.Time.IsZero() {
		flags |= blobHasTime
	}
	if h.Rank != nil {
		flags |= blobHasRank
	}
	if h.Partition != 0 {
		flags |= blobHasPartition
	}
	b = append(b, eventBlobVersion, flags)
	for _, s := range []string{h.Cluster, h.Node, h.Container, h.File, h.Stream, h.Source, h.Level,
		h.Component, h.Process, h.IP, h.Message} {
		b = appendString(b, s)
	}
	if flags&blobHasTime != 0 {
		b = binary.AppendVarint(b, h.Time.UnixNano())
	}
	b = binary.AppendVarint(b, int64(h.Line))
	b = binary.AppendVarint(b, int64(h.Lines))
	b = binary.AppendVarint(b, h.Offset)
	b = binary.AppendVarint(b, int64(h.PID))
	if flags&blobHasRank != 0 {
		b = binary.AppendVarint(b, int64(*h.Rank))
	}
	b = binary.AppendUvarint(b, uint64(len(h.Fields)))
	keys := make([]string, 0, 8) // on the stack for the usual few fields
	for k := range h.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys) // one encoding per event
	for _, k := range keys {
		b = appendString(b, k)
		b = appendString(b, h.Fields[k])
	}
	if flags&blobHasPartition != 0 {
		b = binary.AppendVarint(b, int64(h.Partition))
	}
	return b
}

type blobReader struct {
	b   []byte
	err error
}

func (r *blobReader) str() string {
	n, w := binary.Uvarint(r.b)
	if w <= 0 || uint64(len(r.b)-w) < n {
		r.err = errBadBlob
		r.b = nil
		return ""
	}
	s := string(r.b[w : w+int(n)])
	r.b = r.b[w+int(n):]
	return s
}

func (r *blobReader) int() int64 {
	v, w := binary.Varint(r.b)
	if w <= 0 {
		r.err = errBadBlob
		r.b = nil
		return 0
	}
	r.b = r.b[w:]
	return v
}

// decodeHit fills h (but ID, Score, Highlights) from a stored event.
func decodeHit(b string, h *Hit) error {
	if len(b) < 2 || b[0] != eventBlobVersion {
		return errBadBlob
	}
	flags := b[1]
	r := blobReader{b: []byte(b[2:])}
	for _, p := range []*string{&h.Cluster, &h.Node, &h.Container, &h.File, &h.Stream, &h.Source, &h.Level,
		&h.Component, &h.Process, &h.IP, &h.Message} {
		*p = r.str()
	}
	if flags&blobHasTime != 0 {
		h.Time = time.Unix(0, r.int()).UTC()
	}
	h.Line = int(r.int())
	h.Lines = int(r.int())
	h.Offset = r.int()
	h.PID = int(r.int())
	if flags&blobHasRank != 0 {
		rank := int(r.int())
		h.Rank = &rank
	}
	n, w := binary.Uvarint(r.b)
	if w <= 0 || n > uint64(len(r.b)) {
		return errBadBlob
	}
	r.b = r.b[w:]
	if n > 0 {
		h.Fields = make(map[string]string, n)
		for range n {
			k := r.str()
			h.Fields[k] = r.str()
		}
		h.Cause = h.Fields["cause"]
	}
	if flags&blobHasPartition != 0 {
		h.Partition = int(r.int())
	}
	return r.err
}

// messageField is the message, indexed by the log tokenizer with term
// vectors (highlights). It builds Bleve's token frequencies from the
// tokenizer's spans in a few slabs instead of a token, a term and a
// location allocated per token; terms are ranges of the message
// lower-cased once.
type messageField struct {
	text   []byte
	length int
	freqs  bindex.TokenFrequencies
}

func (f *messageField) Name() string                         { return FieldMessage }
func (f *messageField) ArrayPositions() []uint64             { return nil }
func (f *messageField) Options() bindex.FieldIndexingOptions { return msgOpts }
func (f *messageField) Value() []byte                        { return f.text }
func (f *messageField) EncodedFieldType() byte               { return 't' }
func (f *messageField) AnalyzedLength() int                  { return f.length }
func (f *messageField) NumPlainTextBytes() uint64            { return uint64(len(f.text)) }
func (f *messageField) Size() int                            { return 64 + len(f.text) }

func (f *messageField) AnalyzedTokenFrequencies() bindex.TokenFrequencies { return f.freqs }

func (f *messageField) Analyze() {
	toks := tokenizeLog(f.text, nil)
	low, ascii := lowerASCII(f.text)
	// Map keys are substrings of low itself, which nothing writes after
	// this (a copy of the message per document cost ~1% of indexing).
	var keys string
	if len(low) > 0 {
		keys = unsafe.String(unsafe.SliceData(low), len(low))
	}
	tfs := make([]bindex.TokenFreq, len(toks))
	locs := make([]bindex.TokenLocation, len(toks))
	ptrs := make([]*bindex.TokenLocation, len(toks))
	f.freqs = make(bindex.TokenFrequencies, len(toks))
	for i, t := range toks {
		locs[i] = bindex.TokenLocation{Start: t.start, End: t.end, Position: t.pos}
		ptrs[i] = &locs[i]
		var term []byte
		var key string
		if ascii {
			term, key = low[t.start:t.end:t.end], keys[t.start:t.end]
		} else {
			term = lower(f.text[t.start:t.end])
			key = string(term)
		}
		if tf, ok := f.freqs[key]; ok {
			tf.Locations = append(tf.Locations, &locs[i])
			tf.SetFrequency(tf.Frequency() + 1)
			continue
		}
		tfs[i].Term = term
		tfs[i].Locations = ptrs[i : i+1 : i+1]
		tfs[i].SetFrequency(1)
		f.freqs[key] = &tfs[i]
	}
	f.length = len(toks)
}
