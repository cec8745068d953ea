package rule

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// Go's regexp never backtracks, but its cost per byte still grows with the
// number of NFA threads alive at once: `(.*a){20}` or `(\w+\s*){1,500}x`
// take 0.1-3 s on a 100 KB line and, hot-loaded, would stall serve. Lint measures that cost
// deterministically (no clock): a Pike VM over the compiled program counts
// thread steps on worst-case probe lines.

// maxRegexCost is the lint budget, in thread steps per input byte (Go's
// regexp takes ~25 ns a step: 32 is under 1 ms for a 1 KiB line). The
// built-in pack peaks at 15 (`out of memory[^\n]{0,160}`); `(.*a){20}`
// scores 40 and takes 1 us a byte, `(\w+\s*){1,500}x` 757 and 30 us.
const maxRegexCost = 32

// regexProbeLen is the length of each probe line: long enough for counted
// repetitions of a few hundred to fill up, short enough to lint a pack of
// hundreds of matchers in milliseconds (14 ms for the built-in pack).
const regexProbeLen = 512

// regexCost returns the worst-case cost per byte of a pattern:
// thread steps per byte on the worse of several probe lines (a typical log
// line, the pattern's own literal text, a run of one letter).
func regexCost(src string) (float64, error) {
	re, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return 0, err
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0, err
	}
	probes := []string{
		"NCCL INFO NET/Socket : Using [0]eth0:10.1.2.3<0> Cuda failure 'out of memory' (x) [y] =z, ",
		literalText(re) + " ",
		"a",
	}
	worst := 0.0
	for _, p := range probes {
		if strings.TrimSpace(p) == "" && p != " " {
			continue
		}
		line := strings.Repeat(p, regexProbeLen/len(p)+1)[:regexProbeLen]
		worst = max(worst, float64(pikeSteps(prog, line))/float64(len(line)))
	}
	return worst, nil
}

// lintRegexCost returns an error naming the cost when it is over budget.
func lintRegexCost(src, path string) error {
	c, err := regexCost(src)
	if err != nil || c <= maxRegexCost {
		return nil // a syntax error is compile's to report
	}
	return ferr(path, "regex costs %.0f steps a byte on a worst-case line (budget %d): nested or counted repetitions keep too many matches alive at once; anchor it on a literal or bound the repetition more tightly", c, maxRegexCost)
}

// literalText is the pattern's literals and a member of each character
// class in order: a line made of it keeps partial matches alive.
func literalText(re *syntax.Regexp) string {
	var b strings.Builder
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpLiteral:
			b.WriteString(string(r.Rune))
		case syntax.OpCharClass:
			if len(r.Rune) >= 2 {
				b.WriteRune(r.Rune[0])
			}
		}
		for _, s := range r.Sub {
			walk(s)
		}
	}
	walk(re)
	return b.String()
}

// pikeSteps runs prog unanchored over text as an NFA simulation and counts
// the threads stepped over runes.
func pikeSteps(prog *syntax.Prog, text string) int {
	mark := make([]int, len(prog.Inst))
	gen := 1
	var flag syntax.EmptyOp
	var add func(list []uint32, pc uint32) []uint32
	add = func(list []uint32, pc uint32) []uint32 {
		if mark[pc] == gen {
			return list
		}
		mark[pc] = gen
		switch in := &prog.Inst[pc]; in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			return add(add(list, in.Out), in.Arg)
		case syntax.InstCapture, syntax.InstNop:
			return add(list, in.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(in.Arg)&^flag != 0 {
				return list
			}
			return add(list, in.Out)
		case syntax.InstFail, syntax.InstMatch:
			return list
		default:
			return append(list, pc)
		}
	}
	var cur, next []uint32
	steps := 0
	prev := rune(-1)
	for pos := 0; pos < len(text); {
		r, w := utf8.DecodeRuneInString(text[pos:])
		flag = syntax.EmptyOpContext(prev, r)
		// Unanchored: a match may start here too (same generation as the
		// threads carried over, so none is added twice). Carried threads
		// wait on a rune, so the context only matters from here.
		cur = add(cur, uint32(prog.Start))
		next2 := pos + w
		r2 := rune(-1)
		if next2 < len(text) {
			r2, _ = utf8.DecodeRuneInString(text[next2:])
		}
		gen++
		flag = syntax.EmptyOpContext(r, r2)
		next = next[:0]
		for _, pc := range cur {
			steps++
			if in := &prog.Inst[pc]; in.MatchRune(r) {
				next = add(next, in.Out)
			}
		}
		cur, next = next, cur
		prev, pos = r, next2
	}
	return steps
}
