package ruletest_test

import (
	"context"
	"strings"
	"testing"
	"testing/fstest"

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

// Two entries that match each other's example are one message written
// twice; a generic entry that matches a specific one's example (not the
// other way round) is not reported.
func TestCatalogOverlaps(t *testing.T) {
	p, err := rule.LoadFSPack(fstest.MapFS{"catalog/o.yaml": {Data: []byte(`project: o
facts:
  o_a: {description: a}
  o_b: {description: b}
messages:
  - {id: o.x.first, subsystem: x, printed_by: t, versions: '1', meaning: benign, match: {regex: 'disk (?P<d>\w+) is full'}, facts: {o_a: $d}, example: 'disk sda is full', yields: {o_a: [sda]}}
  - {id: o.x.again, subsystem: x, printed_by: t, versions: '1', meaning: benign, match: {regex: 'disk (?P<d>\w+) is full\b'}, facts: {o_b: $d}, example: 'disk sdb is full', yields: {o_b: [sdb]}}
  - {id: o.x.any, subsystem: x, printed_by: t, versions: '1', meaning: benign, match: {regex: 'is full'}, example: 'memory is full'}
`)}}, ".", "o")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pr := range ruletest.CatalogOverlaps(context.Background(), p) {
		if strings.Contains(pr.Message, "o.x.") {
			got = append(got, pr.String())
		}
	}
	if len(got) != 1 || !strings.Contains(got[0], "o.x.first") || !strings.Contains(got[0], "o.x.again") {
		t.Errorf("overlaps = %q, want first and again only", got)
	}
}
