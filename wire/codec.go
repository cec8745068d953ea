package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/faultline/faultline/parsers"
)

// AppendRecord appends r as one JSON object and a newline to dst. The output
// is what encoding/json produces for parsers.Record (same keys, same
// omitempty rules, invalid UTF-8 replaced by U+FFFD) but written without
// reflection: the shipper encodes every record it sends, and this is most of
// its CPU budget per record.
func AppendRecord(dst []byte, r *parsers.Record) []byte {
	dst = append(dst, `{"id":`...)
	dst = appendString(dst, r.ID)
	dst = append(dst, `,"cluster":`...)
	dst = appendString(dst, r.Cluster)
	dst = append(dst, `,"node":`...)
	dst = appendString(dst, r.Node)
	if r.Container != "" {
		dst = append(dst, `,"container":`...)
		dst = appendString(dst, r.Container)
	}
	dst = append(dst, `,"file":`...)
	dst = appendString(dst, r.File)
	if r.FileID != "" {
		dst = append(dst, `,"file_id":`...)
		dst = appendString(dst, r.FileID)
	}
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendInt(dst, r.Offset, 10)
	if r.Size != 0 {
		dst = append(dst, `,"size":`...)
		dst = strconv.AppendInt(dst, r.Size, 10)
	}
	dst = append(dst, `,"line":`...)
	dst = strconv.AppendInt(dst, int64(r.Line), 10)
	if r.Lines != 0 {
		dst = append(dst, `,"lines":`...)
		dst = strconv.AppendInt(dst, int64(r.Lines), 10)
	}
	dst = append(dst, `,"time":"`...)
	dst = appendTime(dst, r.Time)
	dst = append(dst, '"')
	if r.Stream != "" {
		dst = append(dst, `,"stream":`...)
		dst = appendString(dst, r.Stream)
	}
	dst = append(dst, `,"text":`...)
	dst = appendString(dst, r.Text)
	dst = append(dst, "}\n"...)
	return dst
}

func appendTime(dst []byte, t time.Time) []byte {
	// Same as time.Time.MarshalJSON for years 0-9999.
	return t.AppendFormat(dst, time.RFC3339Nano)
}

const hexDigits = "0123456789abcdef"

// safeASCII[b] is true for ASCII bytes copied as they are.
var safeASCII = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\' && b != '<' && b != '>' && b != '&'
	}
	return t
}()

// appendString writes s as a JSON string with encoding/json's escaping
// (HTML-safe, U+2028/2029 escaped, invalid UTF-8 as U+FFFD). Runs of safe
// ASCII, nearly all of a log line, are found with a table and copied at once.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if safeASCII[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xf])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Decode splits a message body into records. Empty lines are skipped; a line
// that is not a record is an error naming its position in the message.
func Decode(body []byte) ([]parsers.Record, error) {
	var out []parsers.Record
	for n := 1; len(body) > 0; n++ {
		line := body
		if i := bytes.IndexByte(body, '\n'); i >= 0 {
			line, body = body[:i], body[i+1:]
		} else {
			body = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var r parsers.Record
		if err := json.Unmarshal(line, &r); err != nil {
			return out, fmt.Errorf("wire: record %d of message: %w", n, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// TruncateMarker ends the text of a record cut to fit one message.
const TruncateMarker = " …[truncated by shipper]"

// FitText returns text cut so that the record's encoding stays within limit
// bytes (the rest of the record takes overhead bytes). The cut is on a UTF-8
// boundary and followed by TruncateMarker. Escaping can make the encoding up
// to six times the raw size, so the budget is computed on the escaped size.
func FitText(text string, overhead, limit int) (string, bool) {
	budget := limit - overhead - len(TruncateMarker) - 2
	if budget < 0 {
		budget = 0
	}
	if len(text) <= budget/6 || escapedLen(text) <= limit-overhead-2 {
		return text, false
	}
	// Walk runes until the escaped size would exceed the budget.
	n, i := 0, 0
	for i < len(text) {
		c, size := utf8.DecodeRuneInString(text[i:])
		w := size
		switch {
		case c == utf8.RuneError && size == 1:
			w = 6
		case c < 0x20 || c == '<' || c == '>' || c == '&':
			w = 6
		case c == '"' || c == '\\':
			w = 2
		case c == '\u2028' || c == '\u2029':
			w = 6
		}
		if n+w > budget {
			break
		}
		n += w
		i += size
	}
	return text[:i] + TruncateMarker, true
}

func escapedLen(s string) int {
	n := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case b == '"' || b == '\\' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			case b < 0x20 || b == '<' || b == '>' || b == '&':
				n += 6
			default:
				n++
			}
			i++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if (c == utf8.RuneError && size == 1) || c == '\u2028' || c == '\u2029' {
			n += 6
		} else {
			n += size
		}
		i += size
	}
	return n
}

// FitRecord cuts r.Text (with TruncateMarker) so that AppendRecord(r) takes
// at most limit bytes. It reports whether it cut.
func FitRecord(r *parsers.Record, limit int) bool {
	n := len(AppendRecord(nil, r))
	if n <= limit {
		return false
	}
	overhead := n - len(appendString(nil, r.Text))
	var cut bool
	r.Text, cut = FitText(r.Text, overhead, limit)
	return cut
}
