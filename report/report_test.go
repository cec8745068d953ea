package report

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/faultline/faultline/finding"
)

// TestEvidenceWrapsNotCuts: a long evidence line is printed whole, wrapped
// at spaces; it was cut at 220 bytes, which hid the address at its end
// ("node_manager address: 10.1.2 …") and could split a UTF-8 character.
func TestEvidenceWrapsNotCuts(t *testing.T) {
	text := "[2026-04-08 22:41:07,535 I 121 121] (raylet) raylet.cc:143: Raylet of id, " +
		"f44f302863fc5ee615c8c14d76c330e9948eb81721a78e8bc1ab5eac started. Raylet consists of node_manager and " +
		"object_manager. node_manager address: 10.1.230.180:42131 object_manager address: 10.1.230.180:38225 " +
		"hostname: spark-1 — état «prêt» " + strings.Repeat("x", 200)
	f := finding.Finding{Severity: "critical", Rule: "r", Title: "t", Cause: "c", ID: "id",
		Evidence: []finding.Evidence{{Node: "spark-1", File: "raylet.out", Line: 17, Text: text + "\nsecond line"}}}
	var b strings.Builder
	Block(&b, f, finding.Finding{})
	out := b.String()
	if !utf8.ValidString(out) {
		t.Errorf("output is not valid UTF-8")
	}
	var evidence []string
	in := false
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "  Evidence"):
			in = true
		case in && strings.HasPrefix(l, "    "):
			evidence = append(evidence, l)
		default:
			in = false
		}
	}
	if len(evidence) < 3 {
		t.Fatalf("a %d-character line in %d terminal lines, want it wrapped:\n%s", len(text), len(evidence), out)
	}
	joined := strings.Join(evidence, " ")
	for _, want := range []string{"10.1.230.180:42131", "10.1.230.180:38225", "état «prêt»", strings.Repeat("x", 160), "(+1 lines)"} {
		if !strings.Contains(joined, want) {
			t.Errorf("evidence lacks %q:\n%s", want, out)
		}
	}
	for _, l := range evidence {
		if n := utf8.RuneCountInString(l); n > evidenceWidth+40 {
			t.Errorf("a terminal line of %d characters: %q", n, l)
		}
	}
	if strings.Contains(out, "…") {
		t.Errorf("evidence still cut:\n%s", out)
	}
}

func TestWrap(t *testing.T) {
	for _, tt := range []struct {
		s     string
		width int
		want  []string
	}{
		{"short", 10, []string{"short"}},
		{"aaaa bbbb cccc", 10, []string{"aaaa bbbb", "cccc"}},
		{"aaaaaaaaaaaaaaa", 10, []string{"aaaaaaaaaa", "aaaaa"}},
		{"éééé éééé éééé", 10, []string{"éééé éééé", "éééé"}},
	} {
		if got := wrap(tt.s, tt.width); strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", tt.s, tt.width, got, tt.want)
		}
	}
}
