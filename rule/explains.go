package rule

// Explains is the rules' explains by cause: for each cause, the causes its
// rules say they explain (a finding of those is its consequence in the same
// launch), every rule of the cause together. Alertmanager's inhibit rules
// are generated from it (`analyzer rules alertmanager-config`).
func Explains(rules []*Rule) map[string][]string {
	out := map[string][]string{}
	for _, r := range rules {
		out[r.Cause] = append(out[r.Cause], r.Explains...)
	}
	return out
}
