// Command tailprobe shows why the shipper has its own polling follower
// instead of github.com/hpcloud/tail or its maintained fork
// github.com/nxadm/tail: it tails a file that is written and rotated the way
// Docker's json-file driver rotates (rename to .1, create a new file) with
// each library, inotify and poll mode, and counts the lines lost and the
// lines torn in two (a half-written line delivered as a line). With
// "throughput" it measures the CPU each library spends only delivering the
// lines of a 2-million-line json-file log.
//
// It is its own module so that the libraries stay out of Faultline's
// dependencies:
//
//	cd bench/tailprobe && go run .            # loss and torn lines
//	cd bench/tailprobe && go run . throughput # CPU per million lines
//
// The shipper's own follower passes the same scenario in
// shipper/rotate_test.go (TestRotation*).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	htail "github.com/hpcloud/tail"
	ntail "github.com/nxadm/tail"
)

var (
	lines       = flag.Int("lines", 200000, "lines to write")
	rotateEvery = flag.Int("rotate-every", 20000, "rotate after this many lines")
	pause       = flag.Duration("pause", 2*time.Millisecond, "pause after every 100 lines")
)

var fullLine = regexp.MustCompile(`^line \d{7} some text to make it longer than short \.{12}$`)

func main() {
	flag.Parse()
	if flag.Arg(0) == "throughput" {
		throughput()
		return
	}
	for _, lib := range []string{"hpcloud/tail", "nxadm/tail"} {
		for _, poll := range []bool{false, true} {
			lost, torn := rotation(lib, poll)
			fmt.Printf("%-13s poll=%-5v written %d lines, rotated every %d: lost %d, torn %d\n", lib, poll, *lines, *rotateEvery, lost, torn)
		}
	}
}

// follow tails path with lib and returns its lines and a stop function.
func follow(lib, path string, poll bool) (<-chan string, func()) {
	out := make(chan string, 1024)
	switch lib {
	case "hpcloud/tail":
		t, err := htail.TailFile(path, htail.Config{Follow: true, ReOpen: true, Poll: poll, Logger: htail.DiscardingLogger})
		if err != nil {
			panic(err)
		}
		go func() {
			for l := range t.Lines {
				out <- l.Text
			}
		}()
		return out, func() { t.Stop() }
	default:
		t, err := ntail.TailFile(path, ntail.Config{Follow: true, ReOpen: true, Poll: poll, Logger: ntail.DiscardingLogger})
		if err != nil {
			panic(err)
		}
		go func() {
			for l := range t.Lines {
				out <- l.Text
			}
		}()
		return out, func() { t.Stop() }
	}
}

// write appends the lines, flushing every 100 (so lines are sometimes
// written in two pieces, as a busy writer does) and rotating like Docker.
func write(path string) {
	f, _ := os.Create(path)
	w := bufio.NewWriter(f)
	for i := 0; i < *lines; i++ {
		fmt.Fprintf(w, "line %07d some text to make it longer than short ............\n", i)
		if i%100 == 99 {
			w.Flush()
			time.Sleep(*pause)
		}
		if i%*rotateEvery == *rotateEvery-1 {
			w.Flush()
			f.Close()
			os.Rename(path, path+".1")
			f, _ = os.Create(path)
			w = bufio.NewWriter(f)
		}
	}
	w.Flush()
	f.Close()
}

func rotation(lib string, poll bool) (lost, torn int) {
	dir, err := os.MkdirTemp("", "tailprobe")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "c-json.log")
	os.WriteFile(path, nil, 0o644)
	got, stop := follow(lib, path, poll)
	defer stop()
	done := make(chan struct{})
	go func() { write(path); close(done) }()
	seen := map[string]bool{}
	// After the writer is done, wait until 3 s pass without a line.
	idle := time.NewTimer(time.Hour)
	for {
		select {
		case l := <-got:
			if !fullLine.MatchString(l) {
				torn++
				continue
			}
			seen[l] = true
			if done == nil {
				idle.Reset(3 * time.Second)
			}
		case <-done:
			done = nil
			idle.Reset(3 * time.Second)
		case <-idle.C:
			return *lines - len(seen), torn
		}
	}
}

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func throughput() {
	const n = 2000000
	dir, err := os.MkdirTemp("", "tailprobe")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "big-json.log")
	f, _ := os.Create(path)
	w := bufio.NewWriterSize(f, 1<<20)
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, `{"log":"INFO 03-14 09:00:00 llm_engine.py:301] Avg prompt throughput: 123.4 tokens/s, Running: 12 reqs %07d\n","stream":"stdout","time":"2026-03-14T09:00:00.000000000Z"}`+"\n", i)
	}
	w.Flush()
	f.Close()
	for _, lib := range []string{"hpcloud/tail", "nxadm/tail"} {
		c0, t0 := cpu(), time.Now()
		got, stop := follow(lib, path, false)
		for count := 0; count < n; count++ {
			<-got
		}
		el, c := time.Since(t0), cpu()-c0
		stop()
		fmt.Printf("%-13s %d lines in %.2fs = %.0f lines/s, %.2f CPU-s per million lines (delivery only: no decode, no publish)\n",
			lib, n, el.Seconds(), float64(n)/el.Seconds(), c.Seconds()/(float64(n)/1e6))
	}
}
