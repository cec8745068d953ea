package ruletest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/rule/ruletest"
)

// Every matcher of the built-in pack takes a value from at least one real
// line of testdata/logs/real or testdata/logs/nccl-runs, or carries a note
// naming the upstream version that prints its wording (lint checks the note
// has a version). A matcher copied from nowhere is how a pack ends up
// fitting only the logs it was written from.
func TestBuiltinMatchersHitRealLines(t *testing.T) {
	rs, err := rule.LoadBuiltin()
	if err != nil {
		t.Fatal(err)
	}
	cov, err := ruletest.Coverage(context.Background(), rs, []string{"../../testdata/logs/real", "../../testdata/logs/nccl-runs"})
	if err != nil {
		t.Fatal(err)
	}
	all := cov.Matchers()
	if len(all) == 0 {
		t.Fatal("the built-in pack has no matchers")
	}
	unhit := cov.Unhit(true)
	if len(unhit) == 0 {
		return
	}
	var b strings.Builder
	for _, m := range unhit {
		what := "regex " + m.Regex
		if m.Field != "" {
			what = "field " + m.Field
		}
		fmt.Fprintf(&b, "\n  %s %s[%d]: %s", m.Rule, m.Fact, m.Index, what)
	}
	t.Errorf("%d of %d built-in matchers hit no real line and carry no note (add a real log that shows the wording, "+
		"or a `note:` naming the upstream file and version that print it):%s", len(unhit), len(all), b.String())
}
