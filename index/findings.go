package index

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/faultline/faultline/finding"
)

// Findings live beside the index, not in Bleve: DIR/findings/ holds
// segments of one JSON line per version stored, appended and fsynced per
// PutFindings, so a put costs its own lines however many findings are
// stored (a single JSON file rewritten per put cost 68 ms at 1,000 findings
// and 609 ms at 10,000). A segment is closed at segmentBytes and the next
// begun: a sync of a file hundreds of megabytes long costs a third more
// here than of a small one. Opening reads the segments in order, the last
// line of an ID winning, and writes them anew once when most lines are old
// versions; findings.json of earlier versions is taken over.

const (
	findingsDirName  = "findings"
	findingsJSONName = "findings.json" // before findings/
	segmentBytes     = 8 << 20
	// compactAbove: segments with more lines than this and over twice as
	// many as findings are rewritten at open.
	compactAbove = 1024
)

// findingsLog is the segment appended to.
type findingsLog struct {
	dir  string
	seq  int // its number
	f    *os.File
	size int64 // the bytes known written and synced
	torn bool  // bytes after size may remain from a failed write
}

func segmentName(seq int) string { return fmt.Sprintf("%06d.log", seq) }

// segments are the segment numbers in dir, in order.
func segments(dir string) ([]int, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, e := range ents {
		var n int
		if _, err := fmt.Sscanf(e.Name(), "%06d.log", &n); err == nil && e.Name() == segmentName(n) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out, nil
}

// loadFindings reads the stored findings and, unless read-only, opens the
// last segment for appending.
func (x *Index) loadFindings() error {
	x.findingAt = map[string]int{}
	dir := filepath.Join(x.dir, findingsDirName)
	segs, err := segments(dir)
	if errors.Is(err, fs.ErrNotExist) {
		err = x.readFindingsJSON()
	} else if err != nil {
		return fmt.Errorf("read findings: %w", err)
	}
	if err != nil {
		return err
	}
	lines := 0
	for i, seq := range segs {
		n, err := x.readSegment(filepath.Join(dir, segmentName(seq)), i == len(segs)-1)
		if err != nil {
			return err
		}
		lines += n
	}
	if x.opts.ReadOnly {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("findings: %w", err)
	}
	next := 1
	if len(segs) > 0 {
		next = segs[len(segs)-1]
	}
	if segs == nil && len(x.findings) > 0 || lines > compactAbove && lines > 2*len(x.findings) {
		if next, err = x.rewriteFindings(dir, segs); err != nil {
			return err
		}
	}
	if x.flog, err = openSegment(dir, next); err != nil {
		return err
	}
	if err := os.Remove(filepath.Join(x.dir, findingsJSONName)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		x.log.Warn("findings.json taken over into findings/ but not removed", "err", err)
	}
	return nil
}

func openSegment(dir string, seq int) (*findingsLog, error) {
	f, err := os.OpenFile(filepath.Join(dir, segmentName(seq)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open findings: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open findings: %w", err)
	}
	return &findingsLog{dir: dir, seq: seq, f: f, size: st.Size()}, nil
}

// readSegment reads one segment into x.findings and returns its line
// count. A line that does not decode is skipped with a warning naming it;
// the last segment's last line cut short (a crash during a put, which
// never returned) is cut off the file.
func (x *Index) readSegment(path string, last bool) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("read findings: %w", err)
	}
	lines := 0
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			x.log.Warn("findings: incomplete last line dropped", "path", fmt.Sprintf("%s:%d", path, lines+1))
			if last && !x.opts.ReadOnly {
				st, err := os.Stat(path)
				if err == nil {
					err = os.Truncate(path, st.Size()-int64(len(b)))
				}
				if err != nil {
					return 0, fmt.Errorf("findings: %w", err)
				}
			}
			break
		}
		lines++
		var f finding.Finding
		if err := json.Unmarshal(b[:i], &f); err != nil || f.ID == "" {
			x.log.Warn("findings: line skipped", "path", fmt.Sprintf("%s:%d", path, lines), "err", err)
		} else {
			x.putFinding(f)
		}
		b = b[i+1:]
	}
	return lines, nil
}

// readFindingsJSON reads the findings.json of versions before the log.
func (x *Index) readFindingsJSON() error {
	path := filepath.Join(x.dir, findingsJSONName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read findings: %w", err)
	}
	var fs []finding.Finding
	if err := json.Unmarshal(b, &fs); err != nil {
		return fmt.Errorf("read findings %s: %w", path, err)
	}
	for _, f := range fs {
		x.putFinding(f)
	}
	return nil
}

// rewriteFindings writes the latest version of each finding into new
// segments after old ones, then removes the old (at open only, never on a
// put); it returns the number of the last segment written.
func (x *Index) rewriteFindings(dir string, old []int) (int, error) {
	seq := 1
	if len(old) > 0 {
		seq = old[len(old)-1] + 1
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	flush := func() error {
		if err := writeFileAtomic(filepath.Join(dir, segmentName(seq)), buf.Bytes()); err != nil {
			return fmt.Errorf("write findings: %w", err)
		}
		buf.Reset()
		return nil
	}
	for _, f := range x.findings {
		if err := enc.Encode(f); err != nil {
			return 0, fmt.Errorf("encode findings: %w", err)
		}
		if buf.Len() >= segmentBytes {
			if err := flush(); err != nil {
				return 0, err
			}
			seq++
		}
	}
	if err := flush(); err != nil {
		return 0, err
	}
	for _, n := range old {
		if err := os.Remove(filepath.Join(dir, segmentName(n))); err != nil {
			return 0, fmt.Errorf("findings: %w", err)
		}
	}
	return seq, nil
}

// putFinding upserts f in memory (under findingsMu, or before the index is
// shared).
func (x *Index) putFinding(f finding.Finding) {
	if i, ok := x.findingAt[f.ID]; ok {
		x.findings[i] = f
	} else {
		x.findingAt[f.ID] = len(x.findings)
		x.findings = append(x.findings, f)
	}
	x.sortedFindings = nil
}

// PutFindings upserts findings by ID (a finding seen again replaces the
// stored one, so ingesting the same logs twice keeps one copy): their lines
// are appended to the log and synced before it returns.
func (x *Index) PutFindings(fs []finding.Finding) error {
	if x.opts.ReadOnly {
		return ErrReadOnly
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, f := range fs {
		if err := enc.Encode(f); err != nil {
			return fmt.Errorf("encode finding %s: %w", f.ID, err)
		}
	}
	x.findingsMu.Lock()
	defer x.findingsMu.Unlock()
	l := x.flog
	if l == nil {
		return errors.New("write findings: the index is closed")
	}
	if l.size >= segmentBytes {
		next, err := openSegment(l.dir, l.seq+1)
		if err != nil {
			return err
		}
		l.f.Close()
		x.flog, l = next, next
	}
	if err := l.append(buf.Bytes()); err != nil {
		// A full disk: the caller (the ledger) retries; the condition is
		// the index's stall, logged once and said by Health.
		x.stalled(findingsShard, err)
		return err
	}
	x.resumed(findingsShard)
	for _, f := range fs {
		x.putFinding(f)
	}
	return nil
}

// findingsShard is the findings log's key among the stalled writers.
const findingsShard = -1

// append writes b and syncs it, or leaves the file as it was: a write cut
// short by a full disk is cut off again, so the next put does not append
// to a torn line (which made both unreadable at the next open, and the
// version put after space returned was lost).
func (l *findingsLog) append(b []byte) error {
	if l.torn {
		if err := l.f.Truncate(l.size); err != nil {
			return fmt.Errorf("write findings: cut the torn line off %s: %w", l.f.Name(), err)
		}
		l.torn = false
	}
	_, err := l.f.Write(b)
	if err == nil {
		err = l.f.Sync()
	}
	if err != nil {
		l.torn = true
		if terr := l.f.Truncate(l.size); terr == nil {
			l.torn = false
		}
		return fmt.Errorf("write findings: %w", err)
	}
	l.size += int64(len(b))
	return nil
}

// Findings returns the stored findings: root causes first, then by
// severity and first appearance.
func (x *Index) Findings() []finding.Finding {
	x.findingsMu.Lock()
	defer x.findingsMu.Unlock()
	if x.sortedFindings == nil {
		x.sortedFindings = slices.Clone(x.findings)
		sortFindings(x.sortedFindings)
	}
	return slices.Clone(x.sortedFindings)
}

// closeFindings closes the log.
func (x *Index) closeFindings() error {
	x.findingsMu.Lock()
	defer x.findingsMu.Unlock()
	if x.flog == nil {
		return nil
	}
	err := x.flog.f.Close()
	x.flog = nil
	if err != nil {
		return fmt.Errorf("close findings: %w", err)
	}
	return nil
}

func sortFindings(fs []finding.Finding) {
	slices.SortStableFunc(fs, func(a, b finding.Finding) int {
		if (a.ExplainedBy == "") != (b.ExplainedBy == "") {
			if a.ExplainedBy == "" {
				return -1
			}
			return 1
		}
		if d := finding.Severity(b.Severity).Rank() - finding.Severity(a.Severity).Rank(); d != 0 {
			return d
		}
		return a.FirstSeen.Compare(b.FirstSeen)
	})
}
