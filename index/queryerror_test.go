package index

import "testing"

func TestQuerySyntaxErrors(t *testing.T) {
	for _, c := range []struct {
		q   string
		col int // 0: no error
	}{
		{`level:(error`, 7},
		{`level:(error OR warning)`, 7},
		{`(error OR warning)`, 1},
		{`timeout (raylet`, 9},
		{`timeout raylet)`, 15},
		{`"unterminated phrase`, 1},
		{`node:spark-1 "a b`, 14},
		{`größe level:(x`, 13}, // a column counts characters, not bytes
		{`(raylet) get_ip() ray_utils.py(325)`, 0},
		{`"(no pending nodes)" level:error`, 0},
		{`"a \" b" c`, 0},
		{`node:192.168.200.12 {'node:192.168.200.12':`, 0},
		{``, 0},
	} {
		_, err := ParseQuery(c.q)
		qe, ok := AsQueryError(err)
		switch {
		case c.col == 0 && err != nil:
			t.Errorf("%q: %v, want no error", c.q, err)
		case c.col != 0 && !ok:
			t.Errorf("%q: %v, want a QueryError at column %d", c.q, err, c.col)
		case c.col != 0 && qe.Column() != c.col:
			t.Errorf("%q: column %d (%v), want %d", c.q, qe.Column(), err, c.col)
		case c.col != 0 && !IsBadQuery(err):
			t.Errorf("%q: not a bad query: %v", c.q, err)
		}
	}
}
