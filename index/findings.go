package index

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/faultline/faultline/finding"
)

// Findings are few (tens per launch) and always read whole, so they live in
// one JSON file beside the index rather than in Bleve.

func (x *Index) findingsPath() string { return filepath.Join(x.dir, "findings.json") }

func (x *Index) loadFindings() error {
	b, err := os.ReadFile(x.findingsPath())
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read findings: %w", err)
	}
	var fs []finding.Finding
	if err := json.Unmarshal(b, &fs); err != nil {
		return fmt.Errorf("read findings %s: %w", x.findingsPath(), err)
	}
	x.findings = fs
	return nil
}

// PutFindings upserts findings by ID (a finding seen again replaces the
// stored one, so ingesting the same logs twice keeps one copy) and writes
// the file.
func (x *Index) PutFindings(fs []finding.Finding) error {
	if x.opts.ReadOnly {
		return ErrReadOnly
	}
	x.findingsMu.Lock()
	defer x.findingsMu.Unlock()
	all := slices.Clone(x.findings)
	for _, f := range fs {
		i := slices.IndexFunc(all, func(g finding.Finding) bool { return g.ID == f.ID })
		if i >= 0 {
			all[i] = f
		} else {
			all = append(all, f)
		}
	}
	sortFindings(all)
	b, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		return fmt.Errorf("encode findings: %w", err)
	}
	if err := writeFileAtomic(x.findingsPath(), b); err != nil {
		return fmt.Errorf("write findings: %w", err)
	}
	x.findings = all
	return nil
}

// Findings returns the stored findings: root causes first, then by
// severity and first appearance.
func (x *Index) Findings() []finding.Finding {
	x.findingsMu.Lock()
	defer x.findingsMu.Unlock()
	return slices.Clone(x.findings)
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
