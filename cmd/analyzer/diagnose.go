package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/internal/gctune"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/report"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/sink"
)

const maxWarningsShown = 20

func runDiagnose(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("diagnose", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: analyzer diagnose [--json] [--rules DIR] [--fail-on SEVERITY] [--webhook URL] PATH|NODE=PATH|- ...\n\n"+
			"Diagnose a failed launch from collected logs. Files may be plain, Docker json-file, CRI\n"+
			"or gzip-compressed logs. A folder holds one subfolder per node (spark-1/, spark-2/);\n"+
			"files directly in a folder are one node named after the folder, so give loose files\n"+
			"of several nodes as NODE=PATH (spark-1=head.log spark-2=worker.log). - (or NODE=-)\n"+
			"reads a log from standard input. The same file given twice is read once.\n\n"+
			"The findings go to the report on standard output and to the sinks the flags add:\n"+
			"--webhook (what serve posts live), --publish-nats (serve's findings subject),\n"+
			"--findings-json FILE.\n\n"+
			"Exit codes: 0 diagnosed; 1 usage or input error (an input that could not be read is\n"+
			"named, after the report); 3 with --fail-on when an active finding is at or above it;\n"+
			"4 a sink did not take the findings (the webhook failed after its retries).\n\nflags:")
		fs.PrintDefaults()
	}
	asJSON := fs.Bool("json", false, "print one finding per line as JSON, then a summary record {\"summary\": {files, lines, records, nodes, launches, outcomes, findings, active, resolved}}")
	evidenceN := fs.String("evidence", strconv.Itoa(report.DefaultEvidence), "evidence lines shown per finding: `N`, or all")
	failOn := fs.String("fail-on", "", "exit 3 when an active finding is at or above `SEVERITY` (critical, warning or info; any case)")
	cluster := fs.String("cluster", rule.DefaultCluster, "cluster label `NAME` for the logs")
	var rf ruleFlags
	rf.register(fs)
	var sf sinkFlags
	sf.register(fs, true, true)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError("%v", err)
	}
	evidenceLines := -1
	if *evidenceN != "all" {
		n, err := strconv.Atoi(*evidenceN)
		if err != nil || n <= 0 {
			return usageError("--evidence %q: want a number above 0, or all", *evidenceN)
		}
		evidenceLines = n
	}
	*failOn = strings.ToLower(*failOn)
	if *failOn != "" && finding.Severity(*failOn).Rank() == 0 {
		return usageError("--fail-on %q: want critical, warning or info", *failOn)
	}
	inputs, err := pipeline.ParseArgs(fs.Args())
	if err != nil {
		return usageError("%v", err)
	}
	files, err := expandInputs(inputs, stdin, stderr)
	if err != nil {
		return usageError("%v", err)
	}
	// ~15 MB live heap, streaming: a 256 MB soft limit keeps the peak
	// bounded. Set before the rules load: parsing the pack is garbage too,
	// and collecting it at the default GOGC was a third of the start-up.
	gctune.BulkLoad(400, 256<<20)
	rules, err := rf.load()
	if err != nil {
		return err
	}
	// Opened before the logs are read: a bad --webhook or an unreachable
	// --publish-nats fails at once, not after the replay.
	extra, err := sf.build(stdout, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return err
	}
	closeExtra := sync.OnceValue(extra.Close)
	defer closeExtra()
	engine := rule.NewEngine(rules)
	shown := 0
	total := inputBytes(files)
	prog := newProgress(stderr, total, total >= progressMinBytes) // the bar of ingest, on a terminal only
	hosts := map[string]map[string]bool{}                         // node -> NCCL host names seen
	spans := report.Spans{}
	st, err := pipeline.ReplayFiles(ctx, files, pipeline.Options{
		Cluster:     *cluster,
		ReuseFields: true, // the engine and the index copy what they keep
		Warn: func(err error) {
			if shown++; shown <= maxWarningsShown {
				fmt.Fprintf(stderr, "warning: %v\n", err)
			}
		},
	}, func(ev *parsers.Event) error {
		engine.Observe(ev)
		prog.observe(ev)
		spans.Add(ev.Node, ev.Time)
		if h := ev.Fields["host"]; h != "" {
			seen := hosts[ev.Node]
			if seen == nil {
				seen = map[string]bool{}
				hosts[ev.Node] = seen
			}
			if len(seen) < 8 {
				seen[h] = true
			}
		}
		return nil
	})
	prog.finish()
	if err != nil {
		return usageError("%v", err)
	}
	nodeHint(stderr, inputs, hosts)
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
	sum := report.Summary{Files: st.Files, Lines: st.Lines, Records: st.Records, Nodes: spans.List()}
	sum.Count(findings)
	kept, seen := engine.Launches()
	for _, n := range seen {
		sum.Launches += n
	}
	sum.Outcomes = kept
	// The same path as serve's: the findings go to sinks; the report on
	// standard output is the first of them.
	var out sink.Multi
	if *asJSON {
		out = append(out, sink.NewJSON(stdout, nil))
	} else {
		fmt.Fprintf(stdout, "Faultline diagnosis: %d files, %d lines, %d records, %d launch(es) — %d finding(s)\n",
			st.Files, st.Lines, st.Records, sum.Launches, len(findings))
		text := sink.NewText(stdout, nil)
		text.Options.Evidence, text.Options.More = evidenceLines, "--evidence all shows every one"
		out = append(out, text)
	}
	out = append(out, extra...)
	aerr := sink.NewChanges(nil, out).Announce(ctx, findings)
	if *asJSON {
		if err := report.SummaryJSON(stdout, sum); err != nil {
			aerr = errors.Join(aerr, err)
		}
	} else {
		report.Verdict(stdout, sum)
	}
	if err := closeExtra(); err != nil {
		aerr = errors.Join(aerr, err)
	}
	if unread != nil {
		return unread
	}
	if aerr != nil {
		return announceErr(stderr, aerr)
	}
	if *failOn != "" {
		for _, f := range findings {
			if f.Status == finding.Active && finding.Severity(f.Severity).Rank() >= finding.Severity(*failOn).Rank() {
				return &exitError{code: 3}
			}
		}
	}
	return nil
}

// expandInputs lists the files to read: folders expanded, "-" read from
// stdin, and a file given twice (by another path, or a link) read once with
// a warning.
func expandInputs(inputs []pipeline.Input, stdin io.Reader, stderr io.Writer) ([]pipeline.File, error) {
	var named []pipeline.Input
	var out []pipeline.File
	stdinUsed := false
	for _, in := range inputs {
		if in.Path != "-" {
			named = append(named, in)
			continue
		}
		if stdinUsed {
			return nil, errors.New("- (standard input) given twice")
		}
		stdinUsed = true
		if stdin == nil {
			return nil, errors.New("-: no standard input")
		}
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("read standard input: %w", err)
		}
		node := in.Node
		if node == "" {
			node = "stdin"
		}
		// Data is never nil for stdin, even when it is empty.
		out = append(out, pipeline.File{Path: "stdin", Node: node, Data: append([]byte{}, data...)})
	}
	if len(named) > 0 {
		files, err := pipeline.Expand(named, func(err error) { fmt.Fprintf(stderr, "warning: %v\n", err) })
		if err != nil {
			return nil, err
		}
		seen := map[string]string{}
		for _, f := range files {
			key := fileKey(f.Path)
			if first, dup := seen[key]; dup {
				fmt.Fprintf(stderr, "warning: %s is %s again: read once\n", f.Path, first)
				continue
			}
			seen[key] = f.Path
			out = append(out, f)
		}
	}
	return out, nil
}

// fileKey identifies a file whatever path names it (the file identity the
// shipper uses: device, inode, first line), else its cleaned absolute path.
func fileKey(p string) string {
	if id, err := parsers.FileIdentity(p); err == nil {
		return id
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	return abs
}

// nodeHint says when a folder of loose files became one node although its
// logs name several hosts: those files most likely come from several nodes,
// and facts of different nodes should not be merged as one.
func nodeHint(w io.Writer, inputs []pipeline.Input, hosts map[string]map[string]bool) {
	for _, in := range inputs {
		if in.Node != "" || in.Path == "-" {
			continue
		}
		st, err := os.Stat(in.Path)
		if err != nil || !st.IsDir() {
			continue
		}
		node := filepath.Base(filepath.Clean(in.Path))
		if len(hosts[node]) < 2 {
			continue
		}
		names := make([]string, 0, len(hosts[node]))
		for h := range hosts[node] {
			names = append(names, h)
		}
		sort.Strings(names)
		fmt.Fprintf(w, "hint: the files in %s were read as one node %q, but their NCCL lines come from %d hosts (%s); "+
			"if they are logs of several nodes, name them: analyzer diagnose %s=%s/<its log> ...\n",
			in.Path, node, len(names), strings.Join(names, ", "), names[0], strings.TrimSuffix(in.Path, "/"))
	}
}

// progressMinBytes: smaller inputs are read before anyone looks at a bar.
const progressMinBytes = 64 << 20

// inputBytes is the total size of the files, for the progress bar.
func inputBytes(files []pipeline.File) int64 {
	var total int64
	for _, f := range files {
		if f.Data != nil {
			total += int64(len(f.Data))
		} else if fi, err := os.Stat(f.Path); err == nil {
			total += fi.Size()
		}
	}
	return total
}
