package shipper

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The Faultline stack's own containers are excluded even when "*" matches
// them: the analyzer's output quotes log lines and must not be fed back.
func TestContainersExclude(t *testing.T) {
	root := t.TempDir()
	for id, name := range map[string]string{"a1": "/vllm-qwen35", "b2": "/faultline_analyzer_1", "c3": "/node-123"} {
		dir := filepath.Join(root, "containers", id)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "config.v2.json"), []byte(`{"ID":"`+id+`","Name":"`+name+`","LogPath":"/x"}`), 0o644)
	}
	cs, err := containers(root, []string{"*"}, []string{"*analyzer*"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, c := range cs {
		got[c.name] = true
	}
	if len(got) != 2 || !got["vllm-qwen35"] || !got["node-123"] || got["faultline_analyzer_1"] {
		t.Fatalf("containers = %v", got)
	}
}

// --container-label keeps to the containers that carry the labels: the
// compose stack's shipper tailed every container of the host (27,537
// records of another user's container within seconds).
func TestContainersByLabel(t *testing.T) {
	root := t.TempDir()
	for id, c := range map[string]struct{ name, labels string }{
		"a1": {"/vllm-head", `{"faultline.ship":"true","com.docker.compose.project":"dgx"}`},
		"b2": {"/vllm-worker", `{"faultline.ship":"","com.docker.compose.project":"other"}`},
		"c3": {"/someone-elses", `{"com.docker.compose.project":"dgx"}`},
		"d4": {"/unlabelled", `null`},
	} {
		dir := filepath.Join(root, "containers", id)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "config.v2.json"), []byte(`{"ID":"`+id+`","Name":"`+c.name+`","LogPath":"/x","Config":{"Labels":`+c.labels+`}}`), 0o644)
	}
	for _, tc := range []struct {
		labels []string
		want   string
	}{
		{nil, "someone-elses unlabelled vllm-head vllm-worker"},
		{[]string{""}, "someone-elses unlabelled vllm-head vllm-worker"},
		{[]string{"faultline.ship"}, "vllm-head vllm-worker"},
		{[]string{"faultline.ship=true"}, "vllm-head"},
		{[]string{"faultline.ship", "com.docker.compose.project=dgx"}, "vllm-head"},
		{[]string{"com.docker.compose.project=dgx"}, "someone-elses vllm-head"},
		{[]string{"nothing.has.this"}, ""},
	} {
		cs, err := containers(root, []string{"*"}, nil, tc.labels)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, c := range cs {
			names = append(names, c.name)
		}
		slices.Sort(names)
		if got := strings.Join(names, " "); got != tc.want {
			t.Errorf("labels %q: containers %q, want %q", tc.labels, got, tc.want)
		}
	}
}
