package parsers

import "strings"

// parseNCCL parses NCCL debug output (docs/log-formats.md §4.1):
//
//	host:pid:tid [cudaDev] NCCL INFO msg
//	[2026-11-29 20:00:53] host:pid:tid [cudaDev] bootstrap.cc:114 NCCL WARN msg
//	host:pid:tid [cudaDev] file.cc:line (function) NCCL WARN msg      (>= 2.30.7)
//	host:pid:tid [cudaDev] 12.345678 func:line NCCL TRACE msg
//	NCCL version 2.21.5+cuda12.4
//
// Pasted excerpts also drop the host part ("NCCL INFO msg",
// "misc/ibvwrap.cc:212 NCCL WARN msg") or add markdown ("**NCCL WARN ...**").
func parseNCCL(p *lineParse, s string) bool {
	if strings.HasPrefix(s, "NCCL version ") {
		p.ev.Source = SourceNCCL
		p.ev.Level = LevelInfo
		p.msg = s
		ncclVersion(p, s[len("NCCL version "):])
		return true
	}
	k, kw := findNCCLKeyword(s)
	if k < 0 {
		return false
	}
	head := strings.TrimRight(s[:k], " *")
	msg := s[k+len("NCCL ")+len(kw):]
	if len(msg) > 0 && msg[0] == ' ' {
		msg = msg[1:]
	}
	var (
		dateTime                      string
		host, pid, tid, dev, comp, fn string
	)
	// The head is a sequence of optional, ordered parts; anything else means
	// the keyword was only mentioned in some other text.
	// A backtick opening a markdown code span ("`host:pid:tid [0] NCCL ..."),
	// here where a squashed paste put it mid-line: the paste's, not the
	// host's (at a line's start the Decoder already took it off).
	h := strings.TrimLeft(head, "`")
	if strings.HasPrefix(h, "[") {
		if j := strings.IndexByte(h, ']'); j > 0 {
			if _, ok := parseDateTime(h[1:j]); ok {
				dateTime, h = h[1:j], strings.TrimLeft(h[j+1:], " ")
			}
		}
	}
	for h != "" {
		tok := h
		if j := strings.IndexByte(h, ' '); j >= 0 {
			tok, h = h[:j], strings.TrimLeft(h[j+1:], " ")
		} else {
			h = ""
		}
		switch {
		case host == "" && dev == "" && comp == "" && isHostPidTid(tok):
			a := strings.IndexByte(tok, ':')
			b := strings.LastIndexByte(tok, ':')
			host, pid, tid = tok[:a], tok[a+1:b], tok[b+1:]
		case dev == "" && comp == "" && len(tok) > 2 && tok[0] == '[' && tok[len(tok)-1] == ']' && allDigits(tok[1:len(tok)-1]):
			dev = tok[1 : len(tok)-1]
		case comp == "" && isTraceTime(tok):
			// TRACE lines carry milliseconds since init before func:line.
		case comp == "":
			if _, _, ok := fileLine(tok); !ok {
				return false
			}
			comp = tok
		case fn == "" && strings.HasPrefix(tok, "("):
			// "(function)" may contain blanks only in theory; take the rest.
			fn = strings.TrimSuffix(strings.TrimPrefix(tok+restWithSpace(h), "("), ")")
			h = ""
		default:
			return false
		}
	}
	ev := &p.ev
	ev.Source = SourceNCCL
	ev.Level = normLevel(kw)
	if strings.HasSuffix(s[:k], "**") {
		msg = strings.TrimSuffix(msg, "**")
	}
	p.msg = msg
	if dateTime != "" {
		p.fullTime, _ = parseDateTime(dateTime)
	}
	if host != "" {
		p.set("host", host)
		p.set("pid", pid)
		p.set("tid", tid)
		ev.PID = atoi(pid)
	}
	if dev != "" {
		p.set("cuda_dev", dev)
	}
	if fn != "" {
		p.set("function", fn)
	}
	ev.Component = comp
	if !p.timeOnly {
		ncclMessageFields(p, msg)
	}
	return true
}

func restWithSpace(h string) string {
	if h == "" {
		return ""
	}
	return " " + h
}

// findNCCLKeyword finds "NCCL INFO", "NCCL WARN", "NCCL TRACE" or "NCCL CALL"
// followed by a blank or the end of s.
func findNCCLKeyword(s string) (int, string) {
	off := 0
	for {
		i := strings.Index(s[off:], "NCCL ")
		if i < 0 {
			return -1, ""
		}
		i += off
		r := s[i+len("NCCL "):]
		for _, kw := range [...]string{"INFO", "WARN", "TRACE", "CALL"} {
			if strings.HasPrefix(r, kw) && (len(r) == len(kw) || r[len(kw)] == ' ') {
				if i == 0 || s[i-1] == ' ' || s[i-1] == '*' {
					return i, kw
				}
			}
		}
		off = i + len("NCCL ")
	}
}

// isHostPidTid reports whether tok is "host:pid:tid".
func isHostPidTid(tok string) bool {
	b := strings.LastIndexByte(tok, ':')
	if b <= 0 || !allDigits(tok[b+1:]) {
		return false
	}
	a := strings.LastIndexByte(tok[:b], ':')
	return a > 0 && allDigits(tok[a+1:b])
}

func isTraceTime(tok string) bool {
	d := strings.IndexByte(tok, '.')
	return d > 0 && allDigits(tok[:d]) && allDigits(tok[d+1:])
}

// ncclMessageFields extracts rank, nranks, interface, address, version and
// env settings from NCCL INFO/WARN messages.
func ncclMessageFields(p *lineParse, msg string) {
	if len(msg) == 0 {
		return
	}
	switch msg[0] {
	case 'B':
		// "Bootstrap : Using eth0:172.17.2.7<0>" (<= 2.25), "Bootstrap: Using ..." (>= 2.26)
		if r, ok := cutPrefix2(msg, "Bootstrap : Using ", "Bootstrap: Using "); ok {
			ncclInterface(p, r)
			return
		}
	case 'N':
		if r, ok := strings.CutPrefix(msg, "NET/Socket : Using "); ok {
			ncclInterface(p, r)
			return
		}
		if r, ok := strings.CutPrefix(msg, "NCCL version "); ok {
			ncclVersion(p, r)
			return
		}
	}
	// "NCCL_SOCKET_IFNAME set by environment to ib0nonexistent"
	if i := strings.Index(msg, " set by environment to "); i > 0 && strings.IndexByte(msg[:i], ' ') < 0 {
		p.set("env", msg[:i])
		p.set("env_value", strings.TrimSuffix(msg[i+len(" set by environment to "):], "."))
		return
	}
	// Error propagation chatter: "init.cc:126 -> 5" / ".../socket.cc:49 -> 3 (strerror)",
	// from 2.30.7 with the function: "init.cc:126 (initTransportsRank) -> 5".
	if i := strings.Index(msg, " -> "); i > 0 && p.ev.Component == "" {
		loc := msg[:i]
		if f := strings.IndexByte(loc, ' '); f > 0 && len(loc) > f+2 && loc[f+1] == '(' && loc[len(loc)-1] == ')' && !strings.ContainsAny(loc[f+2:len(loc)-1], " ()") {
			loc = loc[:f]
		}
		if _, _, ok := fileLine(loc); ok {
			if code := leadingDigits(msg[i+4:]); code != "" {
				p.ev.Component = loc
				p.set("nccl_result", code)
				return
			}
		}
	}
	// "... comm 0x26a187b0 rank 1 nranks 2 cudaDev 1 ..." / "rank 1 nRanks 2 nNodes 1"
	if i := strings.Index(msg, "rank "); i >= 0 && (i == 0 || msg[i-1] == ' ') {
		if r := leadingDigits(msg[i+len("rank "):]); r != "" {
			p.set("rank", r)
			rest := msg[i+len("rank ")+len(r):]
			if n, ok := cutPrefix2(rest, " nranks ", " nRanks "); ok {
				if d := leadingDigits(n); d != "" {
					p.set("nranks", d)
				}
			}
		}
	}
}

func cutPrefix2(s, a, b string) (string, bool) {
	if r, ok := strings.CutPrefix(s, a); ok {
		return r, true
	}
	return strings.CutPrefix(s, b)
}

// ncclInterface parses "[0]eth0:172.17.0.2<0> [1]..." or "eth0:192.0.2.2<0>"
// and records the first interface and its address.
func ncclInterface(p *lineParse, s string) {
	if len(s) > 0 && s[0] == '[' {
		j := strings.IndexByte(s, ']')
		if j < 0 {
			return
		}
		s = s[j+1:]
	}
	if j := strings.IndexByte(s, ' '); j >= 0 {
		s = s[:j]
	}
	c := strings.IndexByte(s, ':')
	if c <= 0 {
		return
	}
	addr := s[c+1:]
	if j := strings.IndexByte(addr, '<'); j >= 0 {
		addr = addr[:j]
	}
	p.set("interface", s[:c])
	if addr != "" {
		p.set("address", addr)
	}
}

// ncclVersion parses "2.21.5+cuda12.4" (a suffix such as "-1" may follow the
// numbers).
func ncclVersion(p *lineParse, s string) {
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	if i == 0 {
		return
	}
	p.set("version", s[:i])
	if j := strings.Index(s, "+cuda"); j >= 0 {
		c := s[j+len("+cuda"):]
		k := 0
		for k < len(c) && (c[k] >= '0' && c[k] <= '9' || c[k] == '.') {
			k++
		}
		if k > 0 {
			p.set("cuda_version", c[:k])
		}
	}
}
