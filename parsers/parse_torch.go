package parsers

import "strings"

// parseC10 parses PyTorch's c10 MessageLogger lines (docs/log-formats.md §5.1):
//
//	[W1129 20:00:53.295648442 ProcessGroupNCCL.cpp:1575] msg   (newer torch)
//	[E ProcessGroupNCCL.cpp:475] msg                             (older torch)
//
// The optional "[rankN]:" before it is a prefix, already removed. MMDD is
// month*100+day without zero padding (April 8 is "408"); the fraction is
// CLOCK_MONOTONIC nanoseconds, not wall time, so it is ignored.
func parseC10(p *lineParse, s string) bool {
	if len(s) < 6 || s[0] != '[' {
		return false
	}
	lvl := normLevel(s[1:2])
	if lvl == "" || s[1] == 'D' || s[1] == 'T' || s[1] == 'C' {
		return false
	}
	j := strings.IndexByte(s, ']')
	if j < 0 {
		return false
	}
	inner := s[2:j]
	var pt partialTime
	if len(inner) > 0 && inner[0] != ' ' {
		// "1129 20:00:53.295648442 file:line"
		md := leadingDigits(inner)
		if len(md) < 3 || len(md) > 4 || len(inner) < len(md)+10 {
			return false
		}
		c := inner[len(md):]
		if c[0] != ' ' || c[3] != ':' || c[6] != ':' || !digitsAt(c, 1, 2, 4, 5, 7, 8) {
			return false
		}
		v := atoi(md)
		pt = partialTime{month: v / 100, day: v % 100, hour: num2(c, 1), min: num2(c, 4), sec: num2(c, 7)}
		pt.ok = validClock(pt.month, pt.day, pt.hour, pt.min, pt.sec)
		inner = c[9:]
		if len(inner) > 0 && inner[0] == '.' {
			inner = inner[1+len(leadingDigits(inner[1:])):]
		}
	}
	if len(inner) < 2 || inner[0] != ' ' {
		return false
	}
	comp := inner[1:]
	if _, _, ok := fileLine(comp); !ok {
		return false
	}
	msg := s[j+1:]
	if len(msg) > 0 && msg[0] == ' ' {
		msg = msg[1:]
	}
	ev := &p.ev
	ev.Source = SourceTorch
	ev.Level = lvl
	ev.Component = comp
	p.partial = pt
	p.msg = msg
	c10Rank(p, msg)
	return true
}

// c10Rank takes the rank from ProcessGroupNCCL's message prefix, "[Rank 3] "
// (older) or "[PG ID 1 PG GUID 1(default_pg) Rank 1] " (newer).
func c10Rank(p *lineParse, msg string) {
	if len(msg) < 8 || msg[0] != '[' {
		return
	}
	j := strings.IndexByte(msg, ']')
	if j < 0 {
		return
	}
	i := strings.LastIndex(msg[:j], "Rank ")
	if i < 0 || (i > 1 && msg[i-1] != ' ') {
		return
	}
	if r := msg[i+len("Rank ") : j]; allDigits(r) {
		p.set("rank", r)
	}
}

// parseSGLang parses SGLang's logger header, which carries a full date and
// the worker's tag:
//
//	[2025-06-23 15:07:01 TP6] msg
//	[2025-06-23 15:06:53] msg
//
// SGLang is not a source of its own: the record stays "other" unless its
// message is recognised (a traceback makes it python), and the tag becomes
// the process name.
func parseSGLang(p *lineParse, s string) bool {
	if len(s) < 22 || s[0] != '[' {
		return false
	}
	t, ok := parseDateTime(s[1:])
	if !ok {
		return false
	}
	rest := s[20:]
	tag := ""
	switch rest[0] {
	case ']':
		rest = rest[1:]
	case ' ':
		j := strings.IndexByte(rest, ']')
		if j < 0 {
			return false
		}
		tag, rest = rest[1:j], rest[j+1:]
	default:
		return false
	}
	if len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	// A traceback logged through it carries "ERROR: " after the bracket on
	// every line (the Joiner keeps such lines in one record: repeatedHeader).
	if lv := errorHead(rest); lv != "" {
		p.ev.Level = normLevel(lv[:len(lv)-2])
		p.hasHeader = true
		rest = rest[len(lv):]
	}
	p.fullTime = t
	p.msg = rest
	if tag != "" {
		p.ev.Process = tag
	}
	return true
}

// errorHead returns the "ERROR: " or "CRITICAL: " that starts s, or "": the
// level SGLang's logger writes after its bracket on each line of a traceback.
func errorHead(s string) string {
	for _, lv := range [...]string{"ERROR: ", "CRITICAL: "} {
		if strings.HasPrefix(s, lv) {
			return lv
		}
	}
	return ""
}

// parseC10Frames recognises the C++ stack that c10::Error appends to torch
// exceptions ("Exception raised from recvBytes at ...", "frame #0: ..."),
// should such a line arrive without the record it belongs to.
func parseC10Frames(p *lineParse, s string) bool {
	if strings.HasPrefix(s, "Exception raised from ") ||
		strings.HasPrefix(s, "frame #") && len(s) > 7 && s[7] >= '0' && s[7] <= '9' {
		p.ev.Source = SourceTorch
		return true
	}
	return false
}
