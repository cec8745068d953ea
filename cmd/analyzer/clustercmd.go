package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/faultline/faultline/internal/secrets"
	"github.com/faultline/faultline/server"
	"github.com/faultline/faultline/transport"
)

// runCluster is `analyzer cluster status|drain`: what a cluster's members
// own and how far they are, asked of any member's HTTP API.
func runCluster(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := pflag.NewFlagSet("cluster", pflag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: analyzer cluster status|drain --server URL [flags]\n\n"+
			"status: the members, each partition's owner, lease epoch, lag and replay state,\n"+
			"and the partitions nobody owns, as the analyzer at --server and its peers say.\n"+
			"drain: the analyzer at --server gives every partition up and takes none while it\n"+
			"stays up (before maintenance); restart it to have it take its share again.\n\n"+
			"Exit codes: 0 ok; 1 the analyzer did not answer or is not a cluster member, or a\n"+
			"usage error.\n\nflags:")
		fs.PrintDefaults()
	}
	srv := fs.String("server", "", "base `URL` of an analyzer's HTTP API (serve --http)")
	clusterName := fs.String("cluster", "", "also say which partition this log `CLUSTER` (shipper --cluster) maps to")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	httpToken := fs.String("http-token", "", "bearer `TOKEN` of --server (default $FAULTLINE_HTTP_TOKEN)")
	httpTokenFile := fs.String("http-token-file", "", "read the bearer token of --server from this `FILE`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return nil
		}
		return usageError("%v", err)
	}
	if fs.NArg() != 1 || (fs.Arg(0) != "status" && fs.Arg(0) != "drain") {
		return usageError("want status or drain")
	}
	u, err := url.Parse(*srv)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return usageError("--server %q: want a URL such as http://127.0.0.1:8080", *srv)
	}
	token, err := secrets.Resolve("http-token", *httpToken, *httpTokenFile, "FAULTLINE_HTTP_TOKEN")
	if err != nil {
		return usageError("%v", err)
	}
	base := strings.TrimRight(u.String(), "/")
	method, path := http.MethodGet, "/api/cluster"
	if fs.Arg(0) == "drain" {
		method, path = http.MethodPost, "/api/cluster/drain"
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", base, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s%s: %s: %s", base, path, resp.Status, strings.TrimSpace(string(body)))
	}
	if fs.Arg(0) == "drain" || *asJSON {
		_, err := stdout.Write(body)
		return err
	}
	var st server.ClusterStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return fmt.Errorf("%s%s: %w", base, path, err)
	}
	printStatus(stdout, st, *clusterName)
	return nil
}

func printStatus(w io.Writer, st server.ClusterStatus, clusterName string) {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "MEMBER\tHTTP\tOWNED\tSINCE\t\n")
	for _, m := range st.Members {
		state := ""
		if m.Draining {
			state = "draining"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", m.ID, m.HTTP, len(m.Owned), m.Since.UTC().Format(time.RFC3339), state)
	}
	tw.Flush()
	fmt.Fprintln(w)
	fmt.Fprintf(tw, "PARTITION\tOWNER\tEPOCH\tLAG\tSTATE\tINDEXED SEQ\t\n")
	for _, l := range st.Leases {
		state := l.State
		if l.Target > 0 {
			state += fmt.Sprintf(" (to seq %d)", l.Target)
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%d\t\n", l.Partition, l.Owner, l.Epoch, l.Lag, state, l.Indexed)
	}
	for _, p := range st.Unowned {
		fmt.Fprintf(tw, "%d\t-\t\t\tunowned\t\t\n", p)
	}
	tw.Flush()
	for _, u := range st.Unreachable {
		fmt.Fprintf(w, "not answering: %s\n", u)
	}
	if clusterName != "" {
		fmt.Fprintf(w, "\ncluster %s is in partition %d of %d\n", clusterName, transport.PartitionOf(clusterName, st.Partitions), st.Partitions)
	}
}
