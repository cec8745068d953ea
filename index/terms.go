package index

import (
	"net/netip"
	"unicode/utf8"
	"unsafe"
)

// The index terms of a message. The log tokenizer (analyzer.go) defines
// what a query matches: every chunk, segment and part of the message is a
// token. The index does not hold every token as it is: each token maps to
// one index term (indexTerm), which is either the token itself (exact) or
// a bucket shared by many tokens (lossy), so that the term dictionary holds
// the words people search for, not every number, address port and hex ID
// ever logged (one of those per line made ~85% of all terms, and terms are
// what building and merging segments cost):
//
//   - a word, a number of up to 4 digits, an IP address (with a port of up
//     to 4 digits), node:<ip>, and a compound of exact parts with a letter
//     and at most 6 digits (ray_utils.py:212, NCCL_SOCKET_IFNAME=enp1s0f0np0,
//     /usr/lib/python3.12/worker.py) are exact: a query for them is a term
//     lookup;
//   - longer numbers, hex IDs and very long words are bucketed by class,
//     length and first characters ("\x01n5:48" for 48341), other compounds by
//     their first three bytes ("\x01p10." for 10.1.249.61:59666): a query
//     for one looks its bucket up, and the records it finds are checked
//     against their text (see plan.go).
//
// Bucket terms start with 0x01; exact terms start with a word character
// (tokens are trimmed of punctuation), so the two never meet.

const (
	bucketMark = 0x01
	// Bucket classes: the byte after bucketMark.
	bucketNumber   = 'n' // digits, longer than maxExactDigits
	bucketHex      = 'h' // [0-9a-f], a digit and a letter, at least minHexID long
	bucketHex0x    = 'x' // 0x and at least 4 hex digits
	bucketLong     = 'l' // one part longer than maxExactPart
	bucketCompound = 'p' // a compound that is not exact
)

const (
	maxExactDigits   = 4  // numbers up to 9999 are exact (ports, error codes, ranks)
	minHexID         = 5  // shorter hex words (a100, 5a3f) are exact
	maxExactPart     = 40 // longer single words are bucketed
	maxExactCompound = 64
	maxCompoundDigit = 4 // digits in an exact compound: more is a time, a pid:tid, a port
)

// tokenShape describes a token for indexTerm.
type tokenShape struct {
	parts     int
	digits    int
	letters   int // ASCII letters and non-ASCII runes
	hexOnly   bool
	maxDigits int // longest run of digits-only part
	lossy     bool
	punct     bool // a character that is no word character
}

// shapeOf scans a lower-cased token once.
func shapeOf(s []byte) tokenShape {
	sh := tokenShape{hexOnly: true}
	inPart := false
	partDigits, partLen := 0, 0
	partHex, partAlpha := true, false
	endPart := func() {
		if !inPart {
			return
		}
		inPart = false
		if partDigits == partLen {
			sh.maxDigits = max(sh.maxDigits, partLen)
			if partLen > maxExactDigits {
				sh.lossy = true
			}
		} else if partLen > maxExactPart || partHex && partLen >= minHexID && partDigits > 0 && partAlpha {
			sh.lossy = true
		}
	}
	for i := 0; i < len(s); {
		c := s[i]
		w := 1
		word := false
		switch {
		case c >= '0' && c <= '9':
			word = true
			if !inPart {
				inPart, partDigits, partLen, partHex, partAlpha = true, 0, 0, true, false
				sh.parts++
			}
			partDigits++
			sh.digits++
		case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			word = true
			if !inPart {
				inPart, partDigits, partLen, partHex, partAlpha = true, 0, 0, true, false
				sh.parts++
			}
			sh.letters++
			partAlpha = true
			if c > 'f' {
				partHex, sh.hexOnly = false, false
			}
		case c >= utf8.RuneSelf:
			var cl uint8
			cl, w = classAt(s, i)
			if cl == classWord {
				word = true
				if !inPart {
					inPart, partDigits, partLen, partHex, partAlpha = true, 0, 0, true, false
					sh.parts++
				}
				sh.letters++
				partAlpha = true
				partHex, sh.hexOnly = false, false
			}
		}
		if word {
			partLen++
		} else {
			endPart()
			sh.hexOnly = false
			sh.punct = true
		}
		i += w
	}
	endPart()
	return sh
}

// indexTerm returns the index term of a token (lower-cased, as the
// tokenizer emits it) and whether it is the token itself. It depends on
// the token's text alone, so a query computes the same term as indexing.
func indexTerm(tok []byte, buf []byte) ([]byte, bool) {
	sh := shapeOf(tok)
	if sh.parts <= 1 && len(tok) > 0 && !sh.punct {
		// A single part.
		switch {
		case sh.digits == len(tok):
			if len(tok) <= maxExactDigits {
				return tok, true
			}
			return append(append(buf[:0], bucketMark, bucketNumber, byte('0'+min(len(tok), 40))), tok[:2]...), false
		case len(tok) >= 2+4 && tok[0] == '0' && tok[1] == 'x' && isHex(tok[2:]):
			return append(append(buf[:0], bucketMark, bucketHex0x), tok[2:5]...), false
		case sh.hexOnly && len(tok) >= minHexID && sh.digits > 0 && sh.letters > 0:
			return append(append(buf[:0], bucketMark, bucketHex), tok[:3]...), false
		case len(tok) > maxExactPart:
			return append(append(buf[:0], bucketMark, bucketLong), tok[:4]...), false
		}
		return tok, true
	}
	if isAddress(tok) {
		return tok, true
	}
	if !sh.lossy && sh.letters > 0 && sh.digits <= maxCompoundDigit && len(tok) <= maxExactCompound {
		return tok, true
	}
	return append(append(buf[:0], bucketMark, bucketCompound), tok[:min(3, len(tok))]...), false
}

// isWordByte reports whether tok is one part: word characters only.
func isWordByte(tok []byte) bool {
	for i := 0; i < len(tok); {
		c, w := classAt(tok, i)
		if c != classWord {
			return false
		}
		i += w
	}
	return true
}

func isHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// isAddress reports whether a compound token is an address searched as a
// whole: an IP, an IP with a port of up to maxExactDigits digits, or
// node:<ip> (Ray's resource name of a node).
func isAddress(tok []byte) bool {
	if len(tok) < 3 || len(tok) > 64 {
		return false
	}
	if len(tok) > 5 && string(tok[:5]) == "node:" {
		return isIP(tok[5:])
	}
	if isIP(tok) {
		return true
	}
	// ip:port with a short port; [v6]:port never survives the tokenizer.
	for i := len(tok) - 1; i > 0 && i >= len(tok)-1-maxExactDigits; i-- {
		if tok[i] == ':' {
			port := tok[i+1:]
			return len(port) > 0 && allDigits(port) && isIP(tok[:i])
		}
		if tok[i] < '0' || tok[i] > '9' {
			return false
		}
	}
	return false
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// isIP reports whether b is an IPv4 or IPv6 address, cheaply rejecting
// what cannot be one before asking netip.
func isIP(b []byte) bool {
	dots, colons := 0, 0
	for _, c := range b {
		switch {
		case c == '.':
			dots++
		case c == ':':
			colons++
		case c >= '0' && c <= '9', c >= 'a' && c <= 'f':
		default:
			return false
		}
	}
	if dots != 3 && colons < 2 {
		return false
	}
	_, err := netip.ParseAddr(unsafe.String(unsafe.SliceData(b), len(b))) // read, not kept
	return err == nil
}
