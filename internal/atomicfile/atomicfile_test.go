package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteFile replaces the content whole, with the asked permissions, and
// leaves no temporary file behind, on success or failure.
func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "offsets.json")
	if err := WriteFile(p, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("second, longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil || string(b) != "second, longer" {
		t.Fatalf("content %q, %v", b, err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("files left in the folder: %v", ents)
	}
	// The target is a folder: the rename fails, the old content stays, and
	// the temporary file is removed.
	sub := filepath.Join(dir, "sub")
	os.Mkdir(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "x"), nil, 0o644)
	if err := WriteFile(sub, []byte("x"), 0o600); err == nil {
		t.Fatal("replacing a non-empty folder succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("temporary file left behind: %v", ents)
	}
}
