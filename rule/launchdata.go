package rule

import (
	"fmt"
	"regexp"
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
	signals  [markFailed + 1][]compiledSignal
}

type compiledSignal struct {
	literal string
	re      *regexp.Regexp
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
		}
		ls.literals = append(ls.literals, s.Literal)
		ls.marks = append(ls.marks, 1<<mark)
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
	for _, s := range ls.signals[mark] {
		if strings.Contains(msg, s.literal) && (s.re == nil || s.re.MatchString(msg)) {
			return true
		}
	}
	return false
}
