package cluster

import (
	"context"
	"fmt"
	"testing"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/testutil"
)

// BenchmarkClaimsAnnounce is the cost of announcing one new version of a
// finding through the findings bucket (a reservation and its confirmation:
// two compare-and-sets) with n findings stored: it must not grow with n.
//
//	go test ./cluster -run '^$' -bench ClaimsAnnounce -benchtime 500x
func BenchmarkClaimsAnnounce(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			srv := testutil.RunJetStreamServer(b)
			c := joinTest(b, srv.ClientURL(), "a")
			ctx := context.Background()
			f := finding.Finding{Rule: "r", Cause: "c", Status: finding.Active, Title: "t", Summary: "s"}
			for i := range n {
				f.ID, f.Updates = fmt.Sprintf("f%07d", i), 1
				g, ok, err := c.Reserve(ctx, f)
				if err != nil || !ok {
					b.Fatalf("fill %d: %v %v", i, ok, err)
				}
				if err := c.Confirm(ctx, g); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := range b.N {
				f.ID, f.Updates = fmt.Sprintf("f%07d", i%n), 2+i/n
				g, ok, err := c.Reserve(ctx, f)
				if err != nil || !ok {
					b.Fatalf("reserve: %v %v", ok, err)
				}
				if err := c.Confirm(ctx, g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
