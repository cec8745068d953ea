package index

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search/query"
	bindex "github.com/blevesearch/bleve_index_api"
)

// readers opens a reader on every shard; close them with the returned func.
func (x *Index) readers() ([]bindex.IndexReader, func(), error) {
	var rs []bindex.IndexReader
	closeAll := func() {
		for _, r := range rs {
			r.Close()
		}
	}
	for _, s := range x.shards {
		ai, err := s.idx.Advanced()
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		r, err := ai.Reader()
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		rs = append(rs, r)
	}
	return rs, closeAll, nil
}

// hasFileLines tells whether h was indexed with its FieldFileLine term.
func (x *Index) hasFileLines(h Hit) (bool, error) {
	term := []byte(fileLineKey(h.Node, h.File) + padLine(h.Line))
	rs, closeAll, err := x.readers()
	if err != nil {
		return false, err
	}
	defer closeAll()
	for _, r := range rs {
		lines, err := walkLines(r, term, term, 1)
		if err != nil {
			return false, err
		}
		if len(lines) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// walkLines returns up to max terms of FieldFileLine in [lo, hi], in order.
func walkLines(r bindex.IndexReader, lo, hi []byte, max int) ([]string, error) {
	d, err := r.FieldDictRange(FieldFileLine, lo, hi)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	var out []string
	for len(out) < max {
		e, err := d.Next()
		if err != nil {
			return nil, err
		}
		if e == nil {
			break
		}
		out = append(out, e.Term)
	}
	return out, nil
}

// contextByFileLines finds the n lines of the file before and after the
// event by walking the file's own stretch of the FieldFileLine dictionary
// (a few terms per neighbour, in every shard), then fetches the records on
// those lines: milliseconds and constant memory, however large the index.
func (x *Index) contextByFileLines(ctx context.Context, c Context, n int) (Context, error) {
	h := c.Hit
	key := fileLineKey(h.Node, h.File)
	rs, closeAll, err := x.readers()
	if err != nil {
		return Context{}, err
	}
	defer closeAll()
	// After: the first n lines above h's, in each shard; the n smallest of
	// them all are the file's next n lines.
	var after []string
	for _, r := range rs {
		ls, err := walkLines(r, []byte(key+padLine(h.Line+1)), []byte(key+"~"), n)
		if err != nil {
			return Context{}, err
		}
		after = append(after, ls...)
	}
	slices.Sort(after)
	after = slices.Compact(after)
	after = after[:min(n, len(after))]
	// Before: the dictionary runs forwards, so windows of lines below h's
	// that widen until they hold n lines (or reach the file's start).
	var before []string
	for k := 2 * n; ; k *= 4 {
		if err := ctx.Err(); err != nil {
			return Context{}, err
		}
		lo := max(h.Line-k, 0)
		before = before[:0]
		for _, r := range rs {
			ls, err := walkLines(r, []byte(key+padLine(lo)), []byte(key+padLine(h.Line-1)), k+1)
			if err != nil {
				return Context{}, err
			}
			before = append(before, ls...)
		}
		if h.Line-1 < lo {
			before = before[:0] // no line below
		}
		slices.Sort(before)
		before = slices.Compact(before)
		if len(before) >= n || lo == 0 {
			break
		}
	}
	before = before[max(len(before)-n, 0):]

	fetch := func(lines []string) ([]Hit, error) {
		if len(lines) == 0 {
			return []Hit{}, nil
		}
		qs := make([]query.Query, len(lines))
		for i, l := range lines {
			t := bleve.NewTermQuery(l)
			t.SetField(FieldFileLine)
			qs[i] = t
		}
		nq := bleve.NewTermQuery(h.Node)
		nq.SetField(FieldNode)
		fq := bleve.NewTermQuery(h.File)
		fq.SetField(FieldFile)
		var q query.Query = bleve.NewDisjunctionQuery(qs...)
		if len(qs) == 1 {
			q = qs[0]
		}
		// The node and file terms guard against a hash collision of keys.
		req := bleve.NewSearchRequestOptions(bleve.NewConjunctionQuery(nq, fq, q), 10000, 0, false)
		req.Fields = storedFields
		req.Score = "none"
		sr, err := x.alias.SearchInContext(ctx, req)
		if err != nil {
			return nil, fmt.Errorf("context of %s: %w", h.ID, err)
		}
		hits := make([]Hit, 0, len(sr.Hits))
		for _, dm := range sr.Hits {
			if dm.ID != h.ID {
				hits = append(hits, hitFromMatch(dm))
			}
		}
		slices.SortFunc(hits, func(a, b Hit) int {
			return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Offset, b.Offset))
		})
		return hits, nil
	}
	b, err := fetch(before)
	if err != nil {
		return Context{}, err
	}
	a, err := fetch(after)
	if err != nil {
		return Context{}, err
	}
	c.Before = b[max(len(b)-n, 0):]
	c.After = a[:min(n, len(a))]
	return c, nil
}
