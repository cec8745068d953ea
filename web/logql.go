package web

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/faultline/faultline/index"
)

// LogQL is what a Grafana/Loki user types first: a stream selector
// ({node="spark-1"}) and line filters (|= "text"). Faultline's language
// has its own words for both; a query that looks like LogQL gets its
// equivalent as a hint instead of a silent 0 hits.
var (
	logQLSelector = regexp.MustCompile(`^\s*\{([^{}]*)\}`)
	logQLMatcher  = regexp.MustCompile(`^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|` + "`[^`]*`" + `)\s*,?`)
	logQLFilter   = regexp.MustCompile(`^\s*(\|=|!=|\|~|!~)\s*("(?:[^"\\]|\\.)*"|` + "`[^`]*`" + `)`)
)

// logQLHint returns the Faultline query for q when q looks like LogQL (a
// stream selector or a line filter), with what could not be carried over;
// ok is false when q does not look like LogQL.
func logQLHint(q string) (equivalent string, notes []string, ok bool) {
	rest := q
	var parts []string
	if m := logQLSelector.FindStringSubmatch(rest); m != nil {
		ok = true
		sel := m[1]
		for strings.TrimSpace(sel) != "" {
			mm := logQLMatcher.FindStringSubmatch(sel)
			if mm == nil {
				notes = append(notes, "could not read the selector "+strconv.Quote(strings.TrimSpace(sel)))
				break
			}
			sel = sel[len(mm[0]):]
			label, op, val := mm[1], mm[2], logQLString(mm[3])
			if !slices.Contains(index.KnownFields(), label) {
				notes = append(notes, "Faultline has no field "+strconv.Quote(label)+" (fields: "+strings.Join(filterFields(), ", ")+")")
				continue
			}
			switch op {
			case "=":
				parts = append(parts, label+":"+fieldValue(val))
			case "!=":
				parts = append(parts, "-"+label+":"+fieldValue(val))
			default:
				alts := strings.Split(val, "|")
				if strings.ContainsAny(val, `.*+?()[]{}^$\`) {
					notes = append(notes, label+op+strconv.Quote(val)+": a field matches exact values or wildcards (node:spark-*), not a regexp")
					continue
				}
				neg := ""
				if op == "!~" {
					neg = "-"
				}
				for i, a := range alts {
					alts[i] = neg + label + ":" + fieldValue(a)
				}
				sep := " OR "
				if neg != "" {
					sep = " "
				}
				parts = append(parts, strings.Join(alts, sep))
			}
		}
		rest = rest[len(m[0]):]
	}
	for {
		m := logQLFilter.FindStringSubmatch(rest)
		if m == nil {
			break
		}
		ok = true
		rest = rest[len(m[0]):]
		val := logQLString(m[2])
		switch m[1] {
		case "|=":
			parts = append(parts, quoteText(val))
		case "!=":
			parts = append(parts, "-"+quoteText(val))
		case "|~":
			parts = append(parts, "/"+val+"/")
		case "!~":
			parts = append(parts, "-/"+val+"/")
		}
	}
	if !ok {
		return "", nil, false
	}
	if r := strings.TrimSpace(rest); r != "" {
		notes = append(notes, "not carried over: "+strconv.Quote(r)+" (parsers, formatters and metrics have no equivalent: facets and the histogram count)")
	}
	return strings.Join(parts, " "), notes, true
}

// filterFields are the fields a selector label could mean.
func filterFields() []string {
	return []string{index.FieldNode, index.FieldContainer, index.FieldSource, index.FieldLevel, index.FieldCluster, index.FieldFile}
}

func logQLString(s string) string {
	if strings.HasPrefix(s, "`") {
		return strings.Trim(s, "`")
	}
	if u, err := strconv.Unquote(s); err == nil {
		return u
	}
	return strings.Trim(s, `"`)
}

// fieldValue writes a field's value, quoted when it holds a space.
func fieldValue(v string) string {
	if strings.ContainsAny(v, " \t\"") {
		return strconv.Quote(v)
	}
	return v
}

// quoteText writes text to find in the message: a single word as it is,
// anything else as a phrase.
func quoteText(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\"():*?~/") && !strings.HasPrefix(v, "-") {
		return v
	}
	return strconv.Quote(v)
}
