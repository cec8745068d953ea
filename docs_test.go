package faultline

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The documentation is the repository's own: every relative link and every
// file it names resolves in the repository, and nothing refers to files
// that only exist outside it (a design document, a reference of log formats
// on the machine where it was written).

// docFiles are the Markdown files the link check reads: README.md, docs/
// and the READMEs of testdata.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, root := range []string{"docs", "testdata"} {
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() || !strings.HasSuffix(p, ".md") || root == "testdata" && filepath.Base(p) != "README.md" {
				return nil
			}
			files = append(files, filepath.ToSlash(p))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

var (
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	mdCode   = regexp.MustCompile("`([^`\n]+)`")
	mdFence  = regexp.MustCompile("(?m)^ {0,3}(```|~~~)")
	mdHeader = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *#*$`)
)

// prose is md without its fenced code blocks (commands and output, not
// references).
func prose(md string) string {
	var b strings.Builder
	in := false
	for _, l := range strings.Split(md, "\n") {
		if mdFence.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			b.WriteString(l)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// slug is the anchor GitHub gives a heading: lower case, spaces to
// hyphens, punctuation other than hyphens and underscores dropped.
func slug(heading string) string {
	heading = regexp.MustCompile("`|\\*\\*|\\[([^]]*)\\]\\([^)]*\\)").ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 127 && !strings.ContainsRune("§→←↔–—·…“”‘’×", r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors are the heading anchors of a Markdown file (a repeated heading
// gets -1, -2, ... as on GitHub).
func anchors(md string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range mdHeader.FindAllStringSubmatch(prose(md), -1) {
		s := slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// topLevel are the names at the repository's root: a code span that starts
// with one of them (docs/rules.md, rules/causes.yaml, cmd/analyzer) names a
// file of the repository; other paths in the docs are upstream's
// (vllm/logger.py) or a machine's (/var/lib/docker).
func topLevel(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range entries {
		if n := e.Name(); !strings.HasPrefix(n, ".") && n != "bin" && n != "faultline-data" {
			out[n] = true
		}
	}
	return out
}

// resolves reports whether target (a path relative to the directory of the
// file that names it, or a glob) names something in the repository.
func resolves(target string) bool {
	target = strings.TrimSuffix(target, "/")
	if strings.ContainsAny(target, "*?[") {
		m, _ := filepath.Glob(filepath.FromSlash(target))
		return len(m) > 0
	}
	_, err := os.Stat(filepath.FromSlash(target))
	return err == nil
}

func TestDocLinksResolve(t *testing.T) {
	top := topLevel(t)
	files := docFiles(t)
	if len(files) < 10 {
		t.Fatalf("found only %v: not the repository's docs", files)
	}
	texts := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts[f] = string(b)
	}
	checked := 0
	for _, f := range files {
		dir := path.Dir(f)
		text := prose(texts[f])
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			p := f
			if file != "" {
				p = path.Clean(path.Join(dir, file))
				checked++
				if !resolves(p) {
					t.Errorf("%s: link %q: %s is not in the repository", f, target, p)
					continue
				}
			}
			if frag == "" || !strings.HasSuffix(p, ".md") {
				continue
			}
			md, ok := texts[p]
			if !ok {
				b, err := os.ReadFile(p)
				if err != nil {
					t.Errorf("%s: link %q: %v", f, target, err)
					continue
				}
				md = string(b)
			}
			if !anchors(md)[frag] {
				t.Errorf("%s: link %q: %s has no heading #%s", f, target, p, frag)
			}
		}
		// A file named in a code span, from the repository's root
		// (docs/rules.md) or relative to the doc (../rules/causes.yaml).
		for _, m := range mdCode.FindAllStringSubmatch(text, -1) {
			ref := strings.TrimPrefix(m[1], "./")
			if strings.ContainsAny(ref, " <>{}$=|,…") || !strings.Contains(ref, "/") && !strings.Contains(ref, ".") {
				continue
			}
			first, _, _ := strings.Cut(ref, "/")
			ref, _, _ = strings.Cut(ref, ":") // file:line
			switch {
			case top[first] && (strings.Contains(ref, "/") || first == ref):
				checked++
				if !resolves(ref) {
					t.Errorf("%s: %q names %s, which is not in the repository", f, m[1], ref)
				}
			case strings.HasPrefix(ref, "../"):
				checked++
				if p := path.Clean(path.Join(dir, ref)); !resolves(p) {
					t.Errorf("%s: %q names %s, which is not in the repository", f, m[1], p)
				}
			}
		}
	}
	t.Logf("%d references in %d files resolve", checked, len(files))
}

// Reference material that is not in the repository, by the names it had
// where the code was written. Built so that this file does not name them.
var outside = []string{"DESIGN" + ".md", "/work/" + "shared", "anchors" + ".md", "upstream-messages" + ".md"}

// TestNoReferenceOutsideTheRepository reads every text file of the
// repository: none names a file of outside, and every citation of the log
// formats' reference is the repository's own, docs/log-formats.md.
func TestNoReferenceOutsideTheRepository(t *testing.T) {
	lf := "log-formats" + ".md"
	token := regexp.MustCompile(`[\w./-]*` + regexp.QuoteMeta(lf))
	read := 0
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != "." && (strings.HasPrefix(n, ".") || n == "bin" || n == "faultline-data" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		info, err := d.Info()
		if err != nil || !info.Mode().IsRegular() || info.Size() > 8<<20 {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.IndexByte(b[:min(len(b), 8000)], 0) >= 0 {
			return nil // binary
		}
		read++
		p = filepath.ToSlash(p)
		for _, name := range outside {
			if i := bytes.Index(b, []byte(name)); i >= 0 {
				t.Errorf("%s:%d names %s, which is not in the repository", p, bytes.Count(b[:i], []byte("\n"))+1, name)
			}
		}
		for _, loc := range token.FindAllIndex(b, -1) {
			ref := string(b[loc[0]:loc[1]])
			ok := ref == "docs/"+lf || strings.HasSuffix(ref, "/docs/"+lf) && path.Clean(path.Join(path.Dir(p), ref)) == "docs/"+lf ||
				path.Clean(path.Join(path.Dir(p), ref)) == "docs/"+lf
			if !ok {
				t.Errorf("%s:%d names %q: cite docs/%s, the repository's", p, bytes.Count(b[:loc[0]], []byte("\n"))+1, ref, lf)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if read < 100 {
		t.Fatalf("read %d files: not the repository", read)
	}
}

// TestArchitectureNamesEveryPackage: docs/architecture.md's package map
// lists every package of the module (a new package without a line there
// fails here).
func TestArchitectureNamesEveryPackage(t *testing.T) {
	b, err := os.ReadFile("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	err = filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		if n := d.Name(); p != "." && (strings.HasPrefix(n, ".") || n == "testdata" || n == "bin") {
			return filepath.SkipDir
		}
		if p != "." {
			if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own (bench/tailprobe)
			}
		}
		goFiles, _ := filepath.Glob(filepath.Join(p, "*.go"))
		if !slices.ContainsFunc(goFiles, func(f string) bool { return !strings.HasSuffix(f, "_test.go") }) {
			return nil
		}
		name := filepath.ToSlash(p)
		if name == "." {
			name = "`.`"
		} else {
			name = "`" + name + "`"
		}
		if !bytes.Contains(b, []byte(name)) {
			missing = append(missing, name)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("docs/architecture.md's package map lacks %v", missing)
	}
}

// TestREADMECommandsAreCIs: the README's set-up gives exactly two commands,
// the demo and the test command, and the test command is the one .ci/run
// runs (a README that drifted from CI said "about 5 minutes" of a command
// CI no longer ran).
func TestREADMECommandsAreCIs(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(".ci/run")
	if err != nil {
		t.Fatal(err)
	}
	ciTest := regexp.MustCompile(`(?m)^go test [^|&;\n]*?(?:\s*\|\|.*)?$`).FindString(string(ci))
	ciTest, _, _ = strings.Cut(ciTest, " ||")
	if ciTest == "" {
		t.Fatal(".ci/run runs no go test command")
	}
	_, setUp, ok := strings.Cut(string(readme), "\n## Set up")
	if !ok {
		t.Fatal("README.md has no '## Set up' section")
	}
	setUp, _, _ = strings.Cut(setUp, "\n## ")
	var commands []string
	for _, line := range strings.Split(setUp, "\n") {
		if strings.HasPrefix(line, "    ") && strings.TrimSpace(line) != "" {
			commands = append(commands, strings.TrimSpace(line))
		}
	}
	if want := []string{"go run ./cmd/analyzer serve --demo", ciTest}; !slices.Equal(commands, want) {
		t.Errorf("README.md's set-up commands are %q, want %q (the demo, then .ci/run's test command)", commands, want)
	}
}
