package parsers

import "strings"

// analyzeException finds Python exceptions in the event's message: a
// traceback (possibly chained, possibly cut so that only frames remain), or a
// bare exception line such as "ValueError: Model architectures ...". It sets
// exc_type and exc_message from the last exception, exc_chain when there
// were several, and attributes records that no header claimed to the
// framework the exception type or the frames name.
func analyzeException(p *lineParse) {
	ev := &p.ev
	msg := ev.Message
	multi := strings.IndexByte(msg, '\n') >= 0
	// A one-line record holds at most a piece of a traceback; scanning it
	// for the header would cost every line a search.
	if strings.HasPrefix(msg, "Traceback (most recent call last)") || strings.HasPrefix(msg, "  File \"") ||
		multi && (strings.Contains(msg, "Traceback (most recent call last)") || strings.Contains(msg, "\n  File \"")) {
		analyzeTraceback(p, msg)
		return
	}
	// A bare exception line: only the first line, and only a name that is
	// surely an exception, so that "Note: ..." stays text.
	first := msg
	if i := strings.IndexByte(first, '\n'); i >= 0 {
		first = first[:i]
	}
	typ, m, ok := excLine(first, true)
	if !ok {
		return
	}
	p.set("exc_type", typ)
	p.set("exc_message", m)
	attribute(p, typ, "")
}

func analyzeTraceback(p *lineParse, msg string) {
	var (
		chain              [8]string
		n                  int
		typ, m             string
		frameFW, lastFW    string
		inTB, found, trace bool
	)
	for rest := msg; ; {
		l := rest
		i := strings.IndexByte(rest, '\n')
		if i >= 0 {
			l, rest = rest[:i], rest[i+1:]
		}
		switch {
		case strings.Contains(l, "Traceback (most recent call last)"):
			inTB, trace, frameFW = true, true, ""
		case strings.HasPrefix(l, "  File \""):
			inTB, trace = true, true
			if fw := frameFramework(l[len("  File \""):]); fw != "" {
				frameFW = fw
			}
		case inTB && l != "" && l[0] != ' ' && l[0] != '\t':
			// The first unindented line after the frames is the exception.
			inTB = false
			if t, mm, ok := excLine(l, false); ok {
				typ, m, found, lastFW = t, mm, true, frameFW
				if n < len(chain) {
					chain[n] = t
					n++
				}
			}
		}
		if i < 0 {
			break
		}
	}
	if !trace {
		return
	}
	if found {
		p.set("exc_type", typ)
		p.set("exc_message", m)
		if n > 1 {
			p.set("exc_chain", strings.Join(chain[:n], ","))
		}
	} else {
		lastFW = frameFW
	}
	attribute(p, typ, lastFW)
}

// attribute gives a record that no header claimed (source other or python)
// to the framework named by the exception type, else by the innermost
// framework frame, else to python; an exception without a level is an error.
func attribute(p *lineParse, typ, frameFW string) {
	ev := &p.ev
	if ev.Level == "" {
		ev.Level = LevelError
	}
	if ev.Source != SourceOther && ev.Source != SourcePython {
		return
	}
	switch {
	case strings.HasPrefix(typ, "ray."):
		ev.Source = SourceRay
	case strings.HasPrefix(typ, "torch."):
		ev.Source = SourceTorch
	case strings.HasPrefix(typ, "vllm."):
		ev.Source = SourceVLLM
	case frameFW != "":
		ev.Source = frameFW
	default:
		ev.Source = SourcePython
	}
}

// frameFramework returns the framework a traceback frame's file belongs to,
// from the path that follows `  File "`.
func frameFramework(s string) string {
	if j := strings.IndexByte(s, '"'); j >= 0 {
		s = s[:j]
	}
	return pathFramework(s)
}

func pathFramework(path string) string {
	// Use the package right after site-packages when there is one, since
	// an installation may itself live under a directory named torch or ray.
	for _, d := range [...]string{"site-packages/", "dist-packages/"} {
		if i := strings.LastIndex(path, d); i >= 0 {
			pkg := path[i+len(d):]
			if j := strings.IndexByte(pkg, '/'); j >= 0 {
				pkg = pkg[:j]
			}
			switch pkg {
			case "vllm", "ray", "torch":
				return pkg
			}
			return ""
		}
	}
	switch {
	case strings.Contains(path, "/vllm/"):
		return SourceVLLM
	case strings.Contains(path, "/ray/"):
		return SourceRay
	case strings.Contains(path, "/torch/"):
		return SourceTorch
	}
	return ""
}

// excLine parses a Python exception line "pkg.mod.Type: message" (or
// "Type" alone, or "ray.exceptions.RayTaskError(ValueError): ..."). When
// strict, the name must end in Error, Exception, Exit or Interrupt and a
// message must follow, because the line was not found after a traceback.
func excLine(l string, strict bool) (typ, msg string, ok bool) {
	i := 0
	for i < len(l) {
		c := l[i]
		if c == '_' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			i++
			continue
		}
		break
	}
	if i == 0 || l[0] == '.' || l[i-1] == '.' {
		return "", "", false
	}
	name := l[:i]
	if i < len(l) && l[i] == '(' {
		j := strings.IndexByte(l[i:], ')')
		if j < 0 {
			return "", "", false
		}
		i += j + 1
	}
	typ = l[:i]
	switch {
	case i == len(l):
		if strict {
			return "", "", false
		}
	case l[i] == ':' && (i+1 == len(l) || l[i+1] == ' '):
		msg = strings.TrimSpace(l[i+1:])
	default:
		return "", "", false
	}
	if strict {
		// "Error: ..." is how the autoscaler and many tools start a
		// message; Python has no exception of that name.
		base := name[strings.LastIndexByte(name, '.')+1:]
		if base == "Error" || !strings.HasSuffix(base, "Error") && !strings.HasSuffix(base, "Exception") &&
			!strings.HasSuffix(base, "Exit") && !strings.HasSuffix(base, "Interrupt") {
			return "", "", false
		}
	}
	return typ, msg, true
}

// parsePythonWarning parses the warnings module's output and bare
// "Warning:" lines:
//
//	/opt/.../ray/_private/worker.py:2046: FutureWarning: Tip: ...
//	Warning: something
func parsePythonWarning(p *lineParse, s string) bool {
	ev := &p.ev
	if strings.HasPrefix(s, "Warning: ") {
		ev.Source = SourcePython
		ev.Level = LevelWarning
		p.msg = s[len("Warning: "):]
		return true
	}
	i := strings.Index(s, ".py:")
	if i <= 0 {
		return false
	}
	path := s[:i+3]
	if strings.IndexByte(path, ' ') >= 0 {
		return false
	}
	rest := s[i+4:]
	line := leadingDigits(rest)
	if line == "" || !strings.HasPrefix(rest[len(line):], ": ") {
		return false
	}
	rest = rest[len(line)+2:]
	typ, msg, ok := excLine(rest, false)
	if !ok || !strings.HasSuffix(typ, "Warning") {
		return false
	}
	ev.Source = SourcePython
	if fw := pathFramework(path); fw != "" {
		ev.Source = fw
	}
	ev.Level = LevelWarning
	ev.Component = s[strings.LastIndexByte(path, '/')+1 : i+4+len(line)]
	p.msg = msg
	p.set("warning_type", typ)
	return true
}
