package shipper_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// Bad input never stops the shipper: a 50 MB line, invalid UTF-8, a binary
// file and broken json-file records are each reported with file and offset,
// and the good lines around them still arrive.
func TestBadInputKeepsGoing(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	write := func(name string, parts ...string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(strings.Join(parts, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := strings.Repeat("x", 50<<20)
	hugeFile := write("huge.log", "before huge\n", huge, "\n", "after huge\n")
	utf8File := write("utf8.log", "bad \xff\xfe bytes\n", "after utf8\n")
	bin := make([]byte, 1<<20)
	rand.Read(bin)
	binFile := write("binary.log", "binary start\n", string(bin), "\nafter binary\n")
	jsonFile := write("c-json.log",
		`{"log":"good one\n","stream":"stdout","time":"2025-01-01T00:00:00.000000001Z"}`+"\n",
		`{"log":"broken`+"\n",
		`{"log":"after broken\n","stream":"stderr","time":"2025-01-01T00:00:00.000000002Z"}`+"\n")

	p := startShipper(t, shipperArgs(s.ClientURL(), "spark-1", filepath.Join(dir, "state"), "--path", filepath.Join(dir, "*.log"))...)
	want := []string{"after huge", "bad \ufffd bytes", "after utf8", "after binary", "good one", "after broken"}
	var c *contents
	testutil.CheckFor(t, 60*time.Second, 250*time.Millisecond, func() error {
		c = readStream(t, s.ClientURL())
		texts := c.texts()
		for _, w := range want {
			if texts[w] == 0 {
				return fmt.Errorf("%q not in the stream", w)
			}
		}
		return nil
	})
	// The 50 MB line became one record, cut to fit a message.
	for _, r := range c.records {
		if strings.HasPrefix(r.Text, "xxxx") && len(r.Text) > 1<<20 {
			t.Errorf("record of %d bytes at %s:%d: not truncated", len(r.Text), r.File, r.Offset)
		}
	}
	logs := p.stderr.String()
	for _, w := range []struct{ file, what string }{
		{hugeFile, "line too long"},
		{jsonFile, "bad input"},
		{utf8File, "invalid UTF-8"},
		{binFile, "binary data"},
	} {
		found := false
		for _, l := range strings.Split(logs, "\n") {
			if strings.Contains(l, w.what) && strings.Contains(l, "file="+w.file) && strings.Contains(l, "offset=") {
				found = true
			}
		}
		if !found {
			t.Errorf("no %q warning naming %s and an offset in:\n%s", w.what, w.file, tail(logs, 3000))
		}
	}
}
