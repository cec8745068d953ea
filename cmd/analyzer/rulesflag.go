package main

import (
	"github.com/spf13/pflag"

	"github.com/faultline/faultline/rule"
)

// ruleFlags are the rule-selection flags every command shares.
type ruleFlags struct {
	dirs []string
	only bool
}

func (r *ruleFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&r.dirs, "rules", nil, "`DIR` of rule files to add to the built-in pack (repeatable; same id overrides)")
	fs.BoolVar(&r.only, "rules-only", false, "use only the rules from --rules, not the built-in pack")
}

// load returns the built-in pack merged with the --rules directories.
func (r *ruleFlags) load() ([]*rule.Rule, error) {
	rules, err := rule.Load(r.dirs, r.only)
	if err != nil {
		return nil, usageError("%v", err)
	}
	return rules, nil
}

// loadPack is load, returning the whole pack (its catalog and causes too).
func (r *ruleFlags) loadPack() (*rule.Pack, error) {
	p, err := rule.LoadPack(r.dirs, r.only)
	if err != nil {
		return nil, usageError("%v", err)
	}
	return p, nil
}
