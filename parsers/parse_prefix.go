package parsers

import "strings"

// splitPrefixesFast returns the same as SplitPrefixes, but recognises the
// common prefix forms by hand, appending to buf so that the usual one or two
// prefixes cost no allocation and no regexp. Anything unusual (names with
// blanks, "(autoscaler +7s)", very long numbers) goes to SplitPrefixes, which
// stays the one definition of a prefix; a fuzz test keeps the two equal.
func splitPrefixesFast(buf []Prefix, text string) ([]Prefix, string) {
	if len(text) == 0 || (text[0] != '(' && text[0] != '[') {
		return nil, text
	}
	out := buf[:0]
	rest := text
	for len(rest) > 0 {
		var p Prefix
		var n int
		switch rest[0] {
		case '(':
			p, n = parenPrefix(rest)
		case '[':
			p, n = rankPrefix(rest)
		}
		if n == 0 {
			break
		}
		if n < 0 {
			return SplitPrefixes(text)
		}
		out = append(out, p)
		rest = rest[n:]
	}
	if len(out) == 0 {
		return nil, text
	}
	return out, rest
}

// parenPrefix parses "(Name pid=N)", "(Name pid=N, ip=A)", "(pid=N)",
// "(raylet, ip=A)" or "(raylet)" followed by a blank. It returns the bytes
// consumed; 0 when text surely starts with no prefix, -1 when unsure.
func parenPrefix(text string) (Prefix, int) {
	p := Prefix{Rank: -1}
	i := 1
	for i < len(text) && isNameByte(text[i], i == 1) {
		i++
	}
	name := text[1:i]
	if i < len(text) && text[i] == ':' {
		return p, -1 // names may contain ':' in SplitPrefixes' grammar
	}
	// " pid=N" after a name, "pid=N" alone.
	if name != "" && strings.HasPrefix(text[i:], " pid=") {
		i += len(" pid=")
	} else if name == "pid" && i < len(text) && text[i] == '=' {
		name = ""
		i++
	} else {
		i = -i // no pid
	}
	if i > 0 {
		d := leadingDigits(text[i:])
		if d == "" || len(d) > 9 {
			return p, -1
		}
		p.PID = atoi(d)
		i += len(d)
	} else {
		i = -i
	}
	if strings.HasPrefix(text[i:], ", ip=") {
		j := i + len(", ip=")
		k := j
		for k < len(text) && isIPByte(text[k]) {
			k++
		}
		if k == j {
			return p, -1
		}
		p.IP = text[j:k]
		i = k
	}
	if !strings.HasPrefix(text[i:], ") ") {
		return p, -1
	}
	p.Process = name
	p.Raw = text[:i+1]
	if p.PID == 0 && p.IP == "" && !strings.HasPrefix(text[1:], "pid=") {
		if !knownPrefixComponent(name, p.Raw) {
			return p, checkNotPrefix(text)
		}
	}
	return p, i + 2
}

// checkNotPrefix decides a parenthesised text without pid or ip: it is text
// ("(base) root@host", "(most recent call last)") unless SplitPrefixes knows
// better, which only the slow path can tell in general.
func checkNotPrefix(text string) int {
	if ps, _ := SplitPrefixes(text); len(ps) > 0 {
		return -1
	}
	return 0
}

// rankPrefix parses torch's "[rankN]:" with an optional blank.
func rankPrefix(text string) (Prefix, int) {
	if !strings.HasPrefix(text, "[rank") {
		return Prefix{}, 0
	}
	d := leadingDigits(text[len("[rank"):])
	if d == "" || len(d) > 9 {
		if d == "" {
			return Prefix{}, 0
		}
		return Prefix{}, -1
	}
	end := len("[rank") + len(d)
	if !strings.HasPrefix(text[end:], "]:") {
		return Prefix{}, 0
	}
	end += 2
	p := Prefix{Raw: text[:end], Process: text[1 : 1+len("rank")+len(d)], Rank: atoi(d)}
	if end < len(text) && text[end] == ' ' {
		end++
	}
	return p, end
}

func isNameByte(c byte, first bool) bool {
	if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' {
		return true
	}
	return !first && (c >= '0' && c <= '9' || c == '.' || c == '-')
}

func isIPByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '.' || c == ':'
}
