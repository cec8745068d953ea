package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/secrets"
)

// errNoMatch is search's answer when nothing matched: exit 1, no message.
var errNoMatch = &exitError{code: 1}

// runSearch exits like grep, so scripts can test for a match: 0 when
// something matched, 1 when nothing did, 2 on any error.
func runSearch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	err := search(ctx, args, stdout, stderr)
	if err == nil || err == errNoMatch {
		return err
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return &exitError{code: 2, err: ee.err}
	}
	return &exitError{code: 2, err: err}
}

func search(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("search", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: analyzer search [flags] QUERY...\n\n"+
			"Search the index of `analyzer ingest` or `analyzer serve`. Hits are newest first. When more\n"+
			"hits follow, stderr says next: CURSOR, and the same search with --after CURSOR shows them.\n\n"+
			index.QuerySyntax+"\n\n"+
			"Exit status: 0 something matched, 1 nothing matched, 2 an error (as grep's).\n\nflags:")
		fs.PrintDefaults()
	}
	dataDir := fs.String("data-dir", "./faultline-data", "index `DIR` (shared with serve, ingest, ui)")
	nodes := fs.StringSlice("node", nil, "only these `NODES` (repeatable or comma-separated)")
	containers := fs.StringSlice("container", nil, "only these `CONTAINERS`")
	sources := fs.StringSlice("source", nil, "only these `SOURCES` (ray, vllm, nccl, torch, python, other)")
	levels := fs.StringSlice("level", nil, "only these `LEVELS` (debug, info, warning, error, critical)")
	since := fs.String("since", "", "from this `TIME` (RFC 3339, 2026-04-08 22:41, or a duration back from now such as 2h)")
	until := fs.String("until", "", "before this `TIME` (same forms)")
	limit := fs.IntP("limit", "n", 20, "at most `N` hits")
	after := fs.String("after", "", "the page after this `CURSOR`: the next cursor a previous search printed on stderr (same query and --sort; pages of any depth cost the same)")
	contextN := fs.IntP("context", "C", 0, "show `N` records before and after each hit, from the same file")
	facets := fs.Bool("facets", false, "print hit counts per node, container, source and level")
	asJSON := fs.Bool("json", false, "one hit per line as JSON (with context lines as \"before\"/\"after\" when -C is set)")
	sort := fs.String("sort", "-time", "`ORDER`: -time (newest first), time (oldest first) or score")
	server := fs.String("server", "", "search through the HTTP API of a running analyzer serve (or ui) at this `URL`, e.g. http://127.0.0.1:8080, instead of opening --data-dir (which serve holds)")
	httpToken := fs.String("http-token", "", "bearer `TOKEN` of --server (default $FAULTLINE_HTTP_TOKEN)")
	httpTokenFile := fs.String("http-token-file", "", "read the bearer token of --server from this `FILE`")
	timeout := fs.Duration("timeout", index.DefaultSearchTimeout, "give up a search after this long")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError("%v", err)
	}
	q := index.Query{Text: strings.Join(fs.Args(), " "), Nodes: *nodes, Containers: *containers, Sources: *sources,
		Levels: *levels, Size: *limit, Sort: *sort, Facets: *facets, Highlight: !*asJSON && isTerminal(stdout),
		After: *after}
	if *limit <= 0 {
		q.Size = -1
	}
	now := time.Now()
	var err error
	if *since != "" {
		if q.Since, err = index.ParseTime(*since, now); err != nil {
			return usageError("--since: %v", err)
		}
	}
	if *until != "" {
		if q.Until, err = index.ParseTime(*until, now); err != nil {
			return usageError("--until: %v", err)
		}
	}
	if _, err := index.ParseQuery(q.Text); err != nil {
		return usageError("%v", err)
	}
	var idx searcher
	if *server != "" {
		token, err := secrets.Resolve("http-token", *httpToken, *httpTokenFile, "FAULTLINE_HTTP_TOKEN")
		if err != nil {
			return usageError("%v", err)
		}
		if idx, err = newRemoteIndex(*server, token); err != nil {
			return usageError("%v", err)
		}
	} else {
		local, err := openIndex(ctx, *dataDir, index.Options{ReadOnly: true, SearchTimeout: *timeout})
		if errors.Is(err, errInterrupted) {
			return err
		}
		if err != nil {
			if strings.Contains(err.Error(), "timeout") {
				err = fmt.Errorf("%w\n(search the running serve with: analyzer search --server http://ITS-HTTP-ADDRESS ...)", err)
			}
			return usageError("%v", err)
		}
		defer local.Close()
		idx = local
	}
	res, err := idx.Search(ctx, q)
	if err != nil {
		return usageError("%v", err)
	}

	if *asJSON {
		enc := json.NewEncoder(stdout)
		for _, h := range res.Hits {
			line := struct {
				index.Hit
				Time   *time.Time  `json:"time"` // null when the record had no time
				Before []index.Hit `json:"before,omitempty"`
				After  []index.Hit `json:"after,omitempty"`
			}{Hit: h}
			if !h.Time.IsZero() {
				line.Time = &h.Time
			}
			if *contextN > 0 {
				c, err := idx.Context(ctx, h.ID, *contextN)
				if err != nil {
					return err
				}
				line.Before, line.After = c.Before, c.After
			}
			if err := enc.Encode(line); err != nil {
				return err
			}
		}
		if *facets {
			if err := enc.Encode(map[string]any{"total": res.Total, "facets": res.Facets}); err != nil {
				return err
			}
		}
		if res.Next != "" {
			// stdout holds only hits (and the facets line): the cursor goes
			// to stderr, one line a script can read.
			fmt.Fprintf(stderr, "next: %s\n", res.Next)
		}
		if res.Total == 0 {
			return errNoMatch
		}
		return nil
	}

	for i, h := range res.Hits {
		if *contextN > 0 {
			if i > 0 {
				fmt.Fprintln(stdout, "--")
			}
			c, err := idx.Context(ctx, h.ID, *contextN)
			if err != nil {
				return err
			}
			for _, b := range c.Before {
				printHit(stdout, b, '-', false)
			}
			printHit(stdout, h, ':', true)
			for _, a := range c.After {
				printHit(stdout, a, '-', false)
			}
			continue
		}
		printHit(stdout, h, ':', true)
	}
	shown := len(res.Hits)
	fmt.Fprintf(stderr, "%d of %d hits (%s)\n", shown, res.Total, res.Took.Round(time.Millisecond))
	if res.Next != "" {
		fmt.Fprintf(stderr, "next: %s (more with --after %[1]s)\n", res.Next)
	}
	if *facets {
		for _, f := range index.FacetFields {
			fmt.Fprintf(stdout, "%s:", f)
			for _, t := range res.Facets[f] {
				fmt.Fprintf(stdout, " %s=%d", t.Term, t.Count)
			}
			fmt.Fprintln(stdout)
		}
	}
	if res.Total == 0 {
		return errNoMatch
	}
	return nil
}

// printHit prints node:file:line like grep -n with file names, then time,
// level and source, then the message (with ANSI bold marks on a terminal).
func printHit(w io.Writer, h index.Hit, sep byte, match bool) {
	msg := h.Message
	if match && len(h.Highlights) > 0 {
		var b strings.Builder
		pos := 0
		for _, r := range h.Highlights {
			if r[0] < pos || r[1] > len(msg) {
				continue
			}
			b.WriteString(msg[pos:r[0]])
			b.WriteString("\033[1;31m" + msg[r[0]:r[1]] + "\033[0m")
			pos = r[1]
		}
		b.WriteString(msg[pos:])
		msg = b.String()
	}
	ts := ""
	if !h.Time.IsZero() {
		ts = h.Time.UTC().Format("2006-01-02T15:04:05.000Z")
	}
	fmt.Fprintf(w, "%s:%s:%d%c %s %s %s %s\n", h.Node, h.File, h.Line, sep, ts, orDash(h.Level), h.Source, msg)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
