package pipeline

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faultline/faultline/parsers"
)

func TestParseArgs(t *testing.T) {
	in, err := ParseArgs([]string{"spark-1=/logs/a", "/logs/b"})
	if err != nil {
		t.Fatal(err)
	}
	if in[0] != (Input{Node: "spark-1", Path: "/logs/a"}) || in[1] != (Input{Path: "/logs/b"}) {
		t.Fatalf("ParseArgs = %+v", in)
	}
	if _, err := ParseArgs(nil); err == nil {
		t.Fatal("no args must be an error")
	}
}

func TestExpandNamesNodes(t *testing.T) {
	root := t.TempDir()
	for _, p := range []string{"spark-1/a.log", "spark-1/ray/raylet.out", "spark-2/x-json.log", "top.log", "case.json", ".hidden/z.log"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		os.WriteFile(filepath.Join(root, p), []byte("x\n"), 0o644)
	}
	files, err := Expand([]Input{{Path: root}}, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range files {
		rel, _ := filepath.Rel(root, f.Path)
		got[rel] = f.Node + "|" + f.Container
	}
	want := map[string]string{
		"spark-1/a.log":          "spark-1|",
		"spark-1/ray/raylet.out": "spark-1|",
		"spark-2/x-json.log":     "spark-2|x",
		"top.log":                filepath.Base(root) + "|",
	}
	if len(got) != len(want) {
		t.Fatalf("Expand = %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: node|container = %q, want %q", k, got[k], v)
		}
	}
}

// Events of several files come out merged by time, each file in its order.
func TestReplayMergesByTime(t *testing.T) {
	files := []File{
		{Path: "a.log", Node: "a", Data: []byte("2026-04-08 22:00:01,000\tINFO x.py:1 -- a1\n2026-04-08 22:00:03,000\tINFO x.py:1 -- a3\n")},
		{Path: "b.log", Node: "b", Data: []byte("2026-04-08 22:00:02,000\tINFO x.py:1 -- b2\nno time here\n2026-04-08 22:00:04,000\tINFO x.py:1 -- b4\n")},
	}
	var got []string
	st, err := ReplayFiles(context.Background(), files, Options{Cluster: "c"}, func(ev *parsers.Event) error {
		if ev.Cluster != "c" {
			t.Errorf("cluster = %q", ev.Cluster)
		}
		got = append(got, ev.Message)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "a1,b2,no time here,a3,b4"
	if strings.Join(got, ",") != want {
		t.Fatalf("order = %v, want %s", got, want)
	}
	if st.Files != 2 || st.Lines != 5 || st.Records != 5 {
		t.Errorf("stats = %+v", st)
	}
}
