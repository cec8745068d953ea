package sink

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/report"
)

// Text is the human report on a terminal. Findings it has not shown yet
// are written in full, as report.Text groups them (severity sections, each
// consequence under its root cause); a finding shown before gets one line
// saying what changed, so a live terminal shows each finding once however
// many lines prove it.
type Text struct {
	// Options shape each finding's block (how much evidence it shows).
	Options report.TextOptions
	w       io.Writer
	mu      sync.Mutex
	shown   map[string]finding.Finding // last version written, by ID
}

// NewText writes to w; shown are findings already on the reader's screen
// or in the store (serve's stored findings after a restart).
func NewText(w io.Writer, shown []finding.Finding) *Text {
	t := &Text{w: w, shown: make(map[string]finding.Finding, len(shown))}
	for _, f := range shown {
		t.shown[f.ID] = f
	}
	return t
}

func (t *Text) Announce(_ context.Context, fs []finding.Finding) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	var fresh []finding.Finding
	flush := func() {
		if len(fresh) == 0 {
			return
		}
		roots := map[string]finding.Finding{}
		for _, f := range fresh {
			if f.ExplainedBy != "" {
				roots[f.ExplainedBy] = t.shown[f.ExplainedBy]
			}
		}
		report.TextWithRoots(t.w, fresh, roots, t.Options)
		fresh = fresh[:0]
	}
	for _, f := range fs {
		old, seen := t.shown[f.ID]
		if seen && f.Revision != 0 && f.Revision == old.Revision {
			continue // delivered again (at least once): shown already
		}
		t.shown[f.ID] = f
		if !seen {
			fresh = append(fresh, f)
			continue
		}
		flush() // in the order they came
		fmt.Fprintf(t.w, "  ↻ %s [%s] %s: %s\n", f.Cause, f.Severity, f.ID, strings.Join(changes(old, f), "; "))
	}
	flush()
	return nil
}

func (t *Text) Close() error { return nil }

// changes says what differs between two versions of a finding.
func changes(old, f finding.Finding) []string {
	var what []string
	if old.Status != f.Status {
		what = append(what, "now "+string(f.Status))
	}
	if old.Severity != f.Severity {
		what = append(what, "severity "+string(f.Severity)+" (was "+string(old.Severity)+")")
	}
	if old.Confidence != f.Confidence {
		what = append(what, "confidence "+f.Confidence+" (was "+old.Confidence+")")
	}
	if !slices.Equal(old.Nodes, f.Nodes) {
		what = append(what, "nodes "+strings.Join(f.Nodes, ", "))
	}
	for _, r := range f.RuledOut {
		if !slices.ContainsFunc(old.RuledOut, func(o finding.RuledOut) bool { return o.Cause == r.Cause }) {
			what = append(what, "ruled out "+r.Cause)
		}
	}
	if old.Summary != f.Summary {
		what = append(what, "summary updated")
	}
	for _, n := range f.Notes {
		if !slices.Contains(old.Notes, n) {
			what = append(what, "note: "+n)
		}
	}
	return append(what, fmt.Sprintf("%d evidence record(s), update %d", len(f.Evidence), f.Updates))
}

// JSON writes one finding version per line (report.JSON, the schema of
// diagnose --json), for machines and log shippers.
type JSON struct {
	mu sync.Mutex
	w  io.Writer
	c  io.Closer // closed by Close when the sink opened the file

	// A file of its own (OpenJSONFile): a write cut short (a full disk) is
	// cut off again, so the retry does not append to a torn line that a
	// reader would take with the next version for one unreadable line.
	f    *os.File
	size int64 // the bytes known written whole
	torn bool  // bytes after size may remain from a failed write
	buf  bytes.Buffer
}

// NewJSON writes to w; if w is an io.Closer other than a terminal stream,
// pass closer to have Close close it.
func NewJSON(w io.Writer, closer io.Closer) *JSON { return &JSON{w: w, c: closer} }

// OpenJSONFile appends to the file at path, made if missing; Close closes it.
func OpenJSONFile(path string) (*JSON, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &JSON{w: f, c: f, f: f, size: st.Size()}, nil
}

func (j *JSON) Announce(_ context.Context, fs []finding.Finding) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		if err := report.JSON(j.w, fs); err != nil {
			return fmt.Errorf("findings as JSON: %w", err)
		}
		return nil
	}
	j.buf.Reset()
	if err := report.JSON(&j.buf, fs); err != nil {
		return fmt.Errorf("findings as JSON: %w", err)
	}
	if j.torn {
		if err := j.f.Truncate(j.size); err != nil {
			return fmt.Errorf("findings as JSON: cut the torn line off %s: %w", j.f.Name(), err)
		}
		j.torn = false
	}
	if _, err := j.f.Write(j.buf.Bytes()); err != nil {
		j.torn = j.f.Truncate(j.size) != nil
		return fmt.Errorf("findings as JSON: %w", err)
	}
	j.size += int64(j.buf.Len())
	return nil
}

func (j *JSON) Close() error {
	if j.c == nil {
		return nil
	}
	return j.c.Close()
}
