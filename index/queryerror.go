package index

import (
	"errors"
	"fmt"
	"strings"
)

// QueryError is a query that cannot be read as written, with where: the
// web API answers it 400 with the position, the CLI as a usage error.
type QueryError struct {
	Query string
	Pos   int // byte offset in Query of what is wrong
	Msg   string
}

// Column is Pos as a 1-based character column, as a person counts.
func (e *QueryError) Column() int { return len([]rune(e.Query[:min(e.Pos, len(e.Query))])) + 1 }

func (e *QueryError) Error() string {
	return fmt.Sprintf("query: column %d: %s", e.Column(), e.Msg)
}

// AsQueryError returns the QueryError in err's chain, if any.
func AsQueryError(err error) (*QueryError, bool) {
	var qe *QueryError
	ok := errors.As(err, &qe)
	return qe, ok
}

// checkSyntax rejects what the language cannot mean, before it silently
// matches nothing: an unterminated quote, and parentheses used to group
// (the language has none; "level:(error" used to search for the level
// "(error" and answer 0 hits). Parentheses closed within their term are
// text ((raylet), get_ip()); one that opens a field's value, one left open
// at the end of its term and a stray ")" are grouping.
func checkSyntax(s string) error {
	quote := -1
	depth, open := 0, -1
	tokenStart := true
	for i := 0; i < len(s); i++ {
		c := s[i]
		if quote >= 0 {
			switch c {
			case '\\':
				i++
			case '"':
				quote = -1
			}
			continue
		}
		tokenStart = false
		switch c {
		case '"':
			quote = i
		case ' ', '\t', '\n', '\r':
			tokenStart = true
		case '(':
			if i > 0 && s[i-1] == ':' && fieldBefore(s[:i-1]) {
				return &QueryError{Query: s, Pos: i, Msg: `parentheses do not group here: write level:error OR level:warning, or quote the text to search it ("(no pending nodes)")`}
			}
			if depth == 0 {
				open = i
			}
			depth++
		case ')':
			if depth == 0 {
				return &QueryError{Query: s, Pos: i, Msg: `")" without "(": quote the text to search it`}
			}
			depth--
		}
		if tokenStart && depth > 0 {
			return &QueryError{Query: s, Pos: open, Msg: `"(" not closed within its term: quote the text to search it`}
		}
	}
	if quote >= 0 {
		return &QueryError{Query: s, Pos: quote, Msg: `unterminated quote: close it with "`}
	}
	if depth > 0 {
		return &QueryError{Query: s, Pos: open, Msg: `"(" not closed: quote the text to search it`}
	}
	return nil
}

// fieldBefore reports whether s ends with a field name the language knows
// (what stands before a ':'), as the term that holds it.
func fieldBefore(s string) bool {
	i := strings.LastIndexAny(s, " \t\n\r") + 1
	name := strings.TrimLeft(s[i:], "-+")
	_, ok := fieldKinds[strings.ToLower(name)]
	return ok
}
