package main

import (
	"context"
	"errors"

	"github.com/faultline/faultline/index"
)

// errInterrupted is what a command returns when Ctrl-C or SIGTERM ended it.
var errInterrupted = errors.New("interrupted")

// openIndex opens an index but gives up as soon as ctx ends: opening waits
// up to a few seconds for a lock another process holds, and Ctrl-C must not
// wait with it. An index that opens after ctx ended is closed at once.
func openIndex(ctx context.Context, dir string, opts index.Options) (*index.Index, error) {
	type result struct {
		x   *index.Index
		err error
	}
	done := make(chan result, 1)
	go func() {
		x, err := index.Open(dir, opts)
		done <- result{x, err}
	}()
	select {
	case r := <-done:
		return r.x, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				r.x.Close()
			}
		}()
		return nil, errInterrupted
	}
}
