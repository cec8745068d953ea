package shipper

import (
	"os"
	"path/filepath"
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
	cs, err := containers(root, []string{"*"}, []string{"*analyzer*"})
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
