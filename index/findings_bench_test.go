package index

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/finding"
)

// benchFinding is a finding of the size serve stores (a summary, a fix and
// a dozen evidence lines: ~4 KB of JSON).
func benchFinding(i, updates int) finding.Finding {
	f := finding.Finding{ID: fmt.Sprintf("f%07d", i), Rule: "ray-node-ip-mismatch", Cause: "ray-node-ip-mismatch",
		Severity: finding.Critical, Confidence: "high", Title: "Placement request names node:192.168.200.12",
		Summary:     strings.Repeat("vLLM asked Ray to place a worker on node:192.168.200.12. ", 8),
		Remediation: strings.Repeat("Make vLLM and Ray use the same address for every node. ", 8),
		Cluster:     fmt.Sprintf("c%d", i%100), Launch: 1, Nodes: []string{"spark-1", "spark-2"}, Status: finding.Active,
		Facts:     map[string][]string{"requested_node": {"192.168.200.12"}, "registered_ip": {"10.1.230.180", "10.1.230.181"}},
		FirstSeen: time.Date(2026, 4, 8, 22, 41, 0, 0, time.UTC), Updates: updates, Revision: updates}
	for j := range 12 {
		f.Evidence = append(f.Evidence, finding.Evidence{Fact: "registered_ip", Node: "spark-1", File: "/ray/gcs_server.out", Line: j + 1,
			Time: f.FirstSeen, Text: strings.Repeat("Registering node info, node id = 3f2a, address = 10.1.230.180 ", 3), RecordID: fmt.Sprintf("r%d", j)})
	}
	return f
}

// BenchmarkPutFindings is the cost of storing one new version of a finding
// (what serve does per announcement, on the lane) with n findings stored:
// it must not grow with n.
//
//	go test ./index -run '^$' -bench PutFindings -benchtime 200x
func BenchmarkPutFindings(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			x, err := Open(b.TempDir(), Options{Shards: 1})
			if err != nil {
				b.Fatal(err)
			}
			defer x.Close()
			batch := make([]finding.Finding, 0, 1000)
			for i := range n {
				batch = append(batch, benchFinding(i, 1))
				if len(batch) == cap(batch) || i == n-1 {
					if err := x.PutFindings(batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			b.ResetTimer()
			for i := range b.N {
				if err := x.PutFindings([]finding.Finding{benchFinding(i%n, 2+i/n)}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
