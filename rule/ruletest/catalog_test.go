package ruletest_test

import (
	"context"
	"testing"

	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/rule/ruletest"
)

// Every entry of the built-in catalog passes its test: its example gives
// exactly what its yields say. One subtest per entry, named by its id.
func TestCatalogEntries(t *testing.T) {
	p, err := rule.LoadBuiltinPack()
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Entries) == 0 {
		t.Fatal("the built-in catalog is empty")
	}
	for _, e := range p.Entries {
		t.Run(e.ID, func(t *testing.T) {
			if msg := ruletest.CheckEntry(context.Background(), p, e); msg != "" {
				t.Errorf("%s:%d: %s", e.File, e.ExampleLine, msg)
			}
		})
	}
}
