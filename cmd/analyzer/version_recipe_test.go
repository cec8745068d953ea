package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestVersionRecipeOfTheDocs (issue 23 item 9): the -ldflags recipe of
// docs/operations.md stamps the version where the toolchain does not (go
// run, -buildvcs=false: "(devel)"). The test builds the analyzer with the
// documented flags and a version of its own and reads it back from
// --version, so a recipe that names the wrong variable fails here.
func TestVersionRecipeOfTheDocs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the analyzer")
	}
	doc, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*go build -ldflags "([^"]+)" .*\./cmd/analyzer`).FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/operations.md gives no `go build -ldflags \"...\" ... ./cmd/analyzer` recipe")
	}
	const v = "v0.0.0-recipe-test"
	ldflags := strings.ReplaceAll(string(m[1]), "$V", v)
	bin := filepath.Join(t.TempDir(), "analyzer")
	cmd := exec.Command("go", "build", "-buildvcs=false", "-ldflags", ldflags, "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -ldflags %q: %v\n%s", ldflags, err, out)
	}
	out, err := exec.Command(bin, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("--version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "analyzer "+v+" ") {
		t.Errorf("built with the documented -ldflags, --version says %q, want analyzer %s ...", out, v)
	}
}
