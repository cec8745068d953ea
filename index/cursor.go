package index

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/blevesearch/bleve/v2/numeric"
	"github.com/blevesearch/bleve/v2/search"
)

// Deep paging by cursor. Hits come in one total order (see order.go): the
// query's sort, then the event ID, which is unique and stable across
// restarts. A page's Next cursor holds the last hit's sort key and ID; the
// page after it is every hit past that key, so a cursor costs the same at
// hit 50 as at hit 599,000.

// ErrBadCursor is a cursor (Query.After) that cannot be read or belongs to
// another query (HTTP 400).
var ErrBadCursor = errors.New("bad cursor")

const cursorVersion = 1

// cursor is where a page ended. It is opaque to clients: base64 of JSON.
type cursor struct {
	V    int    `json:"v"`
	Hash uint32 `json:"h"` // of the query and order it pages through
	// Time order: the last hit's time (Timed false: a hit without time;
	// those come after all timed hits in either direction).
	Timed bool  `json:"t,omitempty"`
	NS    int64 `json:"ns,omitempty"`
	// Score order: the last hit's score and time sort term.
	Score   float64 `json:"sc,omitempty"`
	TimeKey []byte  `json:"tk,omitempty"`
	ID      string  `json:"id"` // the tie-breaker
}

func (c cursor) encode() string {
	b, _ := json.Marshal(c) // only plain fields: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads s, a Result.Next of a search of q.
func decodeCursor(s string, q Query) (*cursor, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || c.V != cursorVersion || c.ID == "" {
		return nil, fmt.Errorf("%w: after=%.40q is not a cursor of this server (pass the next value of the previous page as is)", ErrBadCursor, s)
	}
	if c.Hash != queryHash(q) {
		return nil, fmt.Errorf("%w: after is the cursor of another query or sort order; start again without after", ErrBadCursor)
	}
	return &c, nil
}

// queryHash identifies what a cursor pages through: the query text,
// filters and order. Not the time range: since=2h is another time at each
// page, and the page after a key is well defined in any range. Nor the
// partitions: a fan-out passes one cursor to analyzers that own different
// partitions, and ownership may move between pages.
func queryHash(q Query) uint32 {
	k := struct {
		Text                                     string
		Nodes, Containers, Sources, Levels, File []string
		Sort                                     string
	}{q.Text, q.Nodes, q.Containers, q.Sources, q.Levels, q.Files, sortName(q.Sort)}
	b, _ := json.Marshal(k)
	h := fnv.New32a()
	h.Write(b)
	return h.Sum32()
}

func sortName(s string) string {
	if s == "" {
		return "-time"
	}
	return s
}

// timeKey is the sort key of a hit in time order: its time, or none.
type timeKey struct {
	timed bool
	ns    int64
}

func keyOf(h Hit) timeKey {
	if h.Time.IsZero() {
		return timeKey{}
	}
	return timeKey{true, timeNanos(h.Time)}
}

// timeCursor is the cursor after hits, a page in time then ID order.
func timeCursor(q Query, hits []Hit) cursor {
	last := hits[len(hits)-1]
	k := keyOf(last)
	return cursor{V: cursorVersion, Hash: queryHash(q), Timed: k.timed, NS: k.ns, ID: last.ID}
}

// scoreCursor is the cursor after h, the last hit of a page by score.
func scoreCursor(q Query, h Hit) cursor {
	c := cursor{V: cursorVersion, Hash: queryHash(q), Score: h.Score, ID: h.ID}
	// The time's sort term, as Bleve sorted by it: missing sorts last,
	// which descending is its lowest term.
	if k := keyOf(h); k.timed {
		c.TimeKey = intTerm(k.ns)
	} else {
		c.TimeKey = []byte(search.LowTerm)
	}
	return c
}

// timeOfKey reads a score cursor's TimeKey back.
func timeOfKey(tk []byte) timeKey {
	if string(tk) == search.LowTerm || len(tk) == 0 {
		return timeKey{}
	}
	ns, err := numeric.PrefixCoded(tk).Int64()
	if err != nil {
		return timeKey{}
	}
	return timeKey{true, ns}
}
