package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/sink"
)

// Claims is the findings bucket: each finding's key holds the version last
// announced, and announcing a version means winning the compare-and-set that
// writes it with the next revision.
type Claims struct {
	kv jetstream.KeyValue
	by string

	mu   sync.Mutex
	view map[string]finding.Finding // the bucket, as the watcher saw it
}

// claim is a finding as stored: the version announced and who announced it
// (to recognize a write of ours whose reply was lost).
type claim struct {
	Finding finding.Finding `json:"finding"`
	By      string          `json:"by"`
}

func newClaims(kv jetstream.KeyValue, by string) *Claims {
	return &Claims{kv: kv, by: by, view: map[string]finding.Finding{}}
}

// Claim announces f if it is a newer version (sink.Newer) than the one
// stored: it returns f with its revision set and true when this call won
// the compare-and-set, false when the stored version is as new, or another
// member won.
func (c *Claims) Claim(ctx context.Context, f finding.Finding) (finding.Finding, bool, error) {
	for {
		e, err := c.kv.Get(ctx, f.ID)
		var old claim
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			f.Revision = 1
			b, _ := json.Marshal(claim{Finding: f, By: c.by})
			if _, err := c.kv.Create(ctx, f.ID, b); err == nil {
				return f, true, nil
			} else if !isConflict(err) {
				return f, false, fmt.Errorf("claim %s: %w", f.ID, err)
			}
			continue // raised at the same moment elsewhere: compare with theirs
		case err != nil:
			return f, false, fmt.Errorf("claim %s: %w", f.ID, err)
		}
		if err := json.Unmarshal(e.Value(), &old); err != nil {
			return f, false, fmt.Errorf("claim %s: stored finding unreadable: %w", f.ID, err)
		}
		if !sink.Newer(f, old.Finding) {
			return f, false, nil
		}
		f.Revision = old.Finding.Revision + 1
		b, _ := json.Marshal(claim{Finding: f, By: c.by})
		if _, err := c.kv.Update(ctx, f.ID, b, e.Revision()); err == nil {
			return f, true, nil
		} else if !isConflict(err) {
			return f, false, fmt.Errorf("claim %s: %w", f.ID, err)
		}
	}
}

// Stored returns the stored version of finding id, if any.
func (c *Claims) Stored(ctx context.Context, id string) (finding.Finding, bool, error) {
	e, err := c.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return finding.Finding{}, false, nil
	}
	if err != nil {
		return finding.Finding{}, false, err
	}
	var cl claim
	if err := json.Unmarshal(e.Value(), &cl); err != nil {
		return finding.Finding{}, false, err
	}
	return cl.Finding, true, nil
}

// Watch keeps Findings up to date with the bucket until ctx is done; it
// returns once the bucket's current content has been read.
func (c *Claims) Watch(ctx context.Context) error {
	w, err := c.kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch findings: %w", err)
	}
	ready := make(chan struct{})
	go func() {
		defer w.Stop()
		caughtUp := false
		for e := range w.Updates() {
			if e == nil { // the end of what was stored
				if !caughtUp {
					close(ready)
					caughtUp = true
				}
				continue
			}
			var cl claim
			if e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &cl) != nil {
				continue
			}
			c.mu.Lock()
			c.view[e.Key()] = cl.Finding
			c.mu.Unlock()
		}
	}()
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Findings are all the findings announced by any member, in finding.Order.
func (c *Claims) Findings() []finding.Finding {
	c.mu.Lock()
	out := make([]finding.Finding, 0, len(c.view))
	for _, f := range c.view {
		out = append(out, f)
	}
	c.mu.Unlock()
	slices.SortFunc(out, func(a, b finding.Finding) int { return strings.Compare(a.ID, b.ID) })
	return finding.Order(out)
}

// State keeps a small value per partition (serve's replay checkpoint).
type State struct{ kv jetstream.KeyValue }

// Load returns partition p's value; nil when there is none.
func (s *State) Load(ctx context.Context, p int) ([]byte, error) {
	e, err := s.kv.Get(ctx, key(p))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state of partition %d: %w", p, err)
	}
	return e.Value(), nil
}

// Save writes partition p's value (its owner only: callers check their lease).
func (s *State) Save(ctx context.Context, p int, b []byte) error {
	if _, err := s.kv.Put(ctx, key(p), b); err != nil {
		return fmt.Errorf("state of partition %d: %w", p, err)
	}
	return nil
}
