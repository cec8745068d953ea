package sink

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/faultline/faultline/rule"
)

func finding(id string, updates int) rule.Finding {
	return rule.Finding{ID: id, Rule: "r-" + id, Cause: "c-" + id, Severity: rule.SeverityCritical, Title: "title " + id,
		Status: "active", Updates: updates, Evidence: make([]rule.Evidence, updates+1)}
}

// Changes passes a version on once, and only what is new or changed; the
// versions known before (stored findings) are not passed again.
func TestChangesPassesNewVersionsOnce(t *testing.T) {
	var buf bytes.Buffer
	c := NewChanges([]rule.Finding{finding("a", 1)}, NewJSON(&buf, nil))
	ctx := context.Background()
	for _, batch := range [][]rule.Finding{
		{finding("a", 1)},                  // known from before: dropped
		{finding("b", 0), finding("a", 2)}, // new, changed
		{finding("b", 0)},                  // repeat: dropped
		{finding("a", 1)},                  // older version: dropped
	} {
		if err := c.Announce(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"id":"b"`) || !strings.Contains(lines[1], `"id":"a"`) ||
		!strings.Contains(lines[1], `"updates":2`) {
		t.Errorf("passed on:\n%s", buf.String())
	}
	if c.Len() != 2 {
		t.Errorf("Len %d, want 2", c.Len())
	}
}

// The terminal shows a finding in full once, then one line per change.
func TestTextShowsOnceThenChanges(t *testing.T) {
	var buf bytes.Buffer
	s := NewText(&buf, nil)
	ctx := context.Background()
	root := finding("a", 0)
	cons := finding("b", 0)
	cons.ExplainedBy = "a"
	s.Announce(ctx, []rule.Finding{root})
	s.Announce(ctx, []rule.Finding{cons})
	upd := root
	upd.Updates, upd.Evidence = 3, make([]rule.Evidence, 4)
	s.Announce(ctx, []rule.Finding{upd})
	out := buf.String()
	if strings.Count(out, "[CRITICAL] r-a — title a") != 1 {
		t.Errorf("root not shown exactly once in full:\n%s", out)
	}
	if !strings.Contains(out, "↳ consequence of r-a (a)") {
		t.Errorf("consequence not shown under its root announced earlier:\n%s", out)
	}
	if !strings.Contains(out, "↻ c-a [critical] a: 4 evidence record(s), update 3") {
		t.Errorf("update not one line:\n%s", out)
	}
}

type failing struct{ closed bool }

func (f *failing) Announce(context.Context, []rule.Finding) error { return errors.New("down") }
func (f *failing) Close() error                                   { f.closed = true; return nil }

// A failing sink does not keep the findings from the sinks after it.
func TestMultiKeepsGoing(t *testing.T) {
	var buf bytes.Buffer
	bad := &failing{}
	m := Multi{bad, NewJSON(&buf, nil)}
	err := m.Announce(context.Background(), []rule.Finding{finding("a", 0)})
	if err == nil || !strings.Contains(err.Error(), "down") {
		t.Errorf("error %v", err)
	}
	if !strings.Contains(buf.String(), `"id":"a"`) {
		t.Errorf("the second sink got nothing")
	}
	m.Close()
	if !bad.closed {
		t.Error("not closed")
	}
}
