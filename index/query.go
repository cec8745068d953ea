package index

import (
	"fmt"
	"math"
	"net/netip"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/blevesearch/bleve/v2/analysis"
)

// QuerySyntax documents the language ParseQuery accepts; the CLI help and
// the web UI show it.
const QuerySyntax = `Terms are matched in the log message exactly as typed, punctuation included:
  192.168.200.12   node:192.168.200.12   ray_utils.py   enp1s0f0np0   RayActorError
A term also matches as part of a longer token: 192.168 finds 192.168.200.12,
RayActorError finds ray.exceptions.RayActorError. Case does not matter.
An address (192.168.200.12, 10.1.230.180:6379, node:192.168.200.12) matches that token as written.
  error timeout        all terms must match (AND)
  a b OR c             either (a AND b) or c
  -term  NOT term      exclude
  "exact phrase"       words in this order
  ray*  192.168.*      wildcards (* any run, ? one character)
  NCCL~1               fuzzy (edit distance 1 or 2)
  /regexp/             regular expression over one token
Field filters (exact value): node:spark-1 container:vllm source:nccl level:error
  component:ray_utils.py process:RayWorkerWrapper cause:... cluster:... file:... ip:...
  fields:interface=enp1s0f0np0 (source-specific fields as name=value)
  pid:1234 (exact)  rank:>0  line:<=100  time:>2026-01-02T15:04:05Z
node: followed by an IP address is the Ray resource text node:<ip>, not a node filter.
Quote a term to search it literally: "level:error" finds that text in messages.`

// fieldKinds are the fields a query may name.
var fieldKinds = func() map[string]string {
	m := map[string]string{FieldMessage: "text", "msg": "text", FieldTime: "time", FieldLine: "line"}
	for _, f := range keywordFields {
		m[f] = "keyword"
	}
	for _, f := range numericFields {
		m[f] = "number"
	}
	return m
}()

// lowerCaseFields hold normalised lower-case values, so a typed
// level:ERROR still matches.
var lowerCaseFields = map[string]bool{FieldLevel: true, FieldSource: true, FieldStream: true}

// Expr is a parsed query: what ParseQuery returns and Search runs.
type Expr struct{ root node }

// String renders the expression for debugging.
func (e *Expr) String() string { return fmt.Sprint(e.root) }

// ParseQuery turns what a user types into an expression over the message
// and the event fields. An empty query matches everything. See QuerySyntax.
func ParseQuery(s string) (*Expr, error) {
	n, err := parseText(s)
	if err != nil {
		return nil, err
	}
	return &Expr{root: n}, nil
}

func parseText(s string) (node, error) {
	if err := checkSyntax(s); err != nil {
		return nil, err
	}
	toks := splitQuery(s)
	var alts [][]string
	cur := []string{}
	for _, t := range toks {
		if t == "OR" || t == "||" {
			alts = append(alts, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, t)
	}
	alts = append(alts, cur)

	var groups []node
	for _, alt := range alts {
		var must, not []node
		negate := false
		for _, t := range alt {
			if t == "NOT" || t == "AND" || t == "&&" {
				negate = t == "NOT"
				continue
			}
			neg := negate
			negate = false
			switch {
			case len(t) > 1 && t[0] == '-':
				neg, t = true, t[1:]
			case len(t) > 1 && t[0] == '+':
				t = t[1:]
			}
			q, err := parseClause(t)
			if err != nil {
				return nil, err
			}
			if q == nil {
				continue
			}
			if neg {
				not = append(not, q)
			} else {
				must = append(must, q)
			}
		}
		if len(must) == 0 {
			// Only exclusions (or nothing): exclude from everything.
			must = append(must, allNode{})
		}
		for _, n := range not {
			must = append(must, notNode{n})
		}
		groups = append(groups, andOf(must...))
	}
	return orOf(groups...), nil
}

// splitQuery splits at white space outside double quotes; quotes are kept
// so that parseClause can tell a phrase from a term.
func splitQuery(s string) []string {
	var out []string
	var b strings.Builder
	inQuote := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && inQuote && i+1 < len(s):
			b.WriteByte(c)
			b.WriteByte(s[i+1])
			i++
		case c == '"':
			inQuote = !inQuote
			b.WriteByte(c)
		case !inQuote && (c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			if b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
			}
		default:
			b.WriteByte(c)
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

// unquote strips surrounding double quotes and backslash escapes; an
// unterminated quote runs to the end.
func unquote(s string) (string, bool) {
	if len(s) == 0 || s[0] != '"' {
		return s, false
	}
	s = s[1:]
	if strings.HasSuffix(s, `"`) && !strings.HasSuffix(s, `\"`) {
		s = s[:len(s)-1]
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String(), true
}

// isIPValue reports whether v is an IP address, optionally with a port.
func isIPValue(v string) bool {
	if _, err := netip.ParseAddr(v); err == nil {
		return true
	}
	_, err := netip.ParseAddrPort(v)
	return err == nil
}

func parseClause(t string) (node, error) {
	if t == "" {
		return nil, nil
	}
	if t == "*" {
		return allNode{}, nil
	}
	if t[0] != '"' {
		if name, val, ok := strings.Cut(t, ":"); ok && val != "" {
			field := strings.ToLower(name)
			kind, known := fieldKinds[field]
			// node:<ip> is how Ray names a node resource in its messages
			// (the seed's placement-group error), never a node filter.
			if known && !(field == FieldNode && isIPValue(strings.Trim(val, `"`))) {
				return fieldClause(field, kind, val)
			}
		}
	}
	return textClause(t)
}

// textClause searches the message for what the user typed.
func textClause(t string) (node, error) {
	if s, quoted := unquote(t); quoted {
		if strings.TrimSpace(s) == "" {
			return nil, nil
		}
		return phraseOf(s, false), nil
	}
	if len(t) > 2 && t[0] == '/' && t[len(t)-1] == '/' {
		return newPattern(FieldMessage, strings.TrimPrefix(t[1:len(t)-1], "^"), t)
	}
	if strings.ContainsAny(t, "*?") {
		return newPattern(FieldMessage, wildcardRegexp(strings.ToLower(t)), strings.ToLower(t))
	}
	if i := strings.LastIndexByte(t, '~'); i > 0 {
		if d, err := strconv.Atoi(t[i+1:]); err == nil || i == len(t)-1 {
			if i == len(t)-1 {
				d = 1
			}
			return fuzzyNode{term: strings.ToLower(t[:i]), dist: min(max(d, 1), 2)}, nil
		}
	}
	toks := logTokenizer{}.Tokenize([]byte(t))
	if len(toks) == 0 {
		return nil, nil
	}
	var n node
	// A whole address (an IP, with or without port, node:<ip>) is a token
	// of its own (a chunk, or a segment between = : / @), and a term
	// lookup finds it; a phrase over its parts would walk the postings of
	// "10", "1"...
	whole := string(toks[0].Term)
	addr := isIPValue(t) || isAddress(toks[0].Term) && soleChunk(toks)
	if len(toks) == 1 || addr {
		n = termNode{term: whole}
	} else {
		// Several tokens: the parts as a phrase, so that 192.168 matches
		// the parts 192 168 of 192.168.200.12 in order.
		n = phraseOf(t, true)
	}
	if isIPValue(t) {
		// An address is also in the Ray prefix's ip= field.
		n = orOf(n, kwNode{field: FieldIP, value: t})
	}
	return n, nil
}

// soleChunk reports whether the first token is the only chunk: every
// other token lies within it.
func soleChunk(toks analysis.TokenStream) bool {
	for _, tk := range toks[1:] {
		if tk.Start >= toks[0].End {
			return false
		}
	}
	return true
}

// phraseOf is the phrase of the tokens of s: the tokens at each position,
// any of which may stand there. typed marks a single typed token, whose
// whole chunk, when it is an exact index term, finds most matches at once.
func phraseOf(s string, typed bool) node {
	toks := logTokenizer{}.Tokenize([]byte(s))
	if len(toks) == 0 {
		return nil
	}
	last := 0
	for _, t := range toks {
		last = max(last, t.Position)
	}
	first := toks[0].Position
	p := phraseNode{pos: make([][]string, last-first+1)}
	for _, t := range toks {
		i := t.Position - first
		if !slices.Contains(p.pos[i], string(t.Term)) {
			p.pos[i] = append(p.pos[i], string(t.Term))
		}
	}
	if typed && len(toks) > 1 && soleChunk(toks) {
		p.whole = string(toks[0].Term)
	}
	if len(p.pos) == 1 {
		var alts []node
		for _, a := range p.pos[0] {
			alts = append(alts, termNode{term: a})
		}
		return orOf(alts...)
	}
	return p
}

func fieldClause(field, kind, val string) (node, error) {
	switch kind {
	case "text":
		return textClause(val)
	case "keyword":
		v, quoted := unquote(val)
		if lowerCaseFields[field] {
			v = strings.ToLower(v)
		}
		if !quoted && strings.ContainsAny(v, "*?") {
			return newPattern(field, wildcardRegexp(v), v)
		}
		return kwNode{field: field, value: v}, nil
	case "number":
		op, v := splitOp(val)
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(n) {
			return nil, fmt.Errorf("query: %s:%s: %q is not a number", field, val, v)
		}
		if op != "" && field == FieldPID {
			return nil, fmt.Errorf("query: %s:%s: pids match exact values only", field, val)
		}
		// The fields hold integers: bounds round inwards.
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		switch op {
		case ">":
			lo = ceilInt(math.Floor(n) + 1)
		case ">=":
			lo = ceilInt(n)
		case "<":
			hi = floorInt(math.Ceil(n) - 1)
		case "<=":
			hi = floorInt(n)
		default:
			lo, hi = ceilInt(n), floorInt(n)
		}
		if lo > hi {
			return noneNode{}, nil
		}
		return rangeNode{field: field, lo: lo, hi: hi}, nil
	case "line":
		op, v := splitOp(val)
		n, err := strconv.Atoi(v)
		if err != nil {
			return nil, fmt.Errorf("query: %s:%s: %q is not a line number", field, val, v)
		}
		n = max(n, 0)
		lo, hi := int64(math.MinInt64), int64(math.MaxInt64)
		switch op {
		case ">":
			lo = int64(n) + 1
		case ">=":
			lo = int64(n)
		case "<":
			hi = int64(n) - 1
		case "<=":
			hi = int64(n)
		default:
			lo, hi = int64(n), int64(n)
		}
		return rangeNode{field: FieldLine, lo: lo, hi: hi}, nil
	case "time":
		op, v := splitOp(val)
		v, _ = unquote(v)
		ts, err := ParseTime(v, time.Now())
		if err != nil {
			return nil, fmt.Errorf("query: %s:%s: %w", field, val, err)
		}
		var lo, hi time.Time // [lo, hi), zero: open
		switch op {
		case ">":
			lo = ts.Add(time.Nanosecond)
		case ">=":
			lo = ts
		case "<":
			hi = ts
		case "<=":
			hi = ts.Add(time.Nanosecond)
		default:
			// A bare time matches its whole second (the precision people type).
			lo, hi = ts, ts.Add(time.Second)
		}
		return timeRange(lo, hi), nil
	}
	return nil, fmt.Errorf("query: unknown field %q", field)
}

// timeRange matches events whose time is in [lo, hi) (zero times are open
// ends), exactly to the nanosecond; events without a time never match.
func timeRange(lo, hi time.Time) node {
	a, b := int64(math.MinInt64), int64(math.MaxInt64)
	if !lo.IsZero() {
		a = timeNanos(lo)
	}
	if !hi.IsZero() {
		b = timeNanos(hi)
		if b == math.MinInt64 {
			return noneNode{}
		}
		b-- // exclusive
	}
	if a > b {
		return noneNode{}
	}
	return timeNode{lo: a, hi: b}
}

// timeNanos converts t for the index, clamping what UnixNano cannot hold.
func timeNanos(t time.Time) int64 {
	switch {
	case t.Before(minNanoTime):
		return math.MinInt64
	case t.After(maxNanoTime):
		return math.MaxInt64
	}
	return t.UnixNano()
}

var (
	minNanoTime = time.Unix(0, math.MinInt64)
	maxNanoTime = time.Unix(0, math.MaxInt64)
)

// ceilInt and floorInt round a bound to an int64, saturating.
func ceilInt(f float64) int64  { return clampInt(math.Ceil(f)) }
func floorInt(f float64) int64 { return clampInt(math.Floor(f)) }

func clampInt(f float64) int64 {
	switch {
	case f >= math.MaxInt64:
		return math.MaxInt64
	case f <= math.MinInt64:
		return math.MinInt64
	}
	return int64(f)
}

func splitOp(v string) (string, string) {
	for _, op := range []string{">=", "<=", ">", "<"} {
		if strings.HasPrefix(v, op) {
			return op, v[len(op):]
		}
	}
	return "", v
}

// wildcardRegexp turns * and ? into a regexp over a whole term.
func wildcardRegexp(w string) string {
	var b strings.Builder
	for _, r := range w {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	return b.String()
}

// newPattern is a regexp (or wildcard) matching whole terms of field.
func newPattern(field, pattern, display string) (node, error) {
	if _, err := syntax.Parse(pattern, syntax.Perl); err != nil {
		return nil, fmt.Errorf("query: %s: %w", display, err)
	}
	re, err := regexp.Compile(`^(?:` + pattern + `)$`)
	if err != nil {
		return nil, fmt.Errorf("query: %s: %w", display, err)
	}
	return &patternNode{field: field, pattern: pattern, display: display, re: re}, nil
}

// timeLayouts are the forms ParseTime accepts besides durations.
var timeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02 15:04:05",
	"2006-01-02T15:04",
	"2006-01-02 15:04",
	"2006-01-02",
}

// ParseTime accepts RFC 3339 and the usual shorter forms (read as UTC
// when they carry no zone), or a duration meaning that long before now
// ("10m", "2h").
func ParseTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if d, err := time.ParseDuration(s); err == nil {
		return now.Add(-d), nil
	}
	for _, l := range timeLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("bad time %q (want RFC 3339 like 2026-01-02T15:04:05Z, 2026-01-02 15:04, or a duration like 10m)", s)
}

// KnownFields lists the fields a query may name, for help and validation.
func KnownFields() []string {
	var out []string
	for f := range fieldKinds {
		out = append(out, f)
	}
	slices.Sort(out)
	return out
}
