// Command loggen writes generated Ray/vLLM/NCCL log traffic (see package
// internal/loggen) for benchmarks: `go run ./bench/loggen --bytes 1G --format json > x.log`.
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/internal/loggen"
)

func main() {
	size := pflag.String("bytes", "100M", "approximate output size (K, M, G suffixes)")
	format := pflag.String("format", "json", "json (Docker json-file) or plain")
	seed := pflag.Int64("seed", 1, "generator seed")
	share := pflag.Float64("diagnostic-share", 0.0001, "share of lines that trigger a diagnosis")
	pflag.Parse()
	n, err := parseSize(*size)
	if err != nil {
		fmt.Fprintln(os.Stderr, "loggen:", err)
		os.Exit(1)
	}
	f := loggen.DockerJSON
	if *format == "plain" {
		f = loggen.Plain
	}
	g := loggen.New(*seed, loggen.Options{DiagnosticShare: *share})
	w := bufio.NewWriterSize(os.Stdout, 1<<20)
	var written int64
	for written < n {
		m, err := g.WriteLines(w, f, 10000)
		if err != nil {
			fmt.Fprintln(os.Stderr, "loggen:", err)
			os.Exit(1)
		}
		written += m
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "loggen:", err)
		os.Exit(1)
	}
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	case strings.HasSuffix(s, "K"):
		mult, s = 1<<10, strings.TrimSuffix(s, "K")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}
