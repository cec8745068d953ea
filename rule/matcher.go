package rule

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// A matcher is the compiled match of a catalog entry: its regex (or
// field), the literals that let one Aho-Corasick pass per event skip it,
// and its filters.
type matcher struct {
	match     Match // the matcher as written
	re        *regexp.Regexp
	literals  []string       // every match contains one of these: a cheap pre-check
	also      []string       // every match contains all of these too (checked before the regex)
	lineLocal bool           // the regex can only match within one line
	lineRe    *regexp.Regexp // the regex anchored at the start of a line, for "(?m)^..." regexes
	// lead: every match starts with one of these spellings (of the
	// regex's first parts), and led is the regex anchored at the start,
	// tried only where one occurs. Go's regexp skips ahead to a single
	// literal prefix itself, but tries every position of the text for
	// "(?:Ring|Channel) \d+ ..." (5-20x the anchored runs on loggen lines).
	lead []string
	led  *regexp.Regexp
	// bol: a "(?m)^..." regex that may cross lines, anchored at the start
	// of the text, tried at each line start only (kubectl's pod rows:
	// 8-13 us a line containing "Error" and "/" unanchored, 0.2 anchored).
	bol     *regexp.Regexp
	groups  []string
	sources []string // nil: any; a few words, so a list beats a map's hashing (checked on every event)
	levels  []string

	mu      sync.Mutex
	regexps map[string]*regexp.Regexp // compiled on first use by sum_matches/count_matches
}

// compileMatch builds a matcher: its regex (or field), the literals that
// let the Aho-Corasick pass skip it, and its filters.
func compileMatch(ms Match, path string) (*matcher, error) {
	m := &matcher{match: ms}
	if (ms.Regex == "") == (ms.Field == "") {
		return nil, ferr(path, "a matcher needs exactly one of 'regex' or 'field'")
	}
	switch ms.Combine {
	case "", "each", "sum", "count":
	default:
		return nil, ferr(path+".combine", "combine %q is not each, sum or count", ms.Combine)
	}
	if len(ms.Sources) > 0 {
		m.sources = slices.Clone(ms.Sources)
	}
	if len(ms.Levels) > 0 {
		m.levels = slices.Clone(ms.Levels)
	}
	if ms.Regex != "" {
		re, err := regexp.Compile(ms.Regex)
		if err != nil {
			return nil, ferr(path+".regex", "regex: %v", err)
		}
		m.re = re
		m.groups = re.SubexpNames()
		if lits := requiredLiterals(ms.Regex); score(lits) >= minLiteral {
			m.literals = lits
		}
		m.also = alsoLiterals(ms.Regex, m.literals)
		m.lineLocal = lineLocal(ms.Regex)
		if p, _ := re.LiteralPrefix(); p == "" {
			if lead := leadingLiterals(ms.Regex); lead != nil {
				if led, err := regexp.Compile(`^(?:` + ms.Regex + `)`); err == nil {
					m.lead, m.led = lead, led
				}
			}
		}
		if m.lineLocal && strings.HasPrefix(ms.Regex, "(?m)^") {
			// On one line, "^" (start of text) is where "(?m)^" can match,
			// and an anchored regex is tried at one position only.
			m.lineRe, _ = regexp.Compile("^" + ms.Regex[len("(?m)^"):])
		} else if len(m.literals) > 0 && m.led == nil && startsAtLine(ms.Regex) {
			m.bol, _ = regexp.Compile(`\A(?:` + ms.Regex + `)`)
		}
	}
	return m, nil
}

// minLiteral is the shortest literal worth pre-checking; shorter ones (a
// space, "ip") occur in nearly every line.
const minLiteral = 3

// requiredLiterals returns a set of literals such that every match of the
// regex contains at least one of them, so most events are rejected by one
// Aho-Corasick pass before the regex engine runs: the longest literal of a
// concatenation, or one per branch of an alternation. nil when there is no
// useful set (or the regex folds case).
func requiredLiterals(src string) []string {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil
	}
	return literalSet(re.Simplify())
}

// lineLocal reports whether a regex can only match inside one line: nothing
// in it matches a newline, and it has no start/end-of-text anchors (those
// would mean something else on a single line).
func lineLocal(src string) bool {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return false
	}
	ok := true
	var walk func(r *syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpAnyChar, syntax.OpBeginText, syntax.OpEndText:
			ok = false
		case syntax.OpLiteral:
			for _, c := range r.Rune {
				if c == '\n' {
					ok = false
				}
			}
		case syntax.OpCharClass:
			for i := 0; i+1 < len(r.Rune); i += 2 {
				if r.Rune[i] <= '\n' && '\n' <= r.Rune[i+1] {
					ok = false
				}
			}
		}
		for _, sub := range r.Sub {
			walk(sub)
		}
	}
	walk(re)
	return ok
}

// startsAtLine reports whether every match of a regex starts at a line
// start, and it reads nothing before where it starts but that: "(?m)^"
// heads its top-level concatenation, and it has no start-of-text anchor
// (true at every line of a text cut at line starts). Its match at a line
// start is then that of the anchored regex on the text from there ("\b"
// sees a newline or the start of text before it: neither is a word).
func startsAtLine(src string) bool {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return false
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat || len(re.Sub) < 2 || re.Sub[0].Op != syntax.OpBeginLine {
		return false
	}
	ok := true
	var walk func(r *syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		if r.Op == syntax.OpBeginText {
			ok = false
		}
		for _, sub := range r.Sub {
			walk(sub)
		}
	}
	walk(re)
	return ok
}

// maxLead bounds the spellings tried as a regex's leading literals.
const maxLead = 8

// leadingLiterals returns the strings every match of the regex starts
// with, when they are few and none is shorter than minLiteral: the
// spellings of the first parts of its concatenation that have few
// ("(?P<who>Bootstrap|NET/Socket) ?: Using " gives four). nil when the
// regex starts with anything else (a class of many, an assertion).
func leadingLiterals(src string) []string {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	subs := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		subs = re.Sub
	}
	run := []string{""}
	for _, sub := range subs {
		set, ok := exactSet(sub)
		if !ok {
			break
		}
		prod, ok := crossProduct(run, set)
		if !ok || len(prod) > maxLead {
			break
		}
		run = prod
	}
	if score(run) < minLiteral {
		return nil // "" among them: no part taken, or an optional one
	}
	return run
}

// alsoLiterals returns the literals of the regex's top-level concatenation
// other than the trigger set: a line with " GPU" but no "/" cannot be a
// `ray status` GPU line, and strings.Contains says so far faster than the
// regex engine.
func alsoLiterals(src string, trigger []string) []string {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return nil
	}
	re = re.Simplify()
	if re.Op != syntax.OpConcat {
		return nil
	}
	var out []string
	for _, sub := range re.Sub {
		set := literalSet(sub)
		if len(set) != 1 || (len(trigger) == 1 && trigger[0] == set[0]) {
			continue
		}
		out = append(out, set[0])
	}
	return out
}

// score is the length of the shortest literal of a set: a longer one is
// rarer in logs, so it filters more.
func score(set []string) int {
	if len(set) == 0 {
		return 0
	}
	m := len(set[0])
	for _, s := range set[1:] {
		m = min(m, len(s))
	}
	return m
}

func literalSet(r *syntax.Regexp) []string {
	switch r.Op {
	case syntax.OpLiteral:
		if r.Flags&syntax.FoldCase != 0 {
			return nil
		}
		return []string{string(r.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return literalSet(r.Sub[0]) // x+ contains x
	case syntax.OpRepeat:
		if r.Min >= 1 {
			return literalSet(r.Sub[0])
		}
	case syntax.OpConcat:
		var best []string
		for _, sub := range r.Sub {
			if set := literalSet(sub); score(set) > score(best) {
				best = set
			}
		}
		// A run of parts with few spellings each is one literal per
		// spelling of the run: "0(?:\.0)?/0(?:\.0)? GPU" needs one of
		// "0/0 GPU", "0.0/0 GPU", ... (not just " GPU", in every `ray
		// status`), "NCCL_(?:NET|IB_HCA)=" one of "NCCL_NET=",
		// "NCCL_IB_HCA=".
		for i := 0; i < len(r.Sub); {
			run, ok := exactSet(r.Sub[i])
			if !ok {
				i++
				continue
			}
			j := i + 1
			for ; j < len(r.Sub); j++ {
				next, ok := exactSet(r.Sub[j])
				if !ok {
					break
				}
				prod, ok := crossProduct(run, next)
				if !ok {
					break
				}
				run = prod
			}
			if score(run) > score(best) {
				best = run
			}
			i = j
		}
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range r.Sub {
			set := literalSet(sub)
			if len(set) == 0 {
				return nil
			}
			all = append(all, set...)
		}
		return all
	}
	return nil
}

// maxExact bounds the spellings of an exact set: beyond it a part is
// treated as matching anything.
const maxExact = 32

// exactSet returns every string r can match when they are few (at most
// maxExact): a literal, a small class, an alternation, an optional part
// ("" among them), a concatenation of such.
func exactSet(r *syntax.Regexp) ([]string, bool) {
	switch r.Op {
	case syntax.OpLiteral:
		if r.Flags&syntax.FoldCase == 0 {
			return []string{string(r.Rune)}, true
		}
		// [Aa]ddress parses as a case-folded "A": its few spellings.
		out := []string{""}
		for _, c := range r.Rune {
			var spell []string
			for f := c; ; {
				spell = append(spell, string(f))
				if f = unicode.SimpleFold(f); f == c {
					break
				}
			}
			var ok bool
			if out, ok = crossProduct(out, spell); !ok {
				return nil, false
			}
		}
		return out, true
	case syntax.OpEmptyMatch:
		return []string{""}, true
	case syntax.OpCapture:
		return exactSet(r.Sub[0])
	case syntax.OpCharClass:
		var out []string
		for i := 0; i+1 < len(r.Rune); i += 2 {
			if r.Rune[i+1]-r.Rune[i] >= maxExact {
				return nil, false
			}
			for c := r.Rune[i]; c <= r.Rune[i+1]; c++ {
				if out = append(out, string(c)); len(out) > 4 {
					return nil, false // [0-9], \w: a class of many is no literal
				}
			}
		}
		return out, len(out) > 0
	case syntax.OpQuest:
		sub, ok := exactSet(r.Sub[0])
		if !ok || len(sub) >= maxExact {
			return nil, false
		}
		return append([]string{""}, sub...), true
	case syntax.OpAlternate:
		var out []string
		for _, sub := range r.Sub {
			set, ok := exactSet(sub)
			if !ok || len(out)+len(set) > maxExact {
				return nil, false
			}
			out = append(out, set...)
		}
		return out, true
	case syntax.OpConcat:
		out := []string{""}
		for _, sub := range r.Sub {
			set, ok := exactSet(sub)
			if !ok {
				return nil, false
			}
			if out, ok = crossProduct(out, set); !ok {
				return nil, false
			}
		}
		return out, true
	}
	return nil, false
}

// crossProduct returns every a+b, false when they are more than maxExact.
func crossProduct(as, bs []string) ([]string, bool) {
	if len(as)*len(bs) > maxExact {
		return nil, false
	}
	out := make([]string, 0, len(as)*len(bs))
	seen := map[string]bool{}
	for _, a := range as {
		for _, b := range bs {
			if s := a + b; !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out, true
}

// sumMatches adds up the first group of every match of re in s; with
// count_matches it lets a rule total the GPUs of a list of bundles.
func (m *matcher) sumMatches(params ...any) (any, error) {
	re, err := m.cachedRegexp(params[1].(string))
	if err != nil {
		return 0.0, err
	}
	total := 0.0
	for _, sm := range re.FindAllStringSubmatch(params[0].(string), -1) {
		if len(sm) > 1 {
			if f, ok := parseNumber(sm[1]); ok {
				total += f
			}
		}
	}
	return total, nil
}

func (m *matcher) countMatches(params ...any) (any, error) {
	re, err := m.cachedRegexp(params[1].(string))
	if err != nil {
		return 0.0, err
	}
	return float64(len(re.FindAllStringIndex(params[0].(string), -1))), nil
}

func (m *matcher) cachedRegexp(src string) (*regexp.Regexp, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if re, ok := m.regexps[src]; ok {
		return re, nil
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, err
	}
	if m.regexps == nil {
		m.regexps = map[string]*regexp.Regexp{}
	}
	m.regexps[src] = re
	return re, nil
}

func numFunc(params ...any) (any, error) {
	switch v := params[0].(type) {
	case float64:
		return v, nil
	case int:
		return float64(v), nil
	case string:
		f, ok := parseNumber(v)
		if !ok {
			return 0.0, nil
		}
		return f, nil
	}
	return 0.0, nil
}
