package rule

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The scanner reports exactly the literals that strings.Contains finds,
// overlapping and nested ones included, in the order of the end of their
// first occurrence (the longer first at one end), as the Aho-Corasick pass
// it replaced did.
func TestLiteralScannerMatchesContains(t *testing.T) {
	p, err := LoadBuiltinPack()
	if err != nil {
		t.Fatal(err)
	}
	// Every literal of the catalog's matchers.
	var lits []string
	seen := map[string]bool{}
	for _, e := range p.Entries {
		for _, l := range e.m.literals {
			if !seen[l] {
				seen[l] = true
				lits = append(lits, l)
			}
		}
	}
	lits = append(lits, "abc", "bc", "c", "abcd", "xx", "xxxx", "cdxab", "dx GPU") // nested, overlapping, short
	s := newLiteralScanner(lits)
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := "abcdx GPU/:.'{}=0123456789\n\xff"
	for i := 0; i < 5000; i++ {
		var b strings.Builder
		for j := rng.IntN(200); j > 0; j-- {
			if rng.IntN(10) == 0 {
				b.WriteString(lits[rng.IntN(len(lits))])
			} else {
				b.WriteByte(alphabet[rng.IntN(len(alphabet))])
			}
		}
		text := b.String()
		got := slices.Clone(s.scan(text))
		var want []int
		end := map[int]int{}
		for k, l := range lits {
			if i := strings.Index(text, l); i >= 0 {
				want = append(want, k)
				end[k] = i + len(l)
			}
		}
		slices.SortStableFunc(want, func(a, b int) int {
			if end[a] != end[b] {
				return end[a] - end[b]
			}
			return len(lits[b]) - len(lits[a])
		})
		if !slices.Equal(got, want) {
			t.Fatalf("scan(%q) = %v, want %v", text, got, want)
		}
	}
}

func BenchmarkLiteralScanner(b *testing.B) {
	rs, _ := LoadBuiltin()
	idx := buildIndex(rs)
	line := `(EngineCore pid=498) INFO 04-08 22:41:56 [ray_utils.py:325] Waiting for creating a placement group of specs for 10 seconds. specs=[{'GPU': 1.0}]`
	b.SetBytes(int64(len(line)))
	b.ResetTimer()
	cpu0 := cpuTime()
	for i := 0; i < b.N; i++ {
		idx.ac.scan(line)
	}
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
}
