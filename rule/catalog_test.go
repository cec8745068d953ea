package rule

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/faultline/faultline/parsers"
)

// Every problem of a catalog file is reported at its file:line:col, and an
// unknown key in one entry does not hide the problems of the others.
func TestCatalogLintReportsFileAndLine(t *testing.T) {
	_, err := LoadDirPack("testdata/badcatalog")
	var le *LoadError
	if !errors.As(err, &le) {
		t.Fatalf("LoadDirPack(testdata/badcatalog) = %v, want a LoadError", err)
	}
	want := []string{
		`8:11: type "integer" is not string or number`,
		`23:14: fact "color" is not declared`,
		`26:9: duplicate entry id "demo.net.bind-failed"`,
		`32:14: regex: error parsing regexp`,
		`41:7: unknown field "colour"`,
		`43:9: id "demo.disk.mismatch" does not start with "demo.net."`,
		`48:13: a benign message points to no cause`,
		`52:18: $nope: the regex has no group named "nope"`,
	}
	var got []string
	for _, p := range le.Problems {
		if !strings.HasPrefix(p.String(), "testdata/badcatalog/catalog/demo.yaml:") {
			t.Errorf("problem outside the file: %s", p)
		}
		got = append(got, strings.TrimPrefix(p.String(), "testdata/badcatalog/catalog/demo.yaml:"))
	}
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range min(len(got), len(want)) {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to start with %q", i, got[i], want[i])
		}
	}
}

// catalogPack loads a pack of one catalog file (on top of the built-in
// catalog and causes).
func catalogPack(t *testing.T, catalog string) *Pack {
	t.Helper()
	p, err := LoadFSPack(fstest.MapFS{"catalog/t.yaml": {Data: []byte(catalog)}}, ".", "t")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// One matcher fills several facts; a number fact spells 4.0 as 4; an
// entry's self overrides its facts' default; an expression yielding ""
// drops the value.
func TestEntryYieldsSeveralFacts(t *testing.T) {
	p := catalogPack(t, `project: demo
facts:
  t_gpus:
    type: number
    description: GPUs
  t_node:
    description: a node
    self: true
  t_unit:
    description: a unit, only when it is GPU
messages:
  - id: demo.res.total
    subsystem: res
    printed_by: demo.py show
    versions: '1.0 -'
    meaning: benign
    match:
      regex: '(?P<used>[\d.]+)/(?P<total>[\d.]+) (?P<unit>\w+) on (?P<node>\S+)'
    self: false
    facts:
      t_gpus: $total
      t_node: $node
      t_unit: 'unit == "GPU" ? unit : ""'
    example: '0.0/4.0 GPU on n1'
    yields: {t_gpus: [4], t_node: [n1], t_unit: [GPU]}
`)
	e := p.Entry("demo.res.total")
	if e == nil {
		t.Fatal("entry not loaded")
	}
	for _, tt := range []struct {
		msg  string
		want map[string][]string
	}{
		{"0.0/4.0 GPU on n1", map[string][]string{"t_gpus": {"4"}, "t_node": {"n1"}, "t_unit": {"GPU"}}},
		{"2/8 CPU on n2", map[string][]string{"t_gpus": {"8"}, "t_node": {"n2"}}},
		{"nothing here", map[string][]string{}},
	} {
		if got := e.Yield(&parsers.Event{Message: tt.msg}); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Yield(%q) = %v, want %v", tt.msg, got, tt.want)
		}
	}
	for _, o := range e.outs {
		if o.self {
			t.Errorf("fact %s is self, but the entry says self: false", o.name)
		}
	}
}

// A fact is declared once: twice in one pack is an error, and so is a
// declaration that differs from the built-in one; the same declaration
// repeated by a later layer (a copy of the pack) is not.
func TestFactDeclaredOnce(t *testing.T) {
	twice := fstest.MapFS{
		"catalog/a.yaml": {Data: []byte("facts:\n  t_x: {description: x}\n")},
		"catalog/b.yaml": {Data: []byte("facts:\n  t_x: {description: x}\n")},
	}
	_, err := LoadFSPack(twice, ".", "t")
	if err == nil || !strings.Contains(err.Error(), "t/catalog/b.yaml:2:8: fact \"t_x\" is already declared in t/catalog/a.yaml") {
		t.Errorf("declared twice: %v", err)
	}
	differs := fstest.MapFS{"catalog/a.yaml": {Data: []byte("facts:\n  no_interface: {description: something else}\n")}}
	if _, err := LoadFSPack(differs, ".", "t"); err == nil || !strings.Contains(err.Error(), "declared differently in rules/catalog/") {
		t.Errorf("declared differently: %v", err)
	}
	if _, err := LoadDirPack("../rules"); err != nil {
		t.Errorf("the built-in pack on top of itself: %v", err)
	}
}
