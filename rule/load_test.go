package rule

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Each broken file must be reported with its own name and the line of the
// offending key, in file:line:col form.
func TestLintReportsFileAndLine(t *testing.T) {
	_, err := LoadDir("testdata/bad")
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("LoadDir(testdata/bad) = %v, want a LoadError", err)
	}
	tests := []struct {
		file string
		line int
		msg  string
	}{
		{"unknown-key.yaml", 9, "colour"},
		{"bad-expr.yaml", 9, "unknown name y"},
		{"unknown-cause.yaml", 2, "unknown cause \"cosmic-rays\""},
		{"bad-template.yaml", 11, "summary"},
		{"syntax.yaml", 3, ""},
		{"dup-b.yaml", 1, "duplicate rule id \"same\""},
		// Severity and confidence are words: a typo is an error, never a
		// warning in disguise.
		{"bad-severity.yaml", 7, "severity \"fatal\" is not one of critical, warning, info"},
		{"bad-severity.yaml", 10, "severity \"crtical\""},
		{"bad-severity.yaml", 13, "severity \"warn\""},
		{"bad-severity.yaml", 14, "confidence \"hihg\" is not one of high, medium, low"},
		{"bad-severity.yaml", 16, "severity is a word, not a template"},
		{"unknown-fact.yaml", 3, "unknown field .oomm: not a declared fact"},
		{"unknown-fact.yaml", 5, "key \"gpuu\" is not a declared fact"},
		{"cross-type.yaml", 6, "a number fact meets a string fact"},
		{"v1.yaml", 6, "rule language v1: a rule no longer declares matchers"},
		{"v1.yaml", 3, "rule language v1: severity is set per case"},
	}
	for _, tt := range tests {
		found := false
		for _, p := range le.Problems {
			if strings.HasSuffix(p.File, "/"+tt.file) && p.Line == tt.line && strings.Contains(p.Message, tt.msg) {
				found = true
				if want := "testdata/bad/" + tt.file + ":"; !strings.HasPrefix(p.String(), want) {
					t.Errorf("%s: message %q does not start with %q", tt.file, p.String(), want)
				}
			}
		}
		if !found {
			t.Errorf("no problem reported for %s line %d containing %q; got:\n%v", tt.file, tt.line, tt.msg, err)
		}
	}
}

func TestBuiltinPackLoads(t *testing.T) {
	rs, err := LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) < 3 {
		t.Fatalf("built-in pack has %d rules", len(rs))
	}
}

func TestRequiredLiterals(t *testing.T) {
	tests := map[string][]string{
		`Local node IP: (?P<value>\S+)`:           {"Local node IP: "},
		`No available node types .*?'node:(\S+)'`: {"No available node types "},
		`(?i)cuda out of memory`:                  nil,
		`a|b`:                                     nil,
		`(\S+) (?:was supported until|is not supported anymore)`: {" was supported until", " is not supported anymore"},
		// A run of parts with few spellings is one literal per spelling.
		`(?m)^[ \t]*0(?:\.0)?/0(?:\.0)? GPU`:         {"0/0 GPU", "0/0.0 GPU", "0.0/0 GPU", "0.0/0.0 GPU"},
		`(?P<name>NCCL_(?:NET|IB_HCA))=(?P<val>\S+)`: {"NCCL_NET=", "NCCL_IB_HCA="},
		`[^\n]*[Aa]ddress already in use`:            {"Address already in use", "address already in use"},
		`port (\d+)[0-9]{2} in use`:                  {" in use"},
	}
	for re, want := range tests {
		got := requiredLiterals(re)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("requiredLiterals(%q) = %q, want %q", re, got, want)
		}
	}
}

// Every match of every catalog regex holds one of its required literals,
// in its example and in the example's lines: the prefilter skips no entry
// that would match.
func TestRequiredLiteralsHoldOnExamples(t *testing.T) {
	p, err := LoadBuiltinPack()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range p.Entries {
		if e.m.re == nil || len(e.m.literals) == 0 {
			continue
		}
		for _, text := range append(strings.Split(e.Example, "\n"), e.Example) {
			for _, m := range e.m.re.FindAllString(text, -1) {
				n++
				if !slices.ContainsFunc(e.m.literals, func(l string) bool { return strings.Contains(m, l) }) {
					t.Errorf("%s: match %q of %q holds none of %q", e.ID, m, e.m.re, e.m.literals)
				}
			}
		}
	}
	if n < 100 {
		t.Fatalf("only %d matches checked", n)
	}
}

func TestLineLocal(t *testing.T) {
	tests := map[string]bool{
		`Local node IP: (?P<value>\S+)`:        true,
		`(?m)^\s*[\d.]+/(?P<value>[\d.]+) GPU`: false, // \s matches a newline
		`(?m)^ *[\d.]+/(?P<value>[\d.]+) GPU`:  true,
		`resource request (?P<req>\{[^}]*\})`:  false, // [^}] matches a newline
		`Total Usage:\n`:                       false,
		`^Traceback`:                           false, // start of text
		`a.*b`:                                 true,
		`(?s)a.*b`:                             false,
	}
	for re, want := range tests {
		if got := lineLocal(re); got != want {
			t.Errorf("lineLocal(%q) = %v, want %v", re, got, want)
		}
	}
}

func TestLeadingLiterals(t *testing.T) {
	tests := map[string][]string{
		`(?P<who>Bootstrap|NET/Socket) ?: Using (?:\[\d+\])?(?P<ifc>\w+)`: {"Bootstrap: Using ", "Bootstrap : Using ", "NET/Socket: Using ", "NET/Socket : Using "},
		`(?:Ring|Channel) \d+`: {"Ring ", "Channel "},
		`(?:Model loading took|Loading (?:model )?weights took) (?P<g>[\d.]+ Gi?B)`: {"Model loading took ", "Loading weights took ", "Loading model weights took "},
		`\bfoo bar`:                            nil, // an assertion first
		`(?:x )?foo`:                           {"foo", "x foo"},
		`(?:x )?\d+`:                           nil, // "" among the spellings
		`[\d.]+/(?P<total>[\d.]+) GPU`:         nil, // a class of many
		`ab\d`:                                 nil, // too short
		`(?i)error`:                            nil, // 32 spellings and more
		`Available KV cache memory: (?P<g>.+)`: {"Available KV cache memory: "},
	}
	for re, want := range tests {
		if got := leadingLiterals(re); !slices.Equal(got, want) {
			t.Errorf("leadingLiterals(%q) = %q, want %q", re, got, want)
		}
	}
}

// TestLedRegexFindsTheSameMatches: the anchored regex tried where a
// leading literal occurs finds what FindAllStringSubmatch finds, on every
// catalog example and on every line and record of the real logs, and on
// texts holding a match twice, among near misses and repeated leads.
func TestLedRegexFindsTheSameMatches(t *testing.T) {
	p, err := LoadBuiltinPack()
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "logs", "real", "*", "*.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, strings.Split(string(b), "\n")...)
		texts = append(texts, string(b))
	}
	if len(files) < 100 {
		t.Fatalf("only %d real logs", len(files))
	}
	led, matched := 0, 0
	for _, e := range p.Entries {
		m := e.m
		if m.led == nil {
			continue
		}
		led++
		ex := e.Example
		own := []string{ex, ex + " " + ex, ex + "\n" + ex, "x" + ex[:len(ex)/2] + ex, m.lead[0] + m.lead[0] + ex}
		for _, l := range m.lead {
			own = append(own, l, l+l, "  "+l+"1 "+ex)
		}
		for _, text := range append(own, texts...) {
			want := m.re.FindAllStringSubmatch(text, 32)
			if got := m.findIn(text, nil); !reflect.DeepEqual(got, want) {
				t.Errorf("%s on %q:\n got %q\nwant %q", e.ID, clip(text, 300), got, want)
				break
			}
			if want != nil {
				matched++
			}
		}
	}
	if led < 20 || matched < 100 {
		t.Fatalf("only %d entries with leading literals, %d texts matched", led, matched)
	}
	t.Logf("%d entries with leading literals, %d texts matched", led, matched)
}
