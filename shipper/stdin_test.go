package shipper_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
)

// TestStdinRunsAreAllKept: the same bytes piped twice, with the same and
// with a fresh state dir, are three runs and all three are stored. Stdin
// records were keyed by node, name and offset only, so every later run was
// dropped by JetStream as a duplicate of the first, without a word.
func TestStdinRunsAreAllKept(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	var in strings.Builder
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&in, "s line %07d INFO something happened here\n", i)
	}
	for run, state := range []string{"state", "state", "fresh-state"} {
		cmd := exec.Command(shipperBin(t), append(shipperArgs(s.ClientURL(), "spark-1", filepath.Join(dir, state)), "-")...)
		cmd.Stdin = strings.NewReader(in.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("run %d: shipper -: %v\n%s", run+1, err, out)
		}
	}
	c := readStream(t, s.ClientURL())
	if got := c.distinct(); got != 600 || c.dups() != 0 {
		t.Fatalf("stream holds %d distinct records (%d duplicates), want 600: 3 runs of 200", got, c.dups())
	}
	for text, n := range c.texts() {
		if n != 3 {
			t.Fatalf("%q stored %d times, want once per run (3)", text, n)
		}
	}
}

// TestDuplicateDropIsLogged: a file shipped again from the start (its
// state dir lost) is dropped by JetStream's de-duplication, which is right,
// and the shipper says so at debug level with the batch's ID.
func TestDuplicateDropIsLogged(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "a.log")
	appendLines(t, log, "d", 0, 50)
	first := startShipper(t, shipperArgs(s.ClientURL(), "spark-1", filepath.Join(dir, "state-1"), "--path", log)...)
	testutil.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if m := missing(readStream(t, s.ClientURL()), "d", 50); len(m) > 0 {
			return fmt.Errorf("%d lines not shipped yet", len(m))
		}
		return nil
	})
	first.stop(t)
	c := readStream(t, s.ClientURL())

	again := startShipper(t, shipperArgs(s.ClientURL(), "spark-1", filepath.Join(dir, "state-2"), "--path", log)...)
	idRE := regexp.MustCompile(`msg="batch dropped as a duplicate[^"]*".* id=(\S+)`)
	testutil.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		m := idRE.FindStringSubmatch(again.stderr.String())
		if m == nil {
			return fmt.Errorf("no debug line for the dropped batch yet")
		}
		first, _, ok := strings.Cut(m[1], "-")
		if !ok || c.ids[first] == 0 {
			return fmt.Errorf("logged id %q does not name a stored record's batch", m[1])
		}
		return nil
	})
	again.stop(t)
	if c2 := readStream(t, s.ClientURL()); c2.distinct() != 50 || c2.dups() != 0 {
		t.Fatalf("after shipping again: %d distinct records, %d duplicates; want 50, 0", c2.distinct(), c2.dups())
	}
}
