package index

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/parsers"
)

// TestIndexTerms: what each kind of token is indexed as: the words and
// addresses people search for exactly, numbers, hex IDs and the compounds
// holding them in buckets.
func TestIndexTerms(t *testing.T) {
	for _, c := range []struct {
		tok   string
		term  string
		exact bool
	}{
		{"rayactorerror", "rayactorerror", true},
		{"enp1s0f0np0", "enp1s0f0np0", true},
		{"5ms", "5ms", true},
		{"212", "212", true},
		{"6379", "6379", true},
		{"48341", "\x01n548", false},
		{"1918587", "\x01n719", false},
		{"e332b643", "\x01he33", false},
		{"deadbeef", "deadbeef", true}, // no digit: a word
		{"0x611e66c0", "\x01x611", false},
		{"0x1f", "0x1f", true},
		{strings.Repeat("verylongword", 4), "\x01lvery", false},
		{"192.168.200.12", "192.168.200.12", true},
		{"node:192.168.200.12", "node:192.168.200.12", true},
		{"192.168.200.12:6379", "192.168.200.12:6379", true},
		{"10.1.249.61:59666", "\x01p10.", false},
		{"fe80::1", "fe80::1", true},
		{"ray_utils.py:212", "ray_utils.py:212", true},
		{"nccl_socket_ifname=enp1s0f0np0", "nccl_socket_ifname=enp1s0f0np0", true},
		{"2026-04-08", "\x01p202", false},
		{"22:00:00", "\x01p22:", false},
		{"spark-3:12345:12346", "\x01pspa", false},
		{"actor_id=2291f39f73bd05e5c94d2ffedd288c09", "\x01pact", false},
		{"0.8.5", "\x01p0.8", false},
		{"v0.8.5", "v0.8.5", true},
		{"ümlaut", "ümlaut", true},
	} {
		term, exact := indexTerm([]byte(c.tok), nil)
		if string(term) != c.term || exact != c.exact {
			t.Errorf("indexTerm(%q) = %q %v, want %q %v", c.tok, term, exact, c.term, c.exact)
		}
	}
}

// trickyEvents hold the tokens the index buckets or special-cases, in
// several shapes each.
func trickyEvents() []*parsers.Event {
	msgs := []string{
		"connect to 10.1.249.61:59666 failed : Connection refused",
		"connect to 10.1.249.61:6379 ok",
		"resources={node:10.1.2.3:1} pending",
		"Placement request {'node:192.168.200.12': 0.001} cannot be met",
		"node 192.168.200.12 joined",
		"actor_id=2291f39f73bd05e5c94d2ffedd288c09 died",
		"actor 2291f39f73bd05e5c94d2ffedd288c09 restarted",
		"comm 0x611e66c0 rank 3 nRanks 8",
		"comm 0x611e66c1 rank 4 nRanks 8",
		"2026-04-08 22:00:00,006 INFO services.py:1361 -- Task b98bd6104d6744f9 finished in 70.521 s",
		"worker-e332b6433598c5756d85d0dc7eb61ad7-01000000-880.out written",
		"spark-3:12345:12346 [0] NCCL INFO Bootstrap : Using eth0:10.1.0.7<0>",
		"vllm 0.8.5 and v0.8.5 and 0.8.50",
		"Größe überschritten: Ümlaut-Fehler 4711",
		"pid=48213 tid=48214 error code 10054 errno 111",
		"base64 " + strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo", 2) + " end",
		"distributed_init_method=tcp://10.1.230.180:48341 backend=nccl",
		"ray.exceptions.RayActorError: The actor died unexpectedly",
		"deadbeef cafebabe 0xdeadbeef12 DEADBEEF12",
	}
	var evs []*parsers.Event
	for i, m := range msgs {
		for k := range 3 {
			e := ev(fmt.Sprintf("spark-%d", 1+k), "tricky.log", i*3+k+1, i*3+k, parsers.SourceRay, parsers.LevelInfo, m)
			evs = append(evs, e)
		}
	}
	return evs
}

// TestQueriesAgreeWithRecords is the index's acceptance test: random
// queries of every kind (terms as typed, parts, phrases, prefixes and
// infixes, regexps, fuzzy terms, NOT, OR, field filters, time ranges),
// drawn from the tokens of realistic and tricky messages, find through
// the index's terms and catalog exactly the events that matching every
// event one by one finds.
func TestQueriesAgreeWithRecords(t *testing.T) {
	dir := t.TempDir()
	paths := loggenCorpus(t, dir, 3, 4000)
	var evs []*parsers.Event
	parseCorpus(t, paths, func(e *parsers.Event) {
		ev := *e
		evs = append(evs, &ev)
	})
	evs = append(evs, seedEvents()...)
	evs = append(evs, trickyEvents()...)
	x := openTest(t, Options{Shards: 3, BatchSize: 700})
	addAll(t, x, evs)

	r := rand.New(rand.NewPCG(7, 8))
	pick := func() (*parsers.Event, []recordToken) {
		for {
			e := evs[r.IntN(len(evs))]
			if toks := messageTokens(e.Message); len(toks) > 0 {
				return e, toks
			}
		}
	}
	word := func() string {
		e, toks := pick()
		tk := toks[r.IntN(len(toks))]
		return e.Message[tk.start:tk.end]
	}
	var queries []Query
	for range 400 {
		var text string
		switch k := r.IntN(12); k {
		case 0, 1, 2:
			text = word()
		case 3: // a phrase of a few consecutive words
			e, toks := pick()
			i := r.IntN(len(toks))
			j := min(i+1+r.IntN(4), len(toks))
			end := 0
			for _, tk := range toks[i:j] {
				end = max(end, tk.end)
			}
			text = `"` + strings.ReplaceAll(e.Message[toks[i].start:end], `"`, ``) + `"`
		case 4: // a prefix
			w := word()
			text = w[:max(1, len(w)*2/3)] + "*"
		case 5: // an infix
			w := strings.ToLower(word())
			if len(w) >= 4 {
				text = "*" + w[1:len(w)-1] + "*"
			} else {
				text = w + "*"
			}
		case 6: // a regexp
			w := strings.ToLower(word())
			text = "/" + regexpQuote(w[:max(1, len(w)/2)]) + ".*/"
		case 7: // fuzzy
			w := word()
			text = w + "~1"
		case 8:
			text = word() + " -" + word()
		case 9:
			text = word() + " OR " + word()
		case 10:
			text = word() + " level:" + []string{"info", "warning", "error"}[r.IntN(3)]
		case 11:
			text = "node:spark-" + fmt.Sprint(1+r.IntN(3)) + " " + word()
		}
		q := Query{Text: text, Size: -1}
		if r.IntN(4) == 0 {
			e := evs[r.IntN(len(evs))]
			if !e.Time.IsZero() {
				q.Since = e.Time
				q.Until = e.Time.Add(time.Duration(r.IntN(600)) * time.Second)
			}
		}
		queries = append(queries, q)
	}
	for _, q := range []string{"node:192.168.200.12", "10.1.249.61:59666", "10.1.249.61", "59666", "2291f39f73bd05e5c94d2ffedd288c09",
		"2291f39f*", "0x611e66c*", "/0x611e66c[01]/", "*0000-880*", "2026-04-08", "22:00:00", "0.8.5", "v0.8.5", "spark-3:12345:12346",
		"12345", "*12345*", "Ümlaut", "überschritten", "*mlaut*", "10054", "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo*",
		"tcp://10.1.230.180:48341", "*init_method*", "deadbeef", "deadbeef12", "0xdeadbeef12", "node:10.1.2.3",
		"\"node 192.168.200.12\"", "192.168", "10.1.249.*", "*:59666", "/[0-9]+/", "rayactorerrorr~1", "4711~1"} {
		queries = append(queries, Query{Text: q, Size: -1})
	}
	ctx := context.Background()
	recs := bruteRecords(evs)
	var indexTook time.Duration
	for _, q := range queries {
		want := bruteMatch(t, recs, q)
		q.Size = 10000
		start := time.Now()
		res, err := x.Search(ctx, q)
		indexTook += time.Since(start)
		if errors.Is(err, ErrQueryTooBroad) {
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", q.Text, err)
			continue
		}
		if res.Total != uint64(len(want)) {
			t.Errorf("%q (since %v): %d hits, want %d", q.Text, q.Since, res.Total, len(want))
			continue
		}
		if len(want) <= 10000 {
			if g, w := ids(res.Hits, true), ids(want, true); !slices.Equal(g, w) {
				t.Errorf("%q: other hits than matching finds", q.Text)
			}
		}
	}
	t.Logf("%d queries over %d events: %v in the index", len(queries), len(evs), indexTook)
}

// TestMaskCodes: every mask of every block size codes and decodes to
// itself.
func TestMaskCodes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for n := 1; n <= blockCap; n++ {
		masks := []uint64{maskN(n), 1, 1 << (n - 1), maskN(n) &^ 1}
		for lo := 0; lo < n; lo++ {
			for hi := lo; hi < n; hi++ {
				masks = append(masks, maskN(hi+1)&^maskN(lo))
			}
		}
		for range 200 {
			masks = append(masks, r.Uint64()&maskN(n))
		}
		for _, m := range masks {
			if m == 0 {
				continue
			}
			c := maskCode(m, n)
			if c <= 0 || uint64(c) >= 1<<62 {
				t.Fatalf("n %d mask %x: code %d out of range", n, m, c)
			}
			if got := codeMask(uint64(c), n); got != m {
				t.Fatalf("n %d mask %x: code %d decodes to %x", n, m, c, got)
			}
		}
	}
}

// TestBlockTermsAreIndexTerms: a block's message terms, gathered with the
// shortcut that looks tokens up before asking indexTerm, are each token's
// indexTerm with the mask of the records that have it, for the tricky
// messages (buckets beside exact terms, Unicode) in one block and for
// blocks sealed one after another (numbered by one write's dictionary).
func TestBlockTermsAreIndexTerms(t *testing.T) {
	var hs []Hit
	for _, e := range trickyEvents() {
		hs = append(hs, HitFromEvent(e))
	}
	var sc scratch
	for start := 0; start < len(hs); start += blockCap / 2 {
		block := hs[start:min(start+blockCap, len(hs))]
		got := newBlockTerms(&sc.dict, &sc)
		want := map[string]uint64{}
		for i := range block {
			got.record(&block[i], 1<<i)
			msg := []byte(block[i].Message)
			for _, tok := range tokenizeLog(msg, nil) {
				term, _ := indexTerm(lower(msg[tok.start:tok.end]), nil)
				want[string(term)] |= 1 << i
			}
		}
		gotMasks := map[string]uint64{}
		for i, id := range got.ids[fMessage] {
			term := string(sc.dict.terms[id])
			if _, dup := gotMasks[term]; dup {
				t.Errorf("block at %d: term %q twice", start, term)
			}
			gotMasks[term] = got.masks[fMessage][i]
		}
		if len(gotMasks) != len(want) {
			t.Errorf("block at %d: %d terms, want %d", start, len(gotMasks), len(want))
		}
		for term, mask := range want {
			if m, ok := gotMasks[term]; !ok || m != mask {
				t.Errorf("block at %d: term %q: mask %b (%v), want %b", start, term, m, ok, mask)
			}
		}
	}
}
