package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/faultline/faultline/rule"
)

// printRuleErrors writes one line on w when rules failed at run time (a
// condition calling max() on an empty list, say): such a rule never fires,
// and without this line nobody would know.
func printRuleErrors(w io.Writer, errs map[string]rule.ErrorStat) {
	if len(errs) == 0 {
		return
	}
	ids := make([]string, 0, len(errs))
	for id := range errs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s: %d error(s), last: %s", id, errs[id].Count, oneLineText(errs[id].Last))
	}
	fmt.Fprintf(w, "warning: %d rule(s) had runtime expression errors and may have missed findings: %s\n",
		len(ids), strings.Join(parts, "; "))
}

func oneLineText(s string) string { return strings.Join(strings.Fields(s), " ") }
