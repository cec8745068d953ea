package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/gctune"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/pipeline"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/sink"
)

func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("ingest", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: analyzer ingest [flags] [NODE=]PATH ...\n\n"+
			"Index collected logs into --data-dir for `analyzer search` and `analyzer ui`, and store the\n"+
			"findings of the rules beside them. Ingesting the same files again replaces, never duplicates.\n"+
			"Findings new to the index also go to the sinks the flags add (--webhook, --publish-nats,\n"+
			"--findings-json), as diagnose and serve send them.\n\n"+
			"Exit status: 0 indexed, 1 a usage or input error, or interrupted (what was indexed stays),\n"+
			"4 a sink did not take the findings (the webhook failed after its retries).\n\nflags:")
		fs.PrintDefaults()
	}
	dataDir := fs.String("data-dir", "./faultline-data", "index and findings `DIR` (shared with serve, search, ui)")
	cluster := fs.String("cluster", rule.DefaultCluster, "cluster `NAME` the logs are labelled with")
	shards := fs.Int("shards", 0, "`N` index shards written in parallel for a new index (default: CPUs, at least 2)")
	quiet := fs.BoolP("quiet", "q", false, "no progress bar")
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
	if fs.NArg() == 0 {
		fs.Usage()
		return usageError("no input: give log files or folders, NODE=PATH to name the node")
	}
	inputs, err := pipeline.ParseArgs(fs.Args())
	if err != nil {
		return usageError("%v", err)
	}
	files, err := pipeline.Expand(inputs, func(err error) { fmt.Fprintf(stderr, "warning: %v\n", err) })
	if err != nil {
		return usageError("%v", err)
	}
	if len(files) == 0 {
		return usageError("no readable log files in the input")
	}
	// Set before the rules load, as diagnose does: parsing the pack is
	// garbage too (about 70 MB), collected several times over at the
	// default GOGC.
	gctune.BulkLoad(gctune.IndexPercent, gctune.IndexLimit)
	rules, err := rf.load()
	if err != nil {
		return err
	}
	warnLog := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	extra, err := sf.build(stdout, warnLog)
	if err != nil {
		return err
	}
	closeExtra := sync.OnceValue(extra.Close)
	defer closeExtra()
	total := inputBytes(files)

	start := time.Now()
	// A bulk load: blocks are sealed full, not every second (see
	// index.Options.FlushInterval); Close makes everything durable.
	idx, err := openIndex(ctx, *dataDir, index.Options{Shards: *shards, FlushInterval: time.Minute, Logger: warnLog})
	if err != nil {
		return err
	}
	defer idx.Close()
	engine := rule.NewEngine(rules)
	bar := newProgress(stderr, total, !*quiet)
	warnings := 0
	st, err := pipeline.ReplayFiles(ctx, files, pipeline.Options{
		Cluster:     *cluster,
		ReuseFields: true, // the engine and the index copy what they keep
		Warn: func(err error) {
			if warnings++; warnings <= maxWarningsShown {
				bar.println(fmt.Sprintf("warning: %v", err))
			}
		},
	}, func(ev *parsers.Event) error {
		engine.Observe(ev)
		bar.observe(ev)
		return idx.Add(ev)
	})
	if err != nil {
		bar.done()
		if ctx.Err() != nil {
			// What was indexed so far stays: a new ingest replaces it.
			return errInterrupted
		}
		return fmt.Errorf("ingest: %w", err)
	}
	findings := engine.Findings()
	// The path of diagnose and serve: the findings go to the sinks, the
	// index's store first; only those new to the index (or changed) reach
	// the others, so ingesting the same logs again does not alert again.
	stored := idx.Findings()
	if err := sink.NewStore(idx).Announce(ctx, findings); err != nil {
		bar.done()
		return err
	}
	aerr := sink.NewChanges(stored, extra).Announce(ctx, findings)
	if err := closeExtra(); err != nil {
		aerr = errors.Join(aerr, err)
	}
	if err := idx.Flush(ctx); err != nil {
		bar.done()
		return err
	}
	// Everything is searchable now: the count is the index's (opening it
	// again read-only to count read every block header of the index once
	// more, 0.7% of the CPU of ingesting 200k lines into an empty one).
	docs := st.Records
	if n, err := idx.DocCount(); err == nil {
		docs = int64(n)
	}
	bar.done()
	if err := idx.Close(); err != nil { // durable before the summary claims it
		return err
	}
	el := time.Since(start)
	fmt.Fprintf(stdout, "Ingested %d files (%.1f MB), %d lines, %d records in %.1fs (%.0f records/s) into %s\n",
		st.Files, float64(st.Bytes)/1e6, st.Lines, st.Records, el.Seconds(), float64(st.Records)/el.Seconds(), *dataDir)
	fmt.Fprintf(stdout, "Index holds %d events; %d finding(s) stored", docs, len(findings))
	if warnings > 0 {
		fmt.Fprintf(stdout, "; %d input warning(s)", warnings)
	}
	fmt.Fprintln(stdout)
	for _, f := range findings {
		fmt.Fprintf(stdout, "  %s\n", findingLine(f))
	}
	fmt.Fprintf(stdout, "Next: analyzer search --data-dir %s QUERY   or   analyzer ui --data-dir %s\n", *dataDir, *dataDir)
	if aerr != nil {
		return announceErr(stderr, aerr)
	}
	return nil
}

// findingLine is a finding in one line: severity, title and the nodes,
// unless the title names them all already (many do); a finding a later
// healthy launch resolved says so first, as diagnose and the UI do.
func findingLine(f finding.Finding) string {
	line := fmt.Sprintf("[%s] %s", f.Severity, f.Title)
	if f.Status == finding.Resolved {
		line = "RESOLVED " + line
	}
	for _, n := range f.Nodes {
		if !strings.Contains(f.Title, n) {
			return line + " (" + strings.Join(f.Nodes, ", ") + ")"
		}
	}
	return line
}

// progress draws a one-line bar on a terminal: bytes read (the furthest
// offset seen per file) against the inputs' total size.
type progress struct {
	w       io.Writer
	on      bool
	total   int64
	perFile map[string]int64
	read    int64
	events  int64
	start   time.Time
	last    time.Time
}

func newProgress(w io.Writer, total int64, want bool) *progress {
	on := false
	if f, ok := w.(*os.File); ok && want {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			on = true
		}
	}
	return &progress{w: w, on: on, total: max(total, 1), perFile: map[string]int64{}, start: time.Now()}
}

func (p *progress) observe(ev *parsers.Event) {
	p.events++
	if !p.on {
		return
	}
	if end := ev.Offset + ev.Size; end > p.perFile[ev.File] {
		p.read += end - p.perFile[ev.File]
		p.perFile[ev.File] = end
	}
	if now := time.Now(); now.Sub(p.last) >= 200*time.Millisecond {
		p.last = now
		p.draw()
	}
}

func (p *progress) draw() {
	frac := min(float64(p.read)/float64(p.total), 1)
	const width = 30
	n := int(frac * width)
	rate := float64(p.events) / max(time.Since(p.start).Seconds(), 0.001)
	fmt.Fprintf(p.w, "\r[%s%s] %3.0f%% %d events %.0f/s ", strings.Repeat("=", n), strings.Repeat(" ", width-n), frac*100, p.events, rate)
}

func (p *progress) println(s string) {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
	fmt.Fprintln(p.w, s)
	if p.on {
		p.draw()
	}
}

func (p *progress) done() {
	if p.on {
		p.read = p.total
		p.draw()
		fmt.Fprintln(p.w)
	}
}

// finish clears the bar (diagnose prints its report after it).
func (p *progress) finish() {
	if p.on {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
