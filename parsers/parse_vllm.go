package parsers

import "strings"

// parseVLLM parses vLLM's logger header (docs/log-formats.md §2.1), in all eras:
//
//	INFO 02-07 11:03:45 __init__.py:190] msg           (<= v0.7.3)
//	INFO 06-21 19:07:56 [api_server.py:1043] msg       (v0.8+)
//	INFO 10-22 15:37:06 [platforms/__init__.py:225] msg (v0.11+ debug paths)
//
// The time has no year and no zone; it is kept as a partial time.
func parseVLLM(p *lineParse, s string) bool {
	lvl, n := levelWord(s, ' ')
	if lvl == "" || lvl == "SUCC" {
		return false
	}
	t := s[n+1:]
	// "MM-DD HH:MM:SS " is 15 bytes.
	if len(t) < 16 || t[2] != '-' || t[5] != ' ' || t[8] != ':' || t[11] != ':' || t[14] != ' ' ||
		!digitsAt(t, 0, 1, 3, 4, 6, 7, 9, 10, 12, 13) {
		return false
	}
	pt := partialTime{month: num2(t, 0), day: num2(t, 3), hour: num2(t, 6), min: num2(t, 9), sec: num2(t, 12)}
	pt.ok = validClock(pt.month, pt.day, pt.hour, pt.min, pt.sec)
	loc := t[15:]
	var comp, rest string
	if loc[0] == '[' {
		j := strings.IndexByte(loc, ']')
		if j < 0 {
			return false
		}
		comp, rest = loc[1:j], loc[j+1:]
	} else {
		j := strings.IndexByte(loc, ']')
		if j < 0 {
			return false
		}
		comp, rest = loc[:j], loc[j+1:]
	}
	file, line, ok := fileLine(comp)
	if !ok {
		return false
	}
	if len(rest) > 0 && rest[0] == ' ' {
		rest = rest[1:]
	}
	ev := &p.ev
	ev.Source = SourceVLLM
	ev.Level = normLevel(lvl)
	ev.Component = comp
	p.partial = pt
	p.msg = rest
	p.hasHeader = true
	p.set("file", file)
	p.set("lineno", line)
	return true
}

// parseUvicorn recognises uvicorn's access and server log ("INFO:     ...").
// The source stays undecided: it is vLLM's only when a vLLM process prefix
// says so.
func parseUvicorn(p *lineParse, s string) bool {
	lvl, n := levelWord(s, ':')
	if lvl == "" || lvl == "SUCC" || len(s) < n+2 || s[n+1] != ' ' {
		return false
	}
	p.ev.Level = normLevel(lvl)
	p.ev.Component = "uvicorn"
	p.msg = strings.TrimLeft(s[n+1:], " ")
	return true
}

// setRepeated records Ray's log de-duplication count ("... [repeated 31x
// across cluster]"), so that counts of per-rank lines can be corrected.
func setRepeated(p *lineParse, msg string) {
	// The suffix ends the line, possibly followed by the one-time
	// "(Ray deduplicates logs by default. ...)" notice.
	if len(msg) < 30 || (msg[len(msg)-1] != ']' && msg[len(msg)-1] != ')') {
		return
	}
	i := strings.Index(msg, " [repeated ")
	if i < 0 {
		return
	}
	d := leadingDigits(msg[i+len(" [repeated "):])
	if d != "" && strings.HasPrefix(msg[i+len(" [repeated ")+len(d):], "x across cluster]") {
		p.set("repeated", d)
	}
}
