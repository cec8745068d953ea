package fanout

import (
	"context"
	"fmt"
	"slices"

	"github.com/faultline/faultline/index"
)

// Stream describes the partitioned stream the members share, for a
// fan-out to say what a result lacks (Options.Stream).
type Stream interface {
	// Partitions is how many partitions the stream has.
	Partitions() int
	// Messages are the messages stored in each partition (nil when not
	// known): asked only when a result lacks some.
	Messages(ctx context.Context) []uint64
}

// coverage adds to res every partition of the stream no answering member
// covered in full: those a member is re-indexing (its own Missing), those
// whose owner did not answer, and those nobody owns (a take-over under
// way). Without Options.Stream it does nothing.
func (f *Searcher) coverage(ctx context.Context, res *index.Result, ms []Peer, results []index.Result, errs []error) {
	if f.opts.Stream == nil {
		return
	}
	n := f.opts.Stream.Partitions()
	covered := make([]bool, n)
	var gaps []index.Gap
	known := func(p int) bool {
		return p < 0 || p >= n || covered[p] || slices.ContainsFunc(gaps, func(g index.Gap) bool { return g.Partition == p })
	}
	for i, r := range results {
		if errs[i] != nil {
			continue
		}
		for _, p := range r.Covered {
			if p >= 0 && p < n {
				covered[p] = true
			}
		}
	}
	for i, r := range results {
		if errs[i] != nil {
			continue
		}
		for _, g := range r.Missing {
			if !known(g.Partition) {
				g.Owner = ms[i].Name
				gaps = append(gaps, g)
			}
		}
	}
	for i, m := range ms {
		if errs[i] == nil {
			continue
		}
		for _, p := range m.Owns {
			if !known(p) {
				gaps = append(gaps, index.Gap{Partition: p, Reason: index.GapNoAnswer, Owner: m.Name})
			}
		}
	}
	for p := range n {
		if !known(p) {
			gaps = append(gaps, index.Gap{Partition: p, Reason: index.GapUnowned})
		}
	}
	if len(gaps) == 0 {
		return
	}
	slices.SortFunc(gaps, func(a, b index.Gap) int { return a.Partition - b.Partition })
	msgs := f.opts.Stream.Messages(ctx)
	var all, lack uint64
	for _, m := range msgs {
		all += m
	}
	for i := range gaps {
		g := &gaps[i]
		if len(msgs) == n {
			if g.Messages == 0 || g.Messages > msgs[g.Partition] {
				g.Messages = msgs[g.Partition]
			}
			lack += g.Messages
		}
		res.Partial = append(res.Partial, describeGap(*g))
	}
	res.Missing = gaps
	switch {
	case all > 0:
		res.MissingShare = float64(lack) / float64(all)
	case len(msgs) != n:
		res.MissingShare = float64(len(gaps)) / float64(n) // by partitions, the messages not known
	}
}

func describeGap(g index.Gap) string {
	s := fmt.Sprintf("partition %d: %s", g.Partition, g.Reason)
	if g.Owner != "" {
		s += " (" + g.Owner + ")"
	}
	if g.Messages > 0 {
		s += fmt.Sprintf(", %d messages", g.Messages)
	}
	return s
}
