package main

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
)

func TestZZProf(t *testing.T) {
	rules, _ := rule.LoadBuiltin()
	e := rule.NewEngine(rules)
	pipeline.Replay(context.Background(), []pipeline.Input{{Node: "n", Path: "/tmp/bench32.log"}}, pipeline.Options{},
		func(ev *parsers.Event) error { e.Observe(ev); return nil })
	type kv struct {
		k string
		v rule.RuleTime
	}
	var all []kv
	for k, v := range e.RuleTimes() {
		all = append(all, kv{k, v})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].v.Total > all[j].v.Total })
	for _, x := range all[:25] {
		fmt.Printf("%-60s runs=%8d total=%v\n", x.k, x.v.Evaluations, x.v.Total)
	}
}
