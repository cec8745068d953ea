package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/rule"
)

// ruleFlags are the rule-selection flags every command shares.
type ruleFlags struct {
	dirs []string
	only bool
}

func (r *ruleFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&r.dirs, "rules", nil, "directory of rule files to add to the built-in pack (repeatable; same id overrides)")
	fs.BoolVar(&r.only, "rules-only", false, "use only the rules from --rules, not the built-in pack")
}

// load returns the built-in pack merged with the --rules directories.
func (r *ruleFlags) load() ([]*rule.Rule, error) {
	var rules []*rule.Rule
	if !r.only {
		b, err := rule.LoadBuiltin()
		if err != nil {
			return nil, fmt.Errorf("built-in rules: %w", err)
		}
		rules = b
	} else if len(r.dirs) == 0 {
		return nil, usageError("--rules-only needs at least one --rules DIR")
	}
	for _, d := range r.dirs {
		extra, err := rule.LoadDir(d)
		if err != nil {
			return nil, usageError("%v", err)
		}
		rules = rule.Merge(rules, extra)
	}
	return rules, nil
}
