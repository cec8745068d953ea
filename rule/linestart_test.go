package rule

import (
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// A "(?m)^..." regex that may cross lines is tried at line starts only:
// what it finds must be what Go's regexp finds trying every position.
func TestLineStartMatchesAsRegexp(t *testing.T) {
	regexes := []string{
		`(?m)^(?:\S+\s+)?(?P<pod>\S+)\s+\d+/\d+\s+(?P<status>CrashLoopBackOff|Error|OOMKilled)\s+\d+`,
		`(?m)^[-\s]*Job '(?P<id>[^'\s]+)' failed\s*$`,
		`(?m)^\s*Error\b\s*(?P<rest>\S*)`,
	}
	pieces := []string{
		"default  ray-head-7zw69  0/1  CrashLoopBackOff  6 (4m41s ago)  18m",
		"ray-worker-x   1/1   Error   3   2m", "  ", "\n", "\n\n", "\t", " ", "1/1", "Error", "Error 2",
		"Job 'raysubmit_1' failed", "---", "'", "x", "OOMKilled 0", "\r\n", "word", "0/1 Error 7\n",
	}
	rng := rand.New(rand.NewSource(1))
	for _, src := range regexes {
		m, err := compileMatch(Match{Regex: src}, "t")
		if err != nil {
			t.Fatal(err)
		}
		if m.bol == nil {
			t.Fatalf("%s: not tried at line starts", src)
		}
		found := 0
		for i := 0; i < 20000; i++ {
			var b strings.Builder
			for k := rng.Intn(12); k >= 0; k-- {
				b.WriteString(pieces[rng.Intn(len(pieces))])
				if rng.Intn(3) == 0 {
					b.WriteByte(" \n\t"[rng.Intn(3)])
				}
			}
			text := b.String()
			got, want := m.findIn(text, nil), m.re.FindAllStringSubmatch(text, 32)
			if !slices.EqualFunc(got, want, slices.Equal[[]string]) {
				t.Fatalf("%s on %q:\n got %q\nwant %q", src, text, got, want)
			}
			if len(want) > 1 {
				found++
			}
		}
		if found < 20 {
			t.Errorf("%s: only %d texts with several matches", src, found)
		}
	}
}

func TestStartsAtLine(t *testing.T) {
	for src, want := range map[string]bool{
		`(?m)^\s*Error \d+`:        true,
		`(?m)^a\s+b|Error c`:       false, // a branch starts anywhere
		`(?m)^\s*Error\A`:          false,
		`^\s*Error \d+`:            false, // start of text only
		`(?m)Error\s*$`:            false,
		`(?m)^(?:Error|Warn)\s+\d`: true,
	} {
		if got := startsAtLine(src); got != want {
			t.Errorf("startsAtLine(%q) = %v, want %v", src, got, want)
		}
	}
}
