package parsers

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
)

// ReaderOptions configure a Reader. The zero value reads a file from its
// start, detects its format and keeps the unterminated last line pending.
type ReaderOptions struct {
	// StartOffset is the file offset of the first byte r yields (a tailer
	// resuming at a persisted offset); Line.Offset counts from it.
	StartOffset int64
	// StartLine is the 1-based number of the line starting at StartOffset;
	// 0 means 1.
	StartLine int
	// Format of the file; FormatAuto (0) detects it from the first bytes.
	// A tailer resuming mid-file should pass the format detected at the
	// file's start.
	Format Format
	// MaxLineBytes bounds the text kept of one line (default
	// DefaultMaxLineBytes); longer lines end in " …[truncated N bytes]".
	MaxLineBytes int
	// EOFIsEnd makes io.EOF final: an unterminated last line and any held
	// partialLine records are returned as Lines. Offline reading sets it; a
	// tailer leaves it false, so that a line still being written is not cut.
	EOFIsEnd bool
	// Warn receives problems that do not stop reading (broken records, a
	// binary-looking file). The errors name line and offset, not the file.
	Warn func(error)
}

// Reader frames one file's bytes into physical Lines. It holds at most
// MaxLineBytes (plus a read buffer) of any line, however long the line is.
type Reader struct {
	br   *bufio.Reader
	dec  *Decoder
	opts ReaderOptions

	offset   int64 // file offset of the next byte not yet in a Line
	num      int   // number of the next physical line
	acc      []byte
	accSize  int64 // raw bytes of the current physical line so far, kept or not
	rawCap   int
	detected bool
}

const readBufSize = 64 << 10

// NewReader returns a Reader over r.
func NewReader(r io.Reader, opts ReaderOptions) *Reader {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.StartLine <= 0 {
		opts.StartLine = 1
	}
	rd := &Reader{
		br:     bufio.NewReaderSize(r, readBufSize),
		opts:   opts,
		offset: opts.StartOffset,
		num:    opts.StartLine,
	}
	rd.dec = NewDecoder(opts.Format)
	rd.dec.maxLineBytes = opts.MaxLineBytes
	return rd
}

// Format returns the file's format (FormatAuto until the first bytes were seen).
func (r *Reader) Format() Format { return r.dec.format }

// Offset returns the file offset just past the last physical line consumed.
// Bytes below it are either in a returned Line or in a partialLine record that
// PendingOffset reports.
func (r *Reader) Offset() int64 { return r.offset }

// PendingOffset reports the offset of the earliest partialLine record held for
// reassembly (a tailer may persist offsets only below it).
func (r *Reader) PendingOffset() (int64, bool) { return r.dec.PendingOffset() }

func (r *Reader) warn(err error) {
	if err != nil && r.opts.Warn != nil {
		r.opts.Warn(err)
	}
}

// Next returns the next Line. It returns io.EOF at the end of the input; a
// later call reads on if the input has grown (tailing). Other errors come
// from the underlying reader. Broken records are not errors: they are
// returned as Lines and reported to Warn.
func (r *Reader) Next() (Line, error) {
	if !r.detected {
		head, _ := r.br.Peek(frameHeadSize)
		if len(head) == 0 {
			if _, err := r.br.Peek(1); err != nil && !errors.Is(err, io.EOF) {
				return Line{}, err
			}
			if l, ok := r.flushAtEOF(); ok {
				return l, nil
			}
			return Line{}, io.EOF
		}
		r.detected = true
		if bytes.IndexByte(head, 0) >= 0 {
			r.warn(fmt.Errorf("looks like a binary file (NUL bytes in the first %d bytes); reading it as text", len(head)))
		}
		if r.dec.format == FormatAuto {
			r.dec.format = DetectFormat(head)
		}
		r.rawCap = r.dec.LineLimit()
	}
	for {
		slice, err := r.br.ReadSlice('\n')
		if err == nil && r.accSize == 0 {
			// Fast path: the whole line sits in the read buffer.
			size := int64(len(slice))
			if len(slice) > r.rawCap+1 {
				r.acc = append(r.acc[:0], slice[:r.rawCap]...)
				l, ok := r.emit(r.acc, size, size-int64(r.rawCap)-1)
				if ok {
					return l, nil
				}
				continue
			}
			l, ok := r.emit(slice, size, 0)
			if ok {
				return l, nil
			}
			continue
		}
		if len(slice) > 0 {
			keep := min(len(slice), r.rawCap+1-len(r.acc))
			if keep > 0 {
				r.acc = append(r.acc, slice[:keep]...)
			}
			r.accSize += int64(len(slice))
		}
		switch {
		case err == nil:
			l, ok := r.emitAcc(true)
			if ok {
				return l, nil
			}
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than the buffer: keep reading, keep the head.
		case errors.Is(err, io.EOF):
			if r.accSize > 0 {
				if !r.opts.EOFIsEnd {
					return Line{}, io.EOF // hold the line until its newline arrives
				}
				l, ok := r.emitAcc(false)
				if ok {
					return l, nil
				}
			}
			if l, ok := r.flushAtEOF(); ok {
				return l, nil
			}
			return Line{}, io.EOF
		default:
			return Line{}, fmt.Errorf("read at offset %d: %w", r.offset+r.accSize, err)
		}
	}
}

func (r *Reader) flushAtEOF() (Line, bool) {
	if !r.opts.EOFIsEnd {
		return Line{}, false
	}
	return r.dec.Flush()
}

// emitAcc frames the accumulated physical line; terminated says whether it
// ended with "\n" (which then counts in Size but is not text).
func (r *Reader) emitAcc(terminated bool) (Line, bool) {
	raw := r.acc
	dropped := r.accSize - int64(len(raw))
	if dropped > 0 {
		if terminated {
			dropped-- // the newline is among the dropped bytes
		}
		raw = bytes.TrimSuffix(raw, []byte{'\n'})
		if len(raw) > r.rawCap {
			dropped += int64(len(raw) - r.rawCap)
			raw = raw[:r.rawCap]
		}
	}
	size := r.accSize
	l, ok := r.emit(raw, size, dropped)
	r.acc = r.acc[:0]
	if cap(r.acc) > 4*readBufSize {
		r.acc = nil // a rare long line must not pin its buffer
	}
	r.accSize = 0
	return l, ok
}

func (r *Reader) emit(raw []byte, size, dropped int64) (Line, bool) {
	l, ok, err := r.dec.decode(raw, r.offset, size, r.num, dropped)
	r.warn(err)
	r.offset += size
	r.num++
	return l, ok
}

// ReadFile reads a whole file (offline use): it frames its lines, joins
// them into records and calls emit for each. o.File and o.FileID are filled
// in when empty. Problems with the content go to warn (prefixed with the
// path); only failing to open or read the file is an error. Gzip-compressed
// files (rotated json-file logs, told by their magic bytes, not their name)
// are decompressed transparently; offsets are then those of the decompressed
// bytes.
func ReadFile(path string, o Origin, emit func(Record), warn func(error)) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read log: %w", err)
	}
	defer f.Close()
	if o.File == "" {
		o.File = path
	}
	if o.FileID == "" {
		if o.FileID, err = fileIdentity(f); err != nil {
			return err
		}
	}
	var in io.Reader = f
	if FileIsGzip(f) {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("read log %s: %w", path, err)
		}
		defer zr.Close()
		in = zr
	}
	rd := NewReader(in, ReaderOptions{
		EOFIsEnd: true,
		Warn: func(e error) {
			if warn != nil {
				warn(fmt.Errorf("%s: %w", path, e))
			}
		},
	})
	j := NewJoiner(o, JoinOptions{}, emit)
	for {
		l, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read log %s: %w", path, err)
		}
		j.Add(l)
	}
	j.Flush()
	return nil
}
