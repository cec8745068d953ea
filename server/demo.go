package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faultline/faultline/transport"
)

// runDemo plays the nodes of the demo source (cfg.DemoFS, else the folder
// cfg.Demo; one subfolder per node) as if they were writing their logs now:
// for each node, a goroutine appends the lines of its files to copies under
// a temporary folder, paced over cfg.DemoPace, and an in-process shipper
// tails the copies and publishes them to natsURL. It tells the person at the
// terminal what is going on: where the UI is, and when the replay is over.
func (s *server) runDemo(ctx context.Context, natsURL, httpAddr string) error {
	cfg := s.cfg
	src, from := cfg.DemoFS, "the embedded seed story"
	if src == nil {
		src, from = os.DirFS(cfg.Demo), cfg.Demo
	}
	nodes, err := demoNodes(src, from, cfg.DemoNodes)
	if err != nil {
		return err
	}
	if cfg.DemoShip == nil {
		return errors.New("demo: no shipper to replay it with (Config.DemoShip)")
	}
	tmp, err := os.MkdirTemp("", "faultline-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(tmp)
	cfg.Log.Info("demo: replaying nodes", "nodes", nodes, "from", from, "into", tmp, "over", cfg.DemoPace)
	ui := "HTTP is off"
	if httpAddr != "" {
		ui = "web UI on " + browsable(httpAddr)
	}
	fmt.Fprintf(cfg.Stdout, "Faultline demo: replaying the logs of %s as if written now (over %v); findings appear below as they are proven; %s; Ctrl-C to stop.\n",
		strings.Join(nodes, ", "), cfg.DemoPace, ui)
	var wg, writers sync.WaitGroup
	var lines atomic.Int64
	for _, node := range nodes {
		live := filepath.Join(tmp, "logs", node)
		if err := os.MkdirAll(live, 0o755); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		wg.Go(func() {
			err := cfg.DemoShip(ctx, node, []string{filepath.Join(live, "*"), filepath.Join(live, "*", "*")},
				transport.NATSOptions{URL: natsURL, User: cfg.NATS.User, Password: cfg.NATS.Password, Token: cfg.NATS.Token},
				filepath.Join(tmp, "state", node), cfg.Log.With("shipper", node))
			if err != nil && ctx.Err() == nil {
				cfg.Log.Error("demo shipper", "node", node, "err", err)
			}
		})
		writers.Go(func() {
			sub, err := fs.Sub(src, node)
			if err == nil {
				var n int
				n, err = replayFS(ctx, sub, live, cfg.DemoPace)
				lines.Add(int64(n))
			}
			if err != nil && ctx.Err() == nil {
				cfg.Log.Error("demo replay", "node", node, "err", err)
			}
		})
	}
	writers.Wait()
	// Nothing written (empty node folders): nothing to wait for.
	if lines.Load() == 0 || s.settle(ctx) {
		n := len(s.findings())
		fmt.Fprintf(cfg.Stdout, "\nFaultline demo: replay done: %d lines from %d nodes, %d finding(s); %s until Ctrl-C.\n",
			lines.Load(), len(nodes), n, strings.Replace(ui, "web UI on", "they stay on", 1))
	}
	wg.Wait()
	return nil
}

// settle waits until the records the shippers still had in flight are
// consumed: the count of consumed records has not moved for a second (the
// shippers flush within 50 ms, the consumer acks within AckInterval). It
// reports false when ctx ended first.
func (s *server) settle(ctx context.Context) bool {
	last, still := s.counters.Records.Load(), 0
	for still < 10 {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
		if n := s.counters.Records.Load(); n != last || n == 0 {
			last, still = n, 0
			continue
		}
		still++
	}
	return true
}

// browsable turns a listen address into a URL to open: an unspecified host
// (0.0.0.0, ::) is reached on loopback.
func browsable(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

func demoNodes(src fs.FS, from string, only []string) ([]string, error) {
	if len(only) > 0 {
		return only, nil
	}
	entries, err := fs.ReadDir(src, ".")
	if err != nil {
		return nil, fmt.Errorf("demo logs %s: %w", from, err)
	}
	var nodes []string
	for _, e := range entries {
		if e.IsDir() {
			nodes = append(nodes, e.Name())
		}
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("demo logs: no node folders in %s", from)
	}
	return nodes, nil
}

// replayNode appends the lines of every file under the folder src to the
// same relative path under dst (see replayFS).
func replayNode(ctx context.Context, src, dst string, pace time.Duration) error {
	_, err := replayFS(ctx, os.DirFS(src), dst, pace)
	return err
}

// replayFS appends the lines of every file of src to the same relative path
// under dst, one line at a time, round-robin over the files, spreading all
// lines over pace. It returns how many lines it wrote.
func replayFS(ctx context.Context, src fs.FS, dst string, pace time.Duration) (int, error) {
	type file struct {
		out   *os.File
		lines [][]byte
	}
	var files []*file
	err := fs.WalkDir(src, ".", func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := fs.ReadFile(src, path)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		files = append(files, &file{out: f, lines: splitLines(b)})
		return nil
	})
	defer func() {
		for _, f := range files {
			f.out.Close()
		}
	}()
	if err != nil {
		return 0, fmt.Errorf("demo replay: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].out.Name() < files[j].out.Name() })
	total := 0
	for _, f := range files {
		total += len(f.lines)
	}
	if total == 0 {
		return 0, nil
	}
	step := pace / time.Duration(total)
	written := 0
	for written < total {
		for _, f := range files {
			if len(f.lines) == 0 {
				continue
			}
			if _, err := f.out.Write(f.lines[0]); err != nil {
				return written, fmt.Errorf("demo replay: %w", err)
			}
			f.lines = f.lines[1:]
			written++
			select {
			case <-ctx.Done():
				return written, ctx.Err()
			case <-time.After(step):
			}
		}
	}
	return written, nil
}

// splitLines splits b after each newline, keeping the newlines; a last line
// without one stays without one. The lines are slices of b, which the
// caller owns and never changes: a bufio.Scanner's lines would alias its
// buffer, which it reuses, and the replayed copy would be corrupted.
func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			return append(out, b)
		}
		out = append(out, b[:i+1])
		b = b[i+1:]
	}
	return out
}
