package shipper

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// The sent log reads back what was appended; a torn last entry (a write cut
// short by a full disk) hides only itself; compaction keeps the entries a
// restart from the offsets on disk would still need.
func TestSentLog(t *testing.T) {
	dir := t.TempDir()
	saved := map[string]int64{}
	l, err := openSentLog(dir, slog.New(slog.DiscardHandler), NewMetrics(), func() map[string]int64 { return saved })
	if err != nil {
		t.Fatal(err)
	}
	at := time.UnixMilli(time.Now().UnixMilli())
	want := []*sentBatch{
		{fileID: "1:2:ab", msgID: "id1-2", sentAt: at, end: mark{offset: 300, line: 3, advance: true}, records: []recExtent{{0, 100}, {200, 100}}},
		{fileID: "1:2:ab", msgID: "id3-2", sentAt: at, end: mark{offset: 300, line: 3}, records: []recExtent{{100, 100}, {400, 50}}},
		{fileID: "1:3:cd", msgID: "id5-1", sentAt: at, end: mark{offset: 900, line: 9, advance: true}, records: []recExtent{{800, 100}}},
	}
	for _, b := range want {
		l.add(b)
	}
	l.Close()
	path := filepath.Join(dir, sentLogFile)
	got, err := readSentLog(path)
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v, %v; want %+v", got, err, want)
	}

	// A torn entry at the end.
	b, _ := os.ReadFile(path)
	whole := len(b)
	os.WriteFile(path, append(b, appendSentBatch(nil, want[0])[:7]...), 0o600)
	if got, err := readSentLog(path); !errors.Is(err, errSentLogTorn) || len(got) != 3 {
		t.Fatalf("torn tail: %d entries, %v; want 3 and errSentLogTorn", len(got), err)
	}
	os.Truncate(path, int64(whole))

	// take: the batches of a file holding records at or beyond the offset.
	l, err = openSentLog(dir, slog.New(slog.DiscardHandler), NewMetrics(), func() map[string]int64 { return saved })
	if err != nil {
		t.Fatal(err)
	}
	if got := l.take("1:2:ab", 250); len(got) != 1 || got[0].msgID != "id3-2" {
		t.Fatalf("take from 250: %+v, want id3-2 only (id1-2's records are below it)", got)
	}
	if got := l.take("1:2:ab", 0); len(got) != 0 {
		t.Fatalf("taken twice: %+v", got)
	}

	// Compaction drops what the saved offsets passed.
	saved["1:2:ab"] = 450
	l.mu.Lock()
	l.compact()
	l.mu.Unlock()
	l.Close()
	got, err = readSentLog(path)
	if err != nil || len(got) != 1 || got[0].msgID != "id5-1" {
		t.Fatalf("after compaction: %+v, %v; want id5-1 only", got, err)
	}
}
