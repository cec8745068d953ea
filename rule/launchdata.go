package rule

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// launchFile is the name of a pack's launch signals (rules/launch.yaml).
const launchFile = "launch.yaml"

// LaunchSpec is launch.yaml: the signals that open a launch and say how it
// ended. Each list of a --rules DIR adds to the built-in one.
type LaunchSpec struct {
	Opens struct {
		// RayHead: a restarted Ray head opens a new launch.
		RayHead []Signal `yaml:"ray_head"`
		// VLLM: a vLLM banner opens a new launch.
		VLLM []Signal `yaml:"vllm"`
	} `yaml:"opens"`
	// Ready: the API server came up, the launch is healthy.
	Ready []Signal `yaml:"ready"`
	// Failed: signals that prove a launch failed, whatever the cause; a
	// plain string is a literal alone.
	Failed []Signal `yaml:"failed"`
}

// Signal is a literal, found by the engine's one literal scan per event,
// and an optional regex the message must also match.
type Signal struct {
	Literal string `yaml:"literal"`
	Regex   string `yaml:"regex"`
}

// UnmarshalYAML takes a signal written as a bare literal ('Traceback
// (most recent call last)') or as a mapping with literal and regex.
func (s *Signal) UnmarshalYAML(unmarshal func(any) error) error {
	var lit string
	if err := unmarshal(&lit); err == nil {
		*s = Signal{Literal: lit}
		return nil
	}
	type plain Signal
	var p plain
	if err := unmarshal(&p); err != nil {
		return err
	}
	*s = Signal(p)
	return nil
}

// launchSet is the compiled launch signals: every literal with the mark
// it stands for (the mark constants of launch.go), and per mark the
// signals to confirm a hit with.
type launchSet struct {
	literals []string
	marks    []uint8 // per literal: its mark bit
	at       []int   // per literal: its signal's place in signals[its mark]
	signals  [markFailed + 1][]compiledSignal
}

type compiledSignal struct {
	literal string
	re      *regexp.Regexp
	// lineRe is re without its leading "(?m)^", anchored at the start of
	// the text: re matches where lineRe matches at some line's start
	// (atLineStart). Go's regexp tries "(?m)^" at every byte of the text.
	lineRe *regexp.Regexp
}

// matches reports whether msg matches the signal's regex.
func (s *compiledSignal) matches(msg string) bool {
	if s.lineRe == nil {
		return s.re.MatchString(msg)
	}
	for p := 0; ; {
		if s.lineRe.MatchString(msg[p:]) {
			return true
		}
		i := strings.IndexByte(msg[p:], '\n')
		if i < 0 {
			return false
		}
		p += i + 1
	}
}

// lineStartRegex compiles src's rest after a leading "(?m)^" anchored at
// the start of the text, when that rest holds no other line or text
// anchor (which the missing (?m) or a cut text would change); else nil.
func lineStartRegex(src string) *regexp.Regexp {
	rest, ok := strings.CutPrefix(src, "(?m)^")
	if !ok {
		return nil
	}
	// "(?m)^a|b" anchors a only: the whole must be "^" then the rest.
	whole, err := syntax.Parse(src, syntax.Perl)
	if err != nil || whole.Op != syntax.OpConcat || whole.Sub[0].Op != syntax.OpBeginLine {
		return nil
	}
	tree, err := syntax.Parse(rest, syntax.Perl)
	if err != nil || hasAnchor(tree) {
		return nil
	}
	re, err := regexp.Compile("^(?:" + rest + ")")
	if err != nil {
		return nil
	}
	return re
}

func hasAnchor(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return true
	}
	for _, sub := range re.Sub {
		if hasAnchor(sub) {
			return true
		}
	}
	return false
}

type launchDoc struct {
	file string
	doc  *ast.DocumentNode
	spec LaunchSpec
}

// compileLaunch builds the launch set of a pack's layers.
func compileLaunch(docs []launchDoc) (*launchSet, []Problem) {
	ls := &launchSet{}
	var problems []Problem
	add := func(d launchDoc, mark int, path string, s Signal) {
		if strings.TrimSpace(s.Literal) == "" {
			problems = append(problems, positioned(d.file, d.doc, 1, ferr(path, "a signal needs a literal")))
			return
		}
		if score([]string{s.Literal}) < minLiteral {
			problems = append(problems, positioned(d.file, d.doc, 1, ferr(path+".literal", "literal %q is too short to mean anything (at least %d bytes)", s.Literal, minLiteral)))
			return
		}
		cs := compiledSignal{literal: s.Literal}
		if s.Regex != "" {
			re, err := regexp.Compile(s.Regex)
			if err != nil {
				problems = append(problems, positioned(d.file, d.doc, 1, ferr(path+".regex", "regex: %v", err)))
				return
			}
			cs.re = re
			cs.lineRe = lineStartRegex(s.Regex)
		}
		ls.literals = append(ls.literals, s.Literal)
		ls.marks = append(ls.marks, 1<<mark)
		ls.at = append(ls.at, len(ls.signals[mark]))
		ls.signals[mark] = append(ls.signals[mark], cs)
	}
	for _, d := range docs {
		for i, s := range d.spec.Opens.RayHead {
			add(d, markRayHead, fmt.Sprintf("$.opens.ray_head[%d]", i), s)
		}
		for i, s := range d.spec.Opens.VLLM {
			add(d, markVLLM, fmt.Sprintf("$.opens.vllm[%d]", i), s)
		}
		for i, s := range d.spec.Ready {
			add(d, markHealthy, fmt.Sprintf("$.ready[%d]", i), s)
		}
		for i, s := range d.spec.Failed {
			add(d, markFailed, fmt.Sprintf("$.failed[%d]", i), s)
		}
	}
	return ls, problems
}

// confirmed reports whether msg holds a signal of mark: its literal, and a
// match of its regex if it has one.
func (ls *launchSet) confirmed(mark int, msg string) bool {
	for i := range ls.signals[mark] {
		s := &ls.signals[mark][i]
		if strings.Contains(msg, s.literal) && (s.re == nil || s.matches(msg)) {
			return true
		}
	}
	return false
}
