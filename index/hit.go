package index

import (
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/faultline/faultline/parsers"
)

// HitFromEvent renders a live event like a search hit, so the UI shows
// both the same way. The hit has its own copy of the event's fields: an
// offline replay reuses the event's map for the next event.
func HitFromEvent(ev *parsers.Event) Hit {
	h := Hit{
		ID: ev.ID, Time: eventTime(ev), Cluster: ev.Cluster, Node: ev.Node, Container: ev.Container, File: ev.File,
		Line: ev.Line, Lines: ev.Lines, Offset: ev.Offset, Stream: ev.Stream, Source: ev.Source, Level: ev.Level,
		Component: ev.Component, Process: ev.Process, PID: ev.PID, IP: ev.IP, Cause: ev.Fields["cause"],
		Fields: maps.Clone(ev.Fields), Message: ev.Message, Partition: ev.Partition,
	}
	if h.Message == "" {
		h.Message = ev.Text
	}
	if v := ev.Fields["rank"]; v != "" { // Atoi's error for "" is an allocation per record
		if r, err := strconv.Atoi(v); err == nil {
			h.Rank = &r
		}
	}
	return h
}

// eventTime is the event's time, else the record's container time.
func eventTime(ev *parsers.Event) time.Time {
	if !ev.Time.IsZero() {
		return ev.Time
	}
	return ev.Record.Time
}

// A block's payload: its records by column, so that the compressor sees
// like next to like (the messages of one file, its components...), and
// without what the block's header holds already (the time and line of each
// record, and the file: cluster, node, container, path, partition). A
// record's ID is not stored when it is RecordID(node, file ID, offset), as
// the parsers make them: the block's file has one file ID. Layout (varints
// unless said):
//
//	flags per record (1 byte: explicit ID, rank)
//	the explicit IDs (uvarint length + bytes)
//	offsets (zigzag deltas)
//	lines spanned, pids, ranks (flagged)
//	string columns, each record's as uvarint length + bytes: stream,
//	  source, level, component, process, ip, message
//	fields: per record their count, then name, value pairs
const (
	recExplicitID = 1 << iota
	recHasRank
)

// appendPayload appends the payload of records hs (a block of file k).
func appendPayload(b []byte, hs []Hit, k streamKey) []byte {
	for i := range hs {
		var f byte
		if hs[i].ID != parsers.RecordID(k.Node, k.FileID, hs[i].Offset) {
			f |= recExplicitID
		}
		if hs[i].Rank != nil {
			f |= recHasRank
		}
		b = append(b, f)
	}
	flags := b[len(b)-len(hs):]
	for i := range hs {
		if flags[i]&recExplicitID != 0 {
			b = appendString(b, hs[i].ID)
		}
	}
	var prev int64
	for i := range hs {
		b = binary.AppendVarint(b, hs[i].Offset-prev)
		prev = hs[i].Offset
	}
	for i := range hs {
		b = binary.AppendUvarint(b, uint64(max(hs[i].Lines, 0)))
	}
	for i := range hs {
		b = binary.AppendVarint(b, int64(hs[i].PID))
	}
	for i := range hs {
		if hs[i].Rank != nil {
			b = binary.AppendVarint(b, int64(*hs[i].Rank))
		}
	}
	for c := range 7 {
		for i := range hs {
			b = appendString(b, *stringColumn(&hs[i], c))
		}
	}
	keys := make([]string, 0, 8)
	for i := range hs {
		b = binary.AppendUvarint(b, uint64(len(hs[i].Fields)))
		keys = keys[:0]
		for k := range hs[i].Fields {
			keys = append(keys, k)
		}
		slices.Sort(keys) // one encoding per record
		for _, k := range keys {
			b = appendString(b, k)
			b = appendString(b, hs[i].Fields[k])
		}
	}
	return b
}

// stringColumn is the c-th string column of h.
func stringColumn(h *Hit, c int) *string {
	switch c {
	case 0:
		return &h.Stream
	case 1:
		return &h.Source
	case 2:
		return &h.Level
	case 3:
		return &h.Component
	case 4:
		return &h.Process
	case 5:
		return &h.IP
	}
	return &h.Message
}

// decodePayload reads the records of block m of file k.
func decodePayload(b []byte, m *blockMeta, k streamKey) ([]Hit, error) {
	n := m.n
	if len(b) < n {
		return nil, errBadBlob
	}
	hs := make([]Hit, n)
	flags := b[:n]
	r := blobReader{b: b[n:]}
	for i := range hs {
		h := &hs[i]
		h.Cluster, h.Node, h.Container, h.File, h.Partition = k.Cluster, k.Node, k.Container, k.File, k.Partition
		if m.timed&(1<<i) != 0 {
			h.Time = time.Unix(0, m.times[i]).UTC()
		}
		h.Line = int(m.lines[i])
		if flags[i]&recExplicitID != 0 {
			h.ID = r.str()
		}
	}
	var off int64
	for i := range hs {
		off += r.int()
		hs[i].Offset = off
	}
	for i := range hs {
		hs[i].Lines = int(r.uint())
	}
	for i := range hs {
		hs[i].PID = int(r.int())
	}
	for i := range hs {
		if flags[i]&recHasRank != 0 {
			rank := int(r.int())
			hs[i].Rank = &rank
		}
	}
	for c := range 7 {
		for i := range hs {
			*stringColumn(&hs[i], c) = r.str()
		}
	}
	for i := range hs {
		nf := r.uint()
		if nf > uint64(len(r.b)) {
			return nil, errBadBlob
		}
		if nf > 0 {
			hs[i].Fields = make(map[string]string, nf)
			for range nf {
				k := r.str()
				hs[i].Fields[k] = r.str()
			}
			hs[i].Cause = hs[i].Fields["cause"]
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	for i := range hs {
		if flags[i]&recExplicitID == 0 {
			hs[i].ID = parsers.RecordID(k.Node, k.FileID, hs[i].Offset)
		}
	}
	return hs, nil
}

// The event blob of index version 3 (migrate.go reads the old index's
// with decodeHit): the version byte 1, a flags byte, the strings of the
// hit as uvarint length + bytes (cluster, node, container, file, stream,
// source, level, component, process, ip, message), then time (varint unix
// ns, when flagged), line, lines, offset, pid (varints), rank (varint,
// when flagged), the number of source fields followed by name, value
// pairs, then the partition (varint, when flagged).
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

// appendRecord appends a record as one blob: its ID then its event blob
// (what sameRecord compares).
func appendRecord(b []byte, h *Hit) []byte {
	return encodeHit(appendString(b, h.ID), h)
}

// encodeHit appends the event blob of h (all but its ID) to b.
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
	for _, s := range [...]string{h.Cluster, h.Node, h.Container, h.File, h.Stream, h.Source, h.Level,
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

func (r *blobReader) uint() uint64 {
	v, w := binary.Uvarint(r.b)
	if w <= 0 {
		r.err = errBadBlob
		r.b = nil
		return 0
	}
	r.b = r.b[w:]
	return v
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

// decodeHit fills h (but ID, Score, Highlights) from an event blob.
func decodeHit(b []byte, h *Hit) error {
	r := blobReader{b: b}
	return r.hit(h)
}

// hit reads an event blob into h.
func (r *blobReader) hit(h *Hit) error {
	if len(r.b) < 2 || r.b[0] != eventBlobVersion {
		return errBadBlob
	}
	flags := r.b[1]
	r.b = r.b[2:]
	for _, p := range [...]*string{&h.Cluster, &h.Node, &h.Container, &h.File, &h.Stream, &h.Source, &h.Level,
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
