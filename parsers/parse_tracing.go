package parsers

import (
	"strings"
	"time"
)

// parseTracing parses the default text format of Rust's tracing-subscriber
// (fmt's Full format), which Hugging Face TGI's launcher and router, NVIDIA
// Dynamo's runtime and the Rust routers in front of vLLM and SGLang print
// (docs/log-formats.md §6.1):
//
//	2024-05-02T10:11:21.631027Z ERROR text_generation_launcher: Shard 1 failed to start
//	2024-05-02T10:11:05.922016Z  INFO shard-manager: text_generation_launcher: Starting shard rank=0
//	2025-05-27T08:39:56.402+02:00 ERROR dynamo_runtime::worker: Application shutdown with error: ...
//
// An RFC 3339 time with a zone ("Z" or an offset), the level right-aligned
// in five columns, then the spans ("warmup{max_batch_size=None}:warmup:")
// and the target (the module path) each ending in ": ", then the message.
// The target is the component.
func parseTracing(p *lineParse, s string) bool {
	if len(s) < 26 || s[10] != 'T' {
		return false
	}
	t, n, ok := parseISOTime(s)
	if !ok || n+7 > len(s) || s[n] != ' ' {
		return false
	}
	if !tracingLine(p, strings.TrimLeft(s[n:], " "), false) {
		return false
	}
	p.fullTime = t
	return true
}

// tracingLine parses "LEVEL spans: target: message". With needCode it is
// the same format without the time (a subscriber built .without_time(), or
// a paste that cut it: "ERROR dynamo_runtime::worker: Application shutdown
// with error: ..."): without the time to vouch for the format, the target
// must look like code.
func tracingLine(p *lineParse, s string, needCode bool) bool {
	var lvl string
	for _, w := range [...]string{"INFO", "WARN", "ERROR", "DEBUG", "TRACE"} {
		if len(s) > len(w) && s[len(w)] == ' ' && s[:len(w)] == w {
			lvl = w
			break
		}
	}
	if lvl == "" {
		return false
	}
	target, msg, code := tracingTarget(s[len(lvl)+1:])
	if needCode && !code {
		return false
	}
	ev := &p.ev
	ev.Level = normLevel(lvl)
	ev.Component = target
	p.msg = msg
	return true
}

// tracingTarget splits "spans: target: message" into the target (the last
// segment before the message that is not a file:line) and the message, and
// says whether the first segment looks like code. A segment is a word of
// code (letters, digits, _ - . / and ::, {fields} after a span's name, ':'
// between spans or before a line number) followed by ": "; after the first,
// only segments that look like code (a '_', '-', '.', '/', ':' or {fields})
// are taken, so that a message that begins "Error: ..." keeps its first word.
func tracingTarget(s string) (target, msg string, code bool) {
	msg = s
	for i := 0; i < 5; i++ {
		n, c := tracingSegment(msg)
		if n == 0 || (i > 0 && !c) {
			break
		}
		if i == 0 {
			code = c
		}
		seg := msg[:n-1]
		if _, _, isLoc := fileLine(seg); !isLoc || target == "" {
			target = seg
		}
		msg = msg[n+1:]
	}
	return target, msg, code
}

// tracingSegment returns the length of the segment that starts s, up to and
// including the ':' before its blank (0 if s starts with none), and whether
// it looks like code.
func tracingSegment(s string) (int, bool) {
	code := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_' || c == '-' || c == '.' || c == '/':
			code = true
		case c == '{':
			j := strings.IndexByte(s[i:], '}')
			if j < 0 || strings.IndexByte(s[i:i+j], '\n') >= 0 {
				return 0, false
			}
			i += j
			code = true
		case c == ':':
			if i == 0 || i+1 >= len(s) {
				return 0, false
			}
			if s[i+1] == ' ' {
				return i + 1, code
			}
			code = true // "::", "span:span", "file.rs:46"
		default:
			return 0, false
		}
	}
	return 0, false
}

// parseISOTime parses "YYYY-MM-DDTHH:MM:SS[.f]" followed by "Z" or a
// "+hh:mm" / "-hh:mm" offset at the start of s, and returns the time in UTC
// and the bytes consumed.
func parseISOTime(s string) (time.Time, int, bool) {
	if len(s) < 20 || s[10] != 'T' {
		return time.Time{}, 0, false
	}
	t, n, ok := parseDateTimeFracSep(s, 'T')
	if !ok || n >= len(s) {
		return time.Time{}, 0, false
	}
	switch c := s[n]; {
	case c == 'Z':
		return t, n + 1, true
	case (c == '+' || c == '-') && n+6 <= len(s) && s[n+3] == ':' && digitsAt(s[n:], 1, 2, 4, 5):
		off := time.Duration(num2(s, n+1))*time.Hour + time.Duration(num2(s, n+4))*time.Minute
		if c == '+' {
			off = -off
		}
		return t.Add(off), n + 6, true
	}
	return time.Time{}, 0, false
}
