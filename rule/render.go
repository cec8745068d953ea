package rule

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/template"
)

// Reserved names in template data; a fact may not use them.
var reservedNames = map[string]bool{"nodes": true, "cluster": true, "owned": true, "pairs": true, "launch": true, "outcome": true}

// templateFuncs are the functions summaries and remediations may call. They
// are pure: a rule cannot run code or read anything but its own facts.
var templateFuncs = template.FuncMap{
	"join": func(v any, sep string) string {
		switch x := v.(type) {
		case []string:
			return strings.Join(x, sep)
		case string:
			return x
		case nil:
			return ""
		}
		return fmt.Sprint(v)
	},
	"first": func(v []string) string {
		if len(v) == 0 {
			return ""
		}
		return v[0]
	},
	"max": func(v []string) string { return fmtNumber(reduce(v, math.Inf(-1), math.Max)) },
	"min": func(v []string) string { return fmtNumber(reduce(v, math.Inf(1), math.Min)) },
	"sum": func(v []string) string {
		return fmtNumber(reduce(v, 0, func(a, b float64) float64 { return a + b }))
	},
	// redacted: some value is a user's redaction ("<IP>"), not an address.
	"redacted": func(v []string) bool {
		for _, s := range v {
			if redacted(s) {
				return true
			}
		}
		return false
	},
	"quote": func(v []string) string {
		q := make([]string, len(v))
		for i, s := range v {
			q[i] = strconv.Quote(s)
		}
		return strings.Join(q, ", ")
	},
}

func reduce(v []string, init float64, f func(a, b float64) float64) float64 {
	acc, any := init, false
	for _, s := range v {
		if n, ok := parseNumber(s); ok {
			acc, any = f(acc, n), true
		}
	}
	if !any {
		return math.NaN()
	}
	return acc
}

func parseTemplate(name, text string) (*template.Template, error) {
	return template.New(name).Funcs(templateFuncs).Option("missingkey=zero").Parse(text)
}

func render(t *template.Template, data map[string]any) string {
	if t == nil {
		return ""
	}
	var b strings.Builder
	if err := t.Execute(&b, data); err != nil {
		return fmt.Sprintf("(template error: %v)", err)
	}
	return strings.TrimSpace(b.String())
}

func parseNumber(s string) (float64, bool) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "x"))
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

func fmtNumber(f float64) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "?"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

func sortStrings(s []string) { sort.Strings(s) }

// NormalValue is how the engine spells a value of a fact: a number fact's
// values one way per number ("4.0" and "4" are one value), a string fact's
// as they are.
func NormalValue(number bool, v string) string {
	v = strings.TrimSpace(v)
	if number {
		if n, ok := parseNumber(v); ok {
			return fmtNumber(n)
		}
	}
	return v
}
