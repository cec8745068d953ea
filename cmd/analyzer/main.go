// Command analyzer diagnoses failed multi-node LLM inference launches:
// offline over collected logs (diagnose, ingest, search, ui) or live over
// NATS (serve). Each subcommand lives in its own file; the work is done by
// the packages they call.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/faultline/faultline/internal/helpflag"
	"github.com/faultline/faultline/internal/version"
)

// exitError carries a process exit code through the subcommands, so that
// main is the only place that calls os.Exit.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is an input or usage error: exit code 1.
func usageError(format string, args ...any) error {
	return &exitError{code: 1, err: fmt.Errorf(format, args...)}
}

type command struct {
	name, summary string
	run           func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands; stdin is what `diagnose -` reads.
func commands(stdin io.Reader) []command {
	return []command{
		{"diagnose", "find the root cause of a failed launch in collected logs",
			func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
				return runDiagnose(ctx, args, stdin, stdout, stderr)
			}},
		{"ingest", "index collected logs into --data-dir for search", runIngest},
		{"search", "search an index from the terminal", runSearch},
		{"serve", "live: consume from NATS, index, alert, serve the web UI", runServe},
		{"ui", "serve the web UI over an existing index", runUI},
		{"cluster", "a cluster's members, partitions and owners; drain a member (cluster status|drain)", runCluster},
		{"config", "check a settings file of serve --config (config check FILE)", runConfig},
		{"rules", "lint, test or measure the coverage of rule files (rules lint|test|coverage)", runRules},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: analyzer COMMAND [flags] [args]\n\ncommands:")
	for _, c := range commands(nil) {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'analyzer COMMAND --help' for a command's flags, 'analyzer --version' for the version.")
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C or SIGTERM asks the command to stop cleanly; after
	// it the default handling is back, so a second one ends the process
	// whatever it is waiting for.
	go func() { <-ctx.Done(); stop() }()
	// FAULTLINE_CPUPROFILE=FILE profiles a run (benchmarks, slow inputs).
	if path := os.Getenv("FAULTLINE_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer f.Close()
				defer pprof.StopCPUProfile()
			}
		}
	}
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	pprof.StopCPUProfile()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 1
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout)
		return 0
	}
	if args[0] == "--version" || args[0] == "version" {
		fmt.Fprintln(stdout, "analyzer", version.Get())
		return 0
	}
	for _, c := range commands(stdin) {
		if c.name != args[0] {
			continue
		}
		if helpflag.Asked(args[1:]) {
			stderr = stdout // the usage is what was asked for: on stdout, for | less
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		if err == nil {
			return 0
		}
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.err != nil {
				fmt.Fprintf(stderr, "analyzer %s: %v\n", c.name, ee.err)
			}
			return ee.code
		}
		fmt.Fprintf(stderr, "analyzer %s: %v\n", c.name, err)
		return 1
	}
	fmt.Fprintf(stderr, "analyzer: unknown command %q\n\n", args[0])
	usage(stderr)
	return 1
}
