package index

import (
	"sync"
	"sync/atomic"

	"github.com/blevesearch/bleve/v2/numeric"
	bindex "github.com/blevesearch/bleve_index_api"
)

// freqCache shares the token frequencies of repeated values between
// documents. Most keyword values (cluster, node, level, source, file...)
// repeat on every event, and so do the time buckets of events seconds
// apart; building a fresh map per field per document was a sixth of the
// analysis and a large share of the allocations (and so of the GC).
// Bleve only reads a field's frequencies (it merges into them only when a
// document has two fields of one name, which docBuilder never makes), so
// one map can serve every document, in any number of segments at once.
type freqCache struct {
	limit int // of kw entries: maxCachedKeywords, 0 in tests that build every field afresh
	mu    sync.RWMutex
	kw    map[kwKey]bindex.TokenFrequencies
	// time is the bucket terms of the last event's finest bucket.
	time atomic.Pointer[timeFreqs]
}

type kwKey struct{ field, value string }

type timeFreqs struct {
	bucket int64 // ns >> timeShifts[0]
	freqs  bindex.TokenFrequencies
}

// Bounds of the keyword cache: values past them are built per document.
// Distinct values are few (nodes, files, components), but a field like
// ip or process could have many, and the cache lives as long as the index.
const (
	maxCachedKeywords = 1 << 14
	maxCachedValueLen = 256
)

func newFreqCache() *freqCache {
	return &freqCache{limit: maxCachedKeywords, kw: make(map[kwKey]bindex.TokenFrequencies)}
}

// keyword returns the shared frequencies of a single-term field, or nil
// when the value is not cached (too long, or the cache is full).
func (c *freqCache) keyword(field, value string) bindex.TokenFrequencies {
	if len(value) > maxCachedValueLen {
		return nil
	}
	k := kwKey{field, value}
	c.mu.RLock()
	tfs, ok := c.kw[k]
	c.mu.RUnlock()
	if ok {
		return tfs
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if tfs, ok := c.kw[k]; ok {
		return tfs
	}
	if len(c.kw) >= c.limit {
		return nil
	}
	tf := &bindex.TokenFreq{Term: []byte(value)}
	tf.SetFrequency(1)
	tfs = bindex.TokenFrequencies{value: tf}
	c.kw[k] = tfs
	return tfs
}

// buckets returns the frequencies of the time bucket terms of ns (one per
// width of timeShifts). Consecutive events nearly always share the finest
// bucket (4.3 s), so the last one is kept.
func (c *freqCache) buckets(ns int64) bindex.TokenFrequencies {
	b := ns >> timeShifts[0]
	if last := c.time.Load(); last != nil && last.bucket == b {
		return last.freqs
	}
	buf := make([]byte, 10*len(timeShifts))
	tfs := make([]bindex.TokenFreq, len(timeShifts))
	freqs := make(bindex.TokenFrequencies, len(timeShifts))
	for i, s := range timeShifts {
		var t []byte
		t, buf, _ = numeric.NewPrefixCodedInt64Prealloc(ns, s, buf)
		tfs[i].Term = t
		tfs[i].SetFrequency(1)
		freqs[string(t)] = &tfs[i]
	}
	c.time.Store(&timeFreqs{bucket: b, freqs: freqs})
	return freqs
}
