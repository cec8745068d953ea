package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/pflag"
)

// runConfig is `analyzer config check FILE`: serve's --config file read and
// checked as serve would (every key a flag of serve, each value of the
// flag's type, the settings together as serve checks them), without
// starting anything.
func runConfig(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("config", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	print := fs.Bool("print", false, "also print the settings the file gives, defaults included")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: analyzer config check [--print] FILE\n\n"+
			"Checks a settings file of analyzer serve --config: its keys are serve's flags\n"+
			"(analyzer serve --print-config writes one with every setting).\n\n"+
			"Exit status: 0 the file is good, 1 it is not (the error names its line).\n\nflags:")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError("%v", err)
	}
	if fs.NArg() != 2 || fs.Arg(0) != "check" {
		fs.Usage()
		return usageError("want: config check FILE")
	}
	file := fs.Arg(1)
	serveArgs := []string{"--config", file}
	if *print {
		if _, _, err := parseServe(append(serveArgs, "--print-config"), stdout, stderr); !errors.Is(err, errPrintConfig) {
			return serveCheckErr(err)
		}
	}
	if _, _, err := parseServe(serveArgs, io.Discard, stderr); err != nil {
		return serveCheckErr(err)
	}
	fmt.Fprintf(stdout, "%s: ok\n", file)
	return nil
}

func serveCheckErr(err error) error {
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return usageError("%v", err)
}
