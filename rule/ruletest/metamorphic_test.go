package ruletest_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
)

// verdict is what a diagnosis says first, and which causes it calls critical.
type verdict struct {
	// first is the cause/severity of the first active finding ("" for
	// none), with those that tie with it on everything finding.Order
	// sorts by but the ID (a hash, so the order of a tie depends on the
	// cluster's name and the records' offsets), sorted and joined by " | ".
	first    string
	critical map[string]bool
}

func (v verdict) String() string {
	if v.first == "" {
		return "no finding"
	}
	return v.first
}

// firstOf is verdict.first of findings in finding.Order.
func firstOf(fs []finding.Finding) string {
	var top []string
	for _, f := range fs {
		if len(top) > 0 && (f.ExplainedBy != "" || f.Severity != fs[0].Severity || f.Confidence != fs[0].Confidence || !f.FirstSeen.Equal(fs[0].FirstSeen)) {
			break
		}
		top = append(top, f.Cause+"/"+string(f.Severity))
	}
	slices.Sort(top)
	return strings.Join(slices.Compact(top), " | ")
}

// diagnoser runs the built-in pack over files as `analyzer diagnose` does,
// each run on an engine of its own (about 1 ms to build): one engine for
// every run made each run's Findings sort the findings of all the runs
// before it, three quarters of this test's time.
type diagnoser struct {
	rules []*rule.Rule
}

func newDiagnoser(t *testing.T) *diagnoser {
	t.Helper()
	rs, err := builtin()
	if err != nil {
		t.Fatal(err)
	}
	return &diagnoser{rules: rs}
}

// diagnose returns the verdict on files and counts the texts of the
// records read.
func (d *diagnoser) diagnose(t *testing.T, files []pipeline.File) (verdict, map[string]int) {
	t.Helper()
	e := rule.NewEngine(d.rules)
	const cluster = "paste"
	texts := map[string]int{}
	if _, err := pipeline.ReplayFiles(context.Background(), files, pipeline.Options{Cluster: cluster}, func(ev *parsers.Event) error {
		texts[ev.Node+"\x00"+ev.Text]++
		e.Observe(ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Ordered as diagnose orders one cluster's findings (Order over
	// several clusters' findings at once may order one cluster's own
	// differently).
	var mine []finding.Finding
	for _, f := range e.Findings() {
		if f.Cluster == cluster {
			mine = append(mine, f)
		}
	}
	v := verdict{critical: map[string]bool{}}
	var active []finding.Finding
	for _, f := range finding.Order(mine) {
		if f.Status != "active" {
			continue
		}
		active = append(active, f)
		if f.Severity == finding.Critical {
			v.critical[f.Cause] = true
		}
	}
	v.first = firstOf(active)
	return v, texts
}

// metamorphicCases are every real case, the NCCL runs and the seed story's
// three launches (failed, fixed, both in one log).
func metamorphicCases(t *testing.T) []corpusCase {
	// A known failure has no right verdict to keep (corpus_test.go).
	cases := slices.DeleteFunc(corpusCases(t), func(c corpusCase) bool { return c.knownFailure != "" })
	if f := os.Getenv("METAMORPHIC_ONLY"); f != "" {
		cases = slices.DeleteFunc(cases, func(c corpusCase) bool { return !regexp.MustCompile(f).MatchString(c.name) })
	}
	for _, s := range []string{"failed", "fixed", "both"} {
		cases = append(cases, corpusCase{name: "seed/" + s, path: "../../testdata/logs/seed/" + s})
	}
	return cases
}

// A log pasted the ways users paste it keeps its verdict: the same first
// cause with the same severity, and no cause critical that was not critical
// as written. The records read back as written (same text) are counted too,
// and each transform keeps at least its floor of them: the joiner's and
// framer's part, whatever the rules. The verdict as written is taken from the same bytes given as
// data (no file time to fall back on), so that only the paste differs.
func TestMetamorphicPastes(t *testing.T) {
	d := newDiagnoser(t)
	cases := metamorphicCases(t)
	kept, tried := map[string]int{}, map[string]int{}
	total := 0
	same, recs := map[string]int{}, 0
	for _, c := range cases {
		files := caseFiles(t, c.path)
		want, wantRecs := d.diagnose(t, files)
		for _, n := range wantRecs {
			recs += n
		}
		lines := pasteOf(t, files)
		for _, tr := range pasteTransforms {
			pasted := make([]pipeline.File, len(files))
			for i, f := range files {
				f.Data = tr.apply(f.Node, lines[i])
				pasted[i] = f
			}
			got, gotRecs := d.diagnose(t, pasted)
			for k, n := range gotRecs {
				same[tr.name] += min(n, wantRecs[k])
			}
			if pasteFragile[c.name][tr.name] != "" {
				continue // (its records are counted all the same)
			}
			total++
			tried[tr.name]++
			var newCrit []string
			for k := range got.critical {
				if !want.critical[k] {
					newCrit = append(newCrit, k)
				}
			}
			if got.first == want.first && len(newCrit) == 0 {
				kept[tr.name]++
				continue
			}
			t.Errorf("%s, %s: first finding %s, as written %s; new critical %v", c.name, tr.name, got, want, newCrit)
		}
	}
	var b strings.Builder
	all := 0
	for _, tr := range pasteTransforms {
		share := float64(same[tr.name]) / float64(recs)
		fmt.Fprintf(&b, "\n  %-26s %3d/%d   records as written %5.1f%%", tr.name, kept[tr.name], tried[tr.name], 100*share)
		all += kept[tr.name]
		if share < tr.minRecords {
			t.Errorf("%s: %.1f%% of the records read back as written, want at least %.0f%%", tr.name, 100*share, 100*tr.minRecords)
		}
	}
	t.Logf("verdicts kept, %d cases × %d transforms: %d/%d (%.1f%%)%s", len(cases), len(pasteTransforms), all, total,
		100*float64(all)/float64(total), b.String())
}

// pasteFragile lists the transforms under which a real case's verdict
// cannot hold (by case, then transform): the paste itself already lost
// what no splitter can give back. Each says why; keep it short.
var pasteFragile = map[string]map[string]string{
	"real/229-kv-v1-serve-one-request-wrapped-arc": {
		"squashed onto one line": "the reporter's terminal cut 'KV cach|e is needed' mid-word; squashed, the cut becomes a blank inside the word",
	},
	"real/422-lws-eks-vllm-pp2-gloo-loopback-fallback-refused": {
		"squashed onto one line": "the author's indented continuations become runs of blanks inside the sentences ('loopback         address'), and two entries are too few to tell a squashed paste",
	},
	"real/456-kserve-vllm-llama-3.1-403-forbidden-config-json-licence-not-accepted": {
		"indented wrap at 80": "one line whose only evidence is the Hub URL after '403 Client Error: Forbidden for url:'; wrapped at 80 the URL becomes a record of its own, and a 403 without its host names no service",
	},
}
