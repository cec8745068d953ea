package parsers

import (
	"strings"
	"time"
)

// Parse turns a record into an event: it strips the process prefixes, finds
// which program wrote the record (vLLM, Ray, NCCL, torch, Python or other),
// and extracts level, component, time, message and source-specific fields.
// It never fails: text it does not recognise becomes a SourceOther event
// whose message is the text.
func Parse(r Record) Event {
	return parseRecord(r, time.Now)
}

// ParseReusing is Parse that puts the event's fields in fields (cleared
// first) instead of a new map, when the event has any: a reader that
// parses record after record (offline replay) spares a map per event. The
// event's Fields is then fields or nil, and is overwritten by the next
// call with the same map: a caller that keeps an event copies its Fields.
func ParseReusing(r Record, fields map[string]string) Event {
	clear(fields)
	return parseReusing(r, time.Now, fields)
}

// lineParse collects what the per-source parsers find in the header line of a
// record. The parsers fill it in; parseRecord turns it into the event.
type lineParse struct {
	ev        Event     // by value: a pointer to a local would make every event escape
	msg       string    // message part of the header line
	fullTime  time.Time // line time with a full date, zero if none
	partial   partialTime
	hasHeader bool              // msg follows a header that continuation lines may repeat (vLLM NewLineFormatter)
	timeOnly  bool              // lineTime: only the time is wanted, fields are not kept (no map to allocate)
	spare     map[string]string // empty map to take for the fields instead of a new one (ParseReusing)
}

// set records a field, allocating the map on first use so that events
// without fields cost no map.
func (p *lineParse) set(k, v string) {
	if p.timeOnly {
		return
	}
	if p.ev.Fields == nil {
		p.ev.Fields = p.spare
		if p.ev.Fields == nil {
			p.ev.Fields = make(map[string]string, 4)
		}
	}
	p.ev.Fields[k] = v
}

func (p *lineParse) has(k string) bool {
	_, ok := p.ev.Fields[k]
	return ok
}

// parseRecord is Parse with the clock injected, so that tests do not depend
// on the current year.
func parseRecord(r Record, now func() time.Time) Event {
	return parseReusing(r, now, nil)
}

// parseReusing is parseRecord taking an empty map for the fields, if not nil.
func parseReusing(r Record, now func() time.Time, fields map[string]string) Event {
	var p lineParse
	p.spare = fields
	p.ev.Record = r
	p.ev.Source = SourceOther
	ev := &p.ev

	// The header line is the first line with a non-blank payload: an NCCL
	// WARN starts with a newline, so a record may begin with an empty line
	// or a bare process prefix.
	text := r.Text
	var pbuf, scratch [4]Prefix
	var prefixes []Prefix
	var line, rest string
	lineEnd := 0
	for off := 0; ; {
		end := strings.IndexByte(text[off:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += off
		}
		l := trimCR(text[off:end])
		// Later lines split into scratch, so that the header line's
		// prefixes in pbuf survive a search that finds only blank lines.
		buf := pbuf[:0]
		if off > 0 {
			buf = scratch[:0]
		}
		ps, rs := splitPrefixesFast(buf, l)
		found := !isBlank(rs)
		if off == 0 || found {
			if off > 0 {
				ps = append(pbuf[:0], ps...)
			}
			line, rest, prefixes, lineEnd = l, rs, ps, end
		}
		if found || end == len(text) {
			break
		}
		off = end + 1
	}

	classify(&p, rest, prefixes)
	applyPrefixes(&p, prefixes)

	// Message: the header line without prefixes and header, then the
	// following lines with the same prefixes (and, for vLLM multi-line
	// records, the same repeated header) removed.
	if lineEnd >= len(text) {
		ev.Message = p.msg
	} else {
		prefixPart := line[:len(line)-len(rest)]
		header := ""
		if p.hasHeader {
			header = rest[:len(rest)-len(p.msg)]
		}
		ev.Message = joinContinuation(p.msg, text[lineEnd+1:], prefixPart, header)
	}
	if ev.Source != SourceNCCL {
		analyzeException(&p)
	}
	if ev.Source == SourceOther {
		rayTextHint(&p)
	}
	// An unrecognised payload of a vLLM process (print output, tqdm bars)
	// is still vLLM's.
	if ev.Source == SourceOther && isVLLMProcess(innermostName(prefixes)) {
		ev.Source = SourceVLLM
	}
	setRepeated(&p, p.msg)

	switch {
	case !p.fullTime.IsZero():
		ev.Time = p.fullTime
	case !r.Time.IsZero():
		ev.Time = r.Time
	case p.partial.ok:
		ev.Time = p.partial.complete(r.Time, now)
	}
	return p.ev
}

// classify detects the source of the header line's payload and fills p. The
// cheap first-byte switch keeps regexps and scans off the common path.
func classify(p *lineParse, s string, prefixes []Prefix) {
	ev := &p.ev
	p.msg = s
	// Ray forwards raylet and autoscaler output under their own names; the
	// payload may still be a Ray C++ line with its own header.
	if comp := rayPrefixComponent(prefixes); comp != "" {
		if parseRayCpp(p, s) || parseRayPython(p, s) {
			if ev.Component == "" {
				ev.Component = comp
			}
			if !p.has("ray_component") {
				p.set("ray_component", comp)
			}
			return
		}
		ev.Source = SourceRay
		ev.Component = comp
		if comp == "autoscaler" {
			ev.Level = autoscalerLevel(s)
		}
		return
	}
	if len(s) == 0 {
		return
	}
	switch c := s[0]; {
	case c == '[':
		if parseRayCpp(p, s) || parseNCCL(p, s) || parseSGLang(p, s) || parseC10(p, s) || parseBracketRay(p, s) {
			return
		}
	case c >= '0' && c <= '9':
		// A Ray Python log line, or an NCCL line whose host is a container ID.
		if parseRayPython(p, s) || parseTracing(p, s) || parseNCCL(p, s) {
			return
		}
	case c == 'D' || c == 'I' || c == 'W' || c == 'E' || c == 'C' || c == 'T':
		if parseVLLM(p, s) || parseUvicorn(p, s) || tracingLine(p, s, true) {
			return
		}
	}
	if parseNCCL(p, s) || parseRayText(p, s) || parsePythonWarning(p, s) || parseC10Frames(p, s) {
		return
	}
}

// applyPrefixes sets process, pid, ip (and rank) from the process prefixes.
// The innermost named prefix is the process that wrote the line; a prefix
// with ip= is Ray's forwarding of a remote worker, which is the most useful
// identity, so it is preferred.
func applyPrefixes(p *lineParse, prefixes []Prefix) {
	if len(prefixes) == 0 {
		return
	}
	ev := &p.ev
	chosen := -1
	for i := len(prefixes) - 1; i >= 0; i-- {
		if prefixes[i].IP != "" {
			chosen = i
			break
		}
	}
	if chosen < 0 {
		for i := len(prefixes) - 1; i >= 0; i-- {
			if isNamedPrefix(prefixes[i]) || prefixes[i].PID != 0 {
				chosen = i
				break
			}
		}
	}
	if chosen >= 0 {
		c := prefixes[chosen]
		if isNamedPrefix(c) {
			ev.Process = c.Process
		}
		if c.PID != 0 {
			ev.PID = c.PID
		}
		ev.IP = c.IP
	}
	for i := len(prefixes) - 1; i >= 0; i-- {
		if prefixes[i].Rank >= 0 {
			if !p.has("rank") {
				p.set("rank", itoa(prefixes[i].Rank))
			}
			break
		}
	}
}

func isNamedPrefix(pr Prefix) bool {
	return pr.Process != "" && !strings.HasPrefix(pr.Raw, "[")
}

func innermostName(prefixes []Prefix) string {
	for i := len(prefixes) - 1; i >= 0; i-- {
		if isNamedPrefix(prefixes[i]) {
			return prefixes[i].Process
		}
	}
	return ""
}

// isVLLMProcess reports whether a prefix name is one of the process names
// vLLM gives its processes or Ray actors.
func isVLLMProcess(name string) bool {
	switch name {
	case "", "raylet", "gcs_server", "autoscaler", "monitor", "dashboard", "log_monitor":
		return false
	case "APIServer", "VllmWorker", "VllmWorkerProcess", "RayWorkerWrapper", "RayWorkerVllm", "RayWorkerProc", "Worker", "EngineCore":
		return true
	}
	return strings.HasPrefix(name, "EngineCore") || strings.HasPrefix(name, "Worker_") ||
		strings.HasPrefix(name, "DPEngineCore") || strings.HasPrefix(name, "DPMoEEngineCore")
}

// rayPrefixComponent returns the Ray component named by a forwarded prefix
// such as "(raylet, ip=...)" or "(autoscaler +7s)".
func rayPrefixComponent(prefixes []Prefix) string {
	for i := len(prefixes) - 1; i >= 0; i-- {
		switch prefixes[i].Process {
		case "raylet", "gcs_server", "autoscaler", "monitor", "dashboard", "log_monitor":
			return prefixes[i].Process
		}
	}
	return ""
}

// joinContinuation builds the message of a multi-line record from the
// header line's message and the following lines, removing from each line the
// process prefixes of the header line and a repeated log header.
func joinContinuation(first, more, prefixPart, header string) string {
	var b strings.Builder
	b.Grow(len(first) + 1 + len(more))
	b.WriteString(first)
	bare := strings.TrimRight(prefixPart, " ")
	for {
		i := strings.IndexByte(more, '\n')
		l := more
		if i >= 0 {
			l, more = more[:i], more[i+1:]
		} else {
			more = ""
		}
		l = trimCR(l)
		if prefixPart != "" {
			if strings.HasPrefix(l, prefixPart) {
				l = l[len(prefixPart):]
			} else if l == bare {
				l = ""
			} else if bare != prefixPart && strings.HasPrefix(l, bare) {
				// "[rank0]:" is written with and without a following space.
				l = l[len(bare):]
			}
		}
		if header != "" && strings.HasPrefix(l, header) {
			l = l[len(header):]
		}
		b.WriteByte('\n')
		b.WriteString(l)
		if i < 0 {
			break
		}
	}
	return b.String()
}

func trimCR(s string) string {
	for len(s) > 0 && s[len(s)-1] == '\r' {
		s = s[:len(s)-1]
	}
	return s
}

func isBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != ' ' && s[i] != '\t' && s[i] != '\r' {
			return false
		}
	}
	return true
}

// normLevel maps the level words of Python loggers, glog letters and NCCL
// levels to the normalised levels; "" when unknown.
func normLevel(s string) string {
	switch s {
	case "DEBUG", "TRACE", "CALL", "D", "T":
		return LevelDebug
	case "INFO", "SUCC", "I":
		return LevelInfo
	case "WARNING", "WARN", "W":
		return LevelWarning
	case "ERROR", "E":
		return LevelError
	case "CRITICAL", "FATAL", "F", "C":
		return LevelCritical
	}
	return ""
}

// levelWord returns the Python logging level word that starts s (followed by
// sep) and its length, or "" if there is none.
func levelWord(s string, sep byte) (string, int) {
	for _, w := range [...]string{"INFO", "DEBUG", "WARNING", "ERROR", "CRITICAL", "SUCC"} {
		if len(s) > len(w) && s[len(w)] == sep && s[:len(w)] == w {
			return w, len(w)
		}
	}
	return "", 0
}

// fileLine reports whether s is "file:line" (no blanks, digits after the last
// colon) and returns its parts.
func fileLine(s string) (file, line string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i <= 0 || i == len(s)-1 || !allDigits(s[i+1:]) {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		if c := s[j]; c == ' ' || c == '\t' || c == '[' || c == ']' {
			return "", "", false
		}
	}
	return s[:i], s[i+1:], true
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// leadingDigits returns the run of ASCII digits at the start of s.
func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

func atoi(s string) int {
	n := 0
	for i := 0; i < len(s) && i < 9; i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}

func itoa(n int) string {
	if n >= 0 && n < 10 {
		return "0123456789"[n : n+1]
	}
	var b [20]byte
	i := len(b)
	neg := n < 0
	if neg {
		n = -n
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}

// lineTime is the time Parse finds on a record whose header line is text:
// a full date, else a partial one completed like Parse does; zero when the
// line has none. now gives a partial time its year (when it returns zero:
// the clock); it is called only then. The Joiner uses it to give a record
// without a time the time of its writer's previous record.
func lineTime(text string, now func() time.Time) time.Time {
	var p lineParse
	p.ev.Source = SourceOther
	p.timeOnly = true
	var buf [4]Prefix
	ps, rest := splitPrefixesFast(buf[:0], trimCR(text))
	if isBlank(rest) || !hasClock(rest) {
		return time.Time{}
	}
	classify(&p, rest, ps)
	switch {
	case !p.fullTime.IsZero():
		return p.fullTime
	case p.partial.ok:
		if n := now(); !n.IsZero() {
			return p.partial.complete(time.Time{}, func() time.Time { return n })
		}
		return p.partial.complete(time.Time{}, time.Now)
	}
	return time.Time{}
}

// hasClock reports whether s holds "d:dd:d", the HH:MM:SS that every line
// time Parse knows (full or partial) contains: a line without one (most
// NCCL INFO lines, print output) needs no classify to know it has no time.
func hasClock(s string) bool {
	for i := 1; i+3 < len(s); {
		k := strings.IndexByte(s[i:], ':')
		if k < 0 {
			return false
		}
		i += k
		if i+3 < len(s) && isDigit(s[i-1]) && isDigit(s[i+1]) && isDigit(s[i+2]) && s[i+3] == ':' {
			return true
		}
		i++
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
