package index

import (
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/bleve/v2/analysis"
)

// The log tokenizer decides what a query matches in a message.
//
// Bleve's standard analyzer is wrong for logs: it keeps
// `ray.exceptions.RayActorError` as one token (so `RayActorError` finds
// nothing), it cannot find `192.168.200.12` from `192.168`, and it drops stop
// words. The log tokenizer works like Elasticsearch's word_delimiter with
// preserve_original: it cuts the text into chunks at white space and
// brackets/quotes/commas, emits every chunk whole (`node:192.168.200.12`,
// `ray_utils.py`) and, when a chunk has inner punctuation, also each of its
// alphanumeric parts at consecutive positions, the first part sharing the
// chunk's position. A phrase over the parts (`192.168` → `192` `168`)
// then matches any run of parts, and the whole chunk matches as typed.
//
// The index does not keep these tokens as they are (see terms.go); a
// record found through its index terms is checked against its tokens
// when the terms alone cannot tell (plan.go), so that what matches is
// always what this tokenizer says.

// maxWholeChunk bounds the length of a whole chunk token: longer chunks
// (base64, long Python reprs) are only tokens by their parts.
const maxWholeChunk = 128

// maxPartLen bounds single parts for the same reason.
const maxPartLen = 64

// logTokenizer lower-cases as it goes, so the analyzer needs no filter pass.
type logTokenizer struct{}

// isBreak reports whether r ends a chunk.
func isBreak(r rune) bool {
	if unicode.IsSpace(r) {
		return true
	}
	switch r {
	case '"', '\'', '`', '(', ')', '[', ']', '{', '}', '<', '>', ',', ';', '|', '!', '?', '*', '&', '^', '~', '$', '\\':
		return true
	}
	return false
}

// isWord reports whether r belongs to a part.
func isWord(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') ||
		r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
}

func (logTokenizer) Tokenize(input []byte) analysis.TokenStream {
	toks := tokenizeLog(input, nil)
	low, ascii := lowerASCII(input)
	slab := make([]analysis.Token, len(toks))
	out := make(analysis.TokenStream, len(toks))
	for i, t := range toks {
		term := low[t.start:t.end:t.end]
		if !ascii {
			term = lower(input[t.start:t.end])
		}
		slab[i] = analysis.Token{Term: term, Start: t.start, End: t.end, Position: t.pos, Type: analysis.AlphaNumeric}
		out[i] = &slab[i]
	}
	return out
}

// Character classes of the tokenizer: a break ends a chunk, words make
// parts, the rest is punctuation inside a chunk.
const (
	classPunct = iota
	classBreak
	classWord
)

// classRune marks, in byteClass, the bytes that start or continue a
// multi-byte rune: its class is the rune's.
const classRune = 0xff

// byteClass is the class of each ASCII byte: logs are nearly all ASCII,
// and a table lookup is several times cheaper than decoding a rune and
// asking package unicode.
var byteClass = func() (t [256]uint8) {
	for c := range t {
		if c < utf8.RuneSelf {
			t[c] = runeClass(rune(c))
		} else {
			t[c] = classRune
		}
	}
	return t
}()

func runeClass(r rune) uint8 {
	switch {
	case isBreak(r):
		return classBreak
	case isWord(r):
		return classWord
	}
	return classPunct
}

// classAt returns the class and width of the character at input[i].
// It is inlined (the rune path is not): it runs for every byte indexed.
func classAt(input []byte, i int) (uint8, int) {
	if c := byteClass[input[i]]; c != classRune {
		return c, 1
	}
	return runeClassAt(input, i)
}

func runeClassAt(input []byte, i int) (uint8, int) {
	r, w := utf8.DecodeRune(input[i:])
	return runeClass(r), w
}

// classBefore returns the class and width of the last character of b.
func classBefore(b []byte) (uint8, int) {
	if c := byteClass[b[len(b)-1]]; c != classRune {
		return c, 1
	}
	return runeClassBefore(b)
}

func runeClassBefore(b []byte) (uint8, int) {
	r, w := utf8.DecodeLastRune(b)
	return runeClass(r), w
}

// partSpan is a part of a chunk: input[s:e].
type partSpan struct{ s, e int }

// logToken is a token of the log tokenizer: input[start:end] lower-cased,
// at a position.
type logToken struct{ start, end, pos int }

// tokenizeLog appends the tokens of input to out.
func tokenizeLog(input []byte, out []logToken) []logToken {
	if out == nil {
		// Rough capacity: one token per 5 bytes avoids most regrowth.
		out = make([]logToken, 0, len(input)/5+1)
	}
	pos := 1
	i := 0
	// The ASCII test is written out in the loops: classAt is too big to
	// be inlined, and this runs for every byte indexed.
	for i < len(input) {
		c, w := byteClass[input[i]], 1
		if c == classRune {
			c, w = runeClassAt(input, i)
		}
		if c == classBreak {
			i += w
			continue
		}
		start := i
		for i < len(input) {
			c, w = byteClass[input[i]], 1
			if c == classRune {
				c, w = runeClassAt(input, i)
			}
			if c == classBreak {
				break
			}
			i += w
		}
		pos = emitChunk(&out, input, start, i, pos)
	}
	return out
}

// emitChunk emits the tokens of input[start:end] from position pos and
// returns the next free position.
func emitChunk(out *[]logToken, input []byte, start, end, pos int) int {
	// Leading and trailing punctuation is not part of the word:
	// "failed." "host:" "=5" "/path" keep "failed" "host" "5" "path".
	for start < end {
		c, w := classAt(input, start)
		if c == classWord {
			break
		}
		start += w
	}
	for end > start {
		c, w := classBefore(input[start:end])
		if c == classWord {
			break
		}
		end -= w
	}
	if start == end {
		return pos
	}
	// Find the parts first: a chunk of one part is a single token.
	var partsBuf [16]partSpan
	parts := partsBuf[:0]
	for i := start; i < end; {
		c, w := byteClass[input[i]], 1
		if c == classRune {
			c, w = runeClassAt(input, i)
		}
		if c != classWord {
			i += w
			continue
		}
		s := i
		for i < end {
			c, w = byteClass[input[i]], 1
			if c == classRune {
				c, w = runeClassAt(input, i)
			}
			if c != classWord {
				break
			}
			i += w
		}
		parts = append(parts, partSpan{s, i})
	}
	if len(parts) == 1 {
		if end-start <= maxPartLen*4 {
			*out = append(*out, logToken{start, end, pos})
		}
		return pos + 1
	}
	if end-start <= maxWholeChunk {
		*out = append(*out, logToken{start, end, pos})
	}
	// Segments between '=', ':', '/' and '@' are tokens too, at the
	// position of their first part: VLLM_HOST_IP=192.168.200.12 and
	// enp1s0f0np0:192.168.200.13 then hold the address as a token, so a
	// wildcard like 192.168.200.* or a term query on the address finds it.
	segPos := pos
	segStart, segParts := parts[0].s, 0
	for i, p := range parts {
		segParts++
		last := i == len(parts)-1
		if !last && !isSegmentBreak(input[p.e:parts[i+1].s]) {
			continue
		}
		if segParts > 1 && (segStart != start || p.e != end) && p.e-segStart <= maxWholeChunk {
			*out = append(*out, logToken{segStart, p.e, segPos})
		}
		if !last {
			// node:<ip> inside a longer chunk (node:10.1.2.3:1) is a token
			// too: Ray's name of a node, searched as a whole.
			if segParts == 1 && p.e-p.s == 4 && nodeWord(input[p.s:p.e]) && input[p.e] == ':' {
				if e := ipSegmentEnd(input, parts[i+1:], end); e > 0 && (segStart != start || e != end) {
					*out = append(*out, logToken{segStart, e, segPos})
				}
			}
			segPos += segParts
			segStart, segParts = parts[i+1].s, 0
		}
	}
	for _, p := range parts {
		if p.e-p.s <= maxPartLen {
			*out = append(*out, logToken{p.s, p.e, pos})
		}
		pos++
	}
	return pos
}

// nodeWord reports whether b is "node" in any case.
func nodeWord(b []byte) bool {
	return len(b) == 4 && b[0]|0x20 == 'n' && b[1]|0x20 == 'o' && b[2]|0x20 == 'd' && b[3]|0x20 == 'e'
}

// ipSegmentEnd returns the end of the segment that starts with parts[0]
// when it is an IP address, else 0.
func ipSegmentEnd(input []byte, parts []partSpan, end int) int {
	e := parts[0].e
	for k := 1; k < len(parts) && !isSegmentBreak(input[parts[k-1].e:parts[k].s]); k++ {
		e = parts[k].e
	}
	if e > end || !isIP(lowerCopy(input[parts[0].s:e])) {
		return 0
	}
	return e
}

func lowerCopy(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// lowerASCII returns input lower-cased and whether it is all ASCII; only
// then is each token's term the same range of the result (Unicode case
// mapping may change lengths).
func lowerASCII(input []byte) ([]byte, bool) {
	return lowerASCIIInto(make([]byte, len(input)), input)
}

// lowerASCIIInto is lowerASCII into buf's bytes (grown when short).
func lowerASCIIInto(buf, input []byte) ([]byte, bool) {
	if cap(buf) < len(input) {
		buf = make([]byte, len(input))
	}
	out := buf[:len(input)]
	for i, c := range input {
		if c >= utf8.RuneSelf {
			return out, false
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out, true
}

// lower returns a lower-cased copy; the ASCII path avoids the allocations
// of bytes.ToLower's unicode handling on the common case.
func lower(b []byte) []byte {
	out := make([]byte, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c >= utf8.RuneSelf {
			return []byte(string(bytesToLowerUnicode(b)))
		}
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

func bytesToLowerUnicode(b []byte) []rune {
	rs := []rune(string(b))
	for i, r := range rs {
		rs[i] = unicode.ToLower(r)
	}
	return rs
}

// isSegmentBreak reports whether the punctuation between two parts
// separates segments (key=value, host:port, path/elements, user@host).
func isSegmentBreak(sep []byte) bool {
	for _, c := range sep {
		switch c {
		case '=', ':', '/', '@':
			return true
		}
	}
	return false
}
