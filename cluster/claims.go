package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/sink"
)

// Claims is the findings bucket, the ledger of a cluster (sink.Ledger):
// each finding's key holds its version reserved or announced last. A
// member reserves a version by winning the compare-and-set that writes it,
// pending, with the next revision; it hands it to its sinks and, once they
// all took it, confirms it (a second compare-and-set). A version left
// pending (its member died in between) is delivered again by whoever
// derives it next (the partition's new owner, replaying the launch), under
// the same revision.
type Claims struct {
	kv    jetstream.KeyValue
	by    string
	grace time.Duration // how long another member's reservation is left to it (ClaimGrace)

	mu   sync.Mutex
	view map[string]finding.Finding // the confirmed versions, as the watcher saw them
}

// claim is a finding as stored: the version, who wrote it (to recognize a
// write of ours whose reply was lost) and whether it is only reserved.
type claim struct {
	Finding finding.Finding `json:"finding"`
	By      string          `json:"by"`
	Pending bool            `json:"pending,omitempty"`
}

func newClaims(kv jetstream.KeyValue, by string) *Claims {
	return &Claims{kv: kv, by: by, grace: ClaimGrace, view: map[string]finding.Finding{}}
}

// ClaimGrace is how long a version another member reserved is left to it
// to deliver and confirm (a delivery is bounded by 10 s) before a member
// that derives it too delivers it again: in a hand-over both members
// derive the same versions, and one delivering each is the rule, two the
// exception of a member that died in between.
const ClaimGrace = 30 * time.Second

// ErrReservedElsewhere: another member reserved this version moments ago
// and may be delivering it; ask again later (after ClaimGrace it is
// delivered here if still not confirmed).
var ErrReservedElsewhere = sink.ErrReservedElsewhere

var _ sink.Ledger = (*Claims)(nil)

// Reserve numbers f for delivery (sink.Ledger): it writes f, pending, with
// the next revision when it is newer than the stored version, and returns
// a stored version left pending as it is (to be delivered again) when f
// is not newer; false when the stored version is announced and as new.
func (c *Claims) Reserve(ctx context.Context, f finding.Finding) (finding.Finding, bool, error) {
	for {
		e, err := c.kv.Get(ctx, f.ID)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			g, ok := sink.Reservation(f, finding.Finding{}, false, false)
			if !ok {
				return f, false, nil
			}
			b, _ := json.Marshal(claim{Finding: g, By: c.by, Pending: true})
			if _, err := c.kv.Create(ctx, f.ID, b); err == nil {
				return g, true, nil
			} else if !isConflict(err) {
				return f, false, fmt.Errorf("claim %s: %w", f.ID, err)
			}
			continue // raised at the same moment elsewhere: compare with theirs
		case err != nil:
			return f, false, fmt.Errorf("claim %s: %w", f.ID, err)
		}
		var old claim
		if err := json.Unmarshal(e.Value(), &old); err != nil {
			return f, false, fmt.Errorf("claim %s: stored finding unreadable: %w", f.ID, err)
		}
		g, ok := sink.Reservation(f, old.Finding, true, !old.Pending)
		if !ok {
			return f, false, nil
		}
		if old.Pending && g.Revision == old.Finding.Revision {
			if old.By == c.by {
				return g, true, nil // ours already (a retry, or this member restarted)
			}
			if time.Since(e.Created()) < c.grace {
				return f, false, fmt.Errorf("claim %s revision %d: %w", f.ID, g.Revision, ErrReservedElsewhere)
			}
		}
		if old.Pending && old.By != c.by && g.Revision > old.Finding.Revision {
			// A newer version while another member's reservation is not
			// confirmed: numbered after it, it skipped that revision for
			// good when the member died before delivering (a take-over's
			// "revision 3 never announced"). Within the grace the member may
			// still deliver it: wait. After it, deliver its version first,
			// under its revision; the newer one comes next (Ledger).
			if time.Since(e.Created()) < c.grace {
				return f, false, fmt.Errorf("claim %s revision %d after revision %d reserved elsewhere: %w", f.ID, g.Revision, old.Finding.Revision, ErrReservedElsewhere)
			}
			g = old.Finding
		}
		b, _ := json.Marshal(claim{Finding: g, By: c.by, Pending: true})
		if _, err := c.kv.Update(ctx, f.ID, b, e.Revision()); err == nil {
			return g, true, nil
		} else if !isConflict(err) {
			return f, false, fmt.Errorf("claim %s: %w", f.ID, err)
		}
	}
}

// Confirm records f, as Reserve returned it, as announced (sink.Ledger):
// unless a later version was reserved since.
func (c *Claims) Confirm(ctx context.Context, f finding.Finding) error {
	for {
		e, err := c.kv.Get(ctx, f.ID)
		if err != nil {
			return fmt.Errorf("confirm %s: %w", f.ID, err)
		}
		var old claim
		if err := json.Unmarshal(e.Value(), &old); err != nil {
			return fmt.Errorf("confirm %s: stored finding unreadable: %w", f.ID, err)
		}
		if !old.Pending || old.Finding.Revision != f.Revision {
			return nil // confirmed already, or a later version reserved
		}
		b, _ := json.Marshal(claim{Finding: f, By: c.by})
		if _, err := c.kv.Update(ctx, f.ID, b, e.Revision()); err == nil {
			c.mu.Lock()
			c.view[f.ID] = f
			c.mu.Unlock()
			return nil
		} else if !isConflict(err) {
			return fmt.Errorf("confirm %s: %w", f.ID, err)
		}
	}
}

// Announced returns the version of finding id confirmed last, as the
// watcher saw it (sink.Ledger).
func (c *Claims) Announced(id string) (finding.Finding, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f, ok := c.view[id]
	return f, ok
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
			if e.Operation() != jetstream.KeyValuePut || json.Unmarshal(e.Value(), &cl) != nil || cl.Pending {
				continue // only reserved: not announced yet
			}
			c.mu.Lock()
			if old, ok := c.view[e.Key()]; !ok || old.Revision <= cl.Finding.Revision {
				c.view[e.Key()] = cl.Finding
			}
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

// Findings are all the findings announced by any member, in finding.Order
// (sink.Ledger).
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
