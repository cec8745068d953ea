// Package parsers turns raw log bytes into records and events: framing of
// plain, Docker json-file and CRI files, joining of multi-line entries into
// records, and the per-source parsers (Ray, vLLM, NCCL, torch, Python) that
// turn a record into an event. The shipper, offline diagnose, ingest and the
// live analyzer all use this one package, so they see the same records: one
// framer (Decoder, with one long-line policy), one file identity (Identify)
// and one joiner (a traceback written slowly is still one record).
package parsers

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"time"
)

// Origin labels where records come from. FileID is the file's identity
// (see FileIdentity); it stays the same across renames so that a record's ID
// does not change when Docker rotates the file it sits in.
type Origin struct {
	Cluster   string
	Node      string
	Container string
	File      string // path as the user knows it (for evidence: node:file:line)
	FileID    string
}

// Record is one logical log entry: a single line, or a Python traceback, a C++
// frame dump or an NCCL WARN block joined from several physical lines.
type Record struct {
	ID        string    `json:"id"`
	Cluster   string    `json:"cluster"`
	Node      string    `json:"node"`
	Container string    `json:"container,omitempty"`
	File      string    `json:"file"`
	FileID    string    `json:"file_id,omitempty"`
	Offset    int64     `json:"offset"`         // byte offset of the record's first line in the file
	Size      int64     `json:"size,omitempty"` // file bytes consumed by the record's lines (all framing included)
	Line      int       `json:"line"`           // 1-based number of the record's first physical line
	Lines     int       `json:"lines,omitempty"`
	Time      time.Time `json:"time"` // container log time if the framing had one, else zero
	Stream    string    `json:"stream,omitempty"`
	Text      string    `json:"text"`
}

// RecordID is the stable identity of a record: the same bytes of the same
// file on the same node always get the same ID, so re-sending is harmless.
//
// The index computes it for every record it stores (to leave out the IDs
// it can derive): one buffer on the stack and one allocation, the string.
func RecordID(node, fileID string, offset int64) string {
	var buf [128]byte
	b := append(buf[:0], node...)
	b = append(b, 0)
	b = append(b, fileID...)
	b = append(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(offset))
	sum := sha256.Sum256(b)
	var out [24]byte
	hex.Encode(out[:], sum[:12])
	return string(out[:])
}

// Line is one physical log line after container framing has been removed:
// Docker json-file partial records and CRI "P" records are already
// reassembled, ANSI colour codes stripped, the trailing CR/LF removed.
type Line struct {
	Offset int64     // byte offset of the first byte of the line (or of its first partial record)
	Size   int64     // bytes of the file this line consumed, including newlines and framing
	Num    int       // 1-based physical line number in the file (first partial record's line)
	Stream string    // "stdout", "stderr" or "" when the framing does not say
	Time   time.Time // container log time (json-file / CRI), zero for plain files
	Text   string
	// pasted counts the bytes of container tools' prefixes the Decoder
	// removed from the line (see paste.go): a terminal wrapped the line
	// with them, and never repeats them on a wrapped piece.
	pasted int32
	// shown counts the bytes of colour codes' printable renderings the
	// Decoder removed ("[0m" with its ESC lost, "^[[1;36m"): the paste
	// showed them, so a terminal that wrapped it counted their columns.
	shown int32
	// ascii says that Text is known to be ASCII (the Decoder found
	// nothing to clean in it): the joiner then counts its columns as bytes.
	ascii bool
	// broken marks a json-file or CRI line that is not a record of its
	// format (its raw bytes are the text): the joiner makes it a record of
	// its own, joined to nothing.
	broken bool
}
