package server

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/faultline/faultline/shipper"
)

// runDemo plays the nodes of cfg.Demo (one folder per node) as if they were
// writing their logs now: for each node, a goroutine appends the lines of its
// files to copies under a temporary folder, paced over cfg.DemoPace, and an
// in-process shipper tails the copies and publishes them to natsURL.
func runDemo(ctx context.Context, cfg Config, natsURL string) error {
	nodes, err := demoNodes(cfg.Demo, cfg.DemoNodes)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "faultline-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(tmp)
	cfg.Log.Info("demo: replaying nodes", "nodes", nodes, "from", cfg.Demo, "into", tmp, "over", cfg.DemoPace)
	var wg sync.WaitGroup
	for _, node := range nodes {
		live := filepath.Join(tmp, "logs", node)
		if err := os.MkdirAll(live, 0o755); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		wg.Go(func() {
			err := shipper.Run(ctx, shipper.Config{
				Paths:    []string{filepath.Join(live, "*"), filepath.Join(live, "*", "*")},
				Node:     node,
				NATS:     shipper.NATSOptions{URL: natsURL},
				StateDir: filepath.Join(tmp, "state", node),
				Log:      cfg.Log.With("shipper", node),
				Metrics:  shipper.NewMetrics(),
			})
			if err != nil && ctx.Err() == nil {
				cfg.Log.Error("demo shipper", "node", node, "err", err)
			}
		})
		wg.Go(func() {
			if err := replayNode(ctx, filepath.Join(cfg.Demo, node), live, cfg.DemoPace); err != nil && ctx.Err() == nil {
				cfg.Log.Error("demo replay", "node", node, "err", err)
			}
		})
	}
	wg.Wait()
	return nil
}

func demoNodes(dir string, only []string) ([]string, error) {
	if len(only) > 0 {
		return only, nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("demo logs: %w (run from the repository root or pass --demo-logs)", err)
	}
	var nodes []string
	for _, e := range entries {
		if e.IsDir() {
			nodes = append(nodes, e.Name())
		}
	}
	if len(nodes) == 0 {
		return nil, fmt.Errorf("demo logs: no node folders in %s", dir)
	}
	return nodes, nil
}

// replayNode appends the lines of every file under src to the same relative
// path under dst, one line at a time, round-robin over the files, spreading
// all lines over pace.
func replayNode(ctx context.Context, src, dst string, pace time.Duration) error {
	type file struct {
		out   *os.File
		lines [][]byte
	}
	var files []*file
	err := filepath.WalkDir(src, func(path string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dst, rel)
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
		return fmt.Errorf("demo replay: %w", err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].out.Name() < files[j].out.Name() })
	total := 0
	for _, f := range files {
		total += len(f.lines)
	}
	if total == 0 {
		return nil
	}
	step := pace / time.Duration(total)
	for written := 0; written < total; {
		for _, f := range files {
			if len(f.lines) == 0 {
				continue
			}
			if _, err := f.out.Write(f.lines[0]); err != nil {
				return fmt.Errorf("demo replay: %w", err)
			}
			f.lines = f.lines[1:]
			written++
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(step):
			}
		}
	}
	return nil
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
