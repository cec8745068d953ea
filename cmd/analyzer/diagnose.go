package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/internal/gctune"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/report"
	"github.com/faultline/faultline/rule"
)

const maxWarningsShown = 20

func runDiagnose(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("diagnose", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: analyzer diagnose [--json] [--rules DIR] [--fail-on SEVERITY] PATH|NODE=PATH ...\n\n"+
			"Diagnose a failed launch from collected logs. A folder holds one subfolder per node\n"+
			"(or give NODE=PATH); files may be plain, Docker json-file or CRI logs.\n\nflags:")
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print one finding per line as JSON")
	failOn := fs.String("fail-on", "", "exit 3 when a finding at or above this severity (critical|warning|info) is active")
	cluster := fs.String("cluster", rule.DefaultCluster, "cluster label for the logs")
	var rf ruleFlags
	rf.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError("%v", err)
	}
	if *failOn != "" && rule.SeverityRank(*failOn) == 0 {
		return usageError("--fail-on %q: want critical, warning or info", *failOn)
	}
	inputs, err := pipeline.ParseArgs(fs.Args())
	if err != nil {
		return usageError("%v", err)
	}
	rules, err := rf.load()
	if err != nil {
		return err
	}
	// ~15 MB live heap, streaming: a 256 MB soft limit keeps the peak bounded.
	gctune.BulkLoad(400, 256<<20)
	engine := rule.NewEngine(rules)
	shown := 0
	st, err := pipeline.Replay(ctx, inputs, pipeline.Options{
		Cluster: *cluster,
		Warn: func(err error) {
			if shown++; shown <= maxWarningsShown {
				fmt.Fprintf(stderr, "warning: %v\n", err)
			}
		},
	}, func(ev *parsers.Event) error {
		engine.Observe(ev)
		return nil
	})
	if err != nil {
		return usageError("%v", err)
	}
	if shown > maxWarningsShown {
		fmt.Fprintf(stderr, "warning: %d more warnings not shown\n", shown-maxWarningsShown)
	}
	// An input that could not be read (or not to its end) makes the
	// diagnosis incomplete: say which, and exit 1 after the report.
	var unread error
	if n := len(st.Failed); n > 0 {
		for i, e := range st.Failed {
			if i == maxWarningsShown {
				fmt.Fprintf(stderr, "error: %d more files not read\n", n-i)
				break
			}
			fmt.Fprintf(stderr, "error: %v\n", e)
		}
		unread = usageError("could not read %d input file(s), first %v; the diagnosis is incomplete", n, st.Failed[0])
	}
	if st.Files == 0 {
		return usageError("no readable log files in the input")
	}
	if st.Records == 0 {
		return usageError("no log lines in the input (%d files, all empty)", st.Files)
	}
	printRuleErrors(stderr, engine.Errors())
	findings := engine.Findings()
	if *asJSON {
		if err := report.JSON(stdout, findings); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "Faultline diagnosis: %d files, %d lines, %d records — %d finding(s)\n",
			st.Files, st.Lines, st.Records, len(findings))
		if len(findings) == 0 {
			fmt.Fprintln(stdout, "\nNo known cause found. Search the logs with `analyzer ingest` + `analyzer search`, or add a rule (docs/rules.md).")
		}
		report.Text(stdout, findings)
	}
	if unread != nil {
		return unread
	}
	if *failOn != "" {
		for _, f := range findings {
			if f.Status == "active" && rule.SeverityRank(f.Severity) >= rule.SeverityRank(*failOn) {
				return &exitError{code: 3}
			}
		}
	}
	return nil
}
