package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Options say who this member is and how the partitions are shared.
type Options struct {
	Member     string // unique among the members
	HTTP       string // base URL of its HTTP API, for search fan-out
	Partitions int
	// Replicas of the buckets when they are created; an existing bucket
	// keeps its own unless SetReplicas (members whose counts differ must
	// not scale the buckets back and forth).
	Replicas    int
	SetReplicas bool
	TTL         time.Duration // of leases and memberships (DefaultTTL)
	Log         *slog.Logger
}

// Member is what a member says of itself at every heartbeat.
type Member struct {
	ID    string    `json:"id"`
	HTTP  string    `json:"http,omitempty"`
	Owned []int     `json:"owned"`
	Since time.Time `json:"since"`
	// Draining: it gives its partitions up and takes none (Drain); the
	// others share them as if it had left.
	Draining bool `json:"draining,omitempty"`
}

// OwnFunc processes partition l.Partition until ctx is done, and returns
// only once it has stopped: the lease is released after it returns. It
// must also stop, between units of work, as soon as l.Valid() is false.
type OwnFunc func(ctx context.Context, l *Lease)

// Node is this analyzer's membership and its leases.
type Node struct {
	opts  Options
	log   *slog.Logger
	nonce string // this process: a lease it wrote is recognized as its own
	start time.Time
	tick  time.Duration

	members, leases jetstream.KeyValue
	*Claims
	*State

	beat     atomic.Int64 // since start (monotonic), of the last heartbeat stored
	draining atomic.Bool

	mu    sync.Mutex
	held  map[int]*Lease
	live  []Member // as of the last heartbeat
	moves int      // leases acquired and given up, for /metrics
}

// Join creates the buckets (or finds them) and returns the node; Run makes
// it a member.
func Join(ctx context.Context, js jetstream.JetStream, o Options) (*Node, error) {
	if o.Member == "" || o.Partitions <= 0 {
		return nil, errors.New("cluster: a member name and a partition count are needed")
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	members, leases, findings, state, err := buckets(ctx, js, o.Replicas, o.SetReplicas, o.TTL)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	n := &Node{opts: o, log: o.Log, start: now, tick: o.TTL / 5,
		nonce:   o.Member + "@" + strconv.FormatInt(now.UnixNano(), 36),
		members: members, leases: leases, held: map[int]*Lease{},
		Claims: newClaims(findings, o.Member), State: &State{kv: state}}
	return n, nil
}

// Lease is this member's hold on one partition.
type Lease struct {
	Partition int
	Epoch     uint64 // the KV revision that created it: grows with every new owner

	n      *Node
	rev    uint64 // the last revision written
	mu     sync.Mutex
	until  time.Duration // since n.start (monotonic): valid before
	timer  *time.Timer   // cancels the work when until passes
	over   bool          // it did: a late renewal must not revive a lease nobody works on
	cancel context.CancelFunc
	done   chan struct{}
}

// Valid reports whether the lease is certainly still held: the server
// cannot have expired it yet.
func (l *Lease) Valid() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return time.Since(l.n.start) < l.until
}

// extend moves the deadline to sent (when the renewal that succeeded was
// sent) plus the TTL, less a margin for the server's and our timers.
func (l *Lease) extend(sent time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.over {
		return // the next round sees it invalid and lets it go
	}
	l.until = sent + l.n.opts.TTL - l.n.tick
	left := l.until - time.Since(l.n.start)
	if l.timer == nil {
		l.timer = time.AfterFunc(left, l.expire)
	} else {
		l.timer.Reset(left)
	}
}

// expire stops the work on the lease the moment it is no longer certainly
// held, not at the next round.
func (l *Lease) expire() {
	l.mu.Lock()
	left := l.until - time.Since(l.n.start)
	if left > 0 { // extended meanwhile
		l.timer.Reset(left)
		l.mu.Unlock()
		return
	}
	l.over = true
	l.mu.Unlock()
	l.cancel()
}

// stop cancels the work on the lease and its timer.
func (l *Lease) stop() {
	l.mu.Lock()
	l.timer.Stop()
	l.mu.Unlock()
	l.cancel()
}

type leaseValue struct {
	Member string `json:"member"`
	Nonce  string `json:"nonce"`
}

func key(p int) string { return "p" + strconv.Itoa(p) }

// Run heartbeats, balances and renews until ctx is done, running own for
// every partition it holds; then it stops them and gives the leases and
// the membership back, so others take over at once.
func (n *Node) Run(ctx context.Context, own OwnFunc) {
	t := time.NewTicker(n.tick)
	defer t.Stop()
	for {
		n.step(ctx, own)
		select {
		case <-ctx.Done():
			n.leave()
			return
		case <-t.C:
		}
	}
}

// step is one round: heartbeat, who should own what, then per partition
// renew, give up or take, all partitions at once (a slow answer for one
// must not hold the renewal of the others past their deadline).
func (n *Node) step(ctx context.Context, own OwnFunc) {
	live := n.heartbeat(ctx)
	ids := make([]string, 0, len(live)+1)
	seen := false
	for _, m := range live {
		seen = seen || m.ID == n.opts.Member
		if !m.Draining && m.ID != n.opts.Member {
			ids = append(ids, m.ID)
		}
	}
	if !n.draining.Load() {
		ids = append(ids, n.opts.Member) // our own heartbeat may have failed or not be visible yet
	}
	// Members started together see each other within a round or two:
	// taking partitions before then would index some twice as they move.
	settling := !seen || time.Since(n.start) < 2*n.tick
	owners := Assign(n.opts.Partitions, ids)
	var wg sync.WaitGroup
	for p := range n.opts.Partitions {
		mine := owners[p] == n.opts.Member
		n.mu.Lock()
		l := n.held[p]
		n.mu.Unlock()
		switch {
		case l != nil && !l.Valid():
			n.lost(l, "not renewed in time")
		case l != nil && !mine:
			wg.Go(func() { n.release(l) })
		case l != nil:
			wg.Go(func() { n.renew(ctx, l) })
		case mine && !settling && ctx.Err() == nil:
			wg.Go(func() { n.acquire(ctx, p, own) })
		}
	}
	wg.Wait()
}

// requestTimeout bounds one KV request: two rounds, so that a slow answer
// (a NATS server lost, its streams electing a new leader) is waited for
// while the leases it would renew still have two rounds to run.
func (n *Node) requestTimeout() time.Duration { return 2 * n.tick }

// heartbeat writes this member's entry and reads the live members.
func (n *Node) heartbeat(ctx context.Context) []Member {
	me := Member{ID: n.opts.Member, HTTP: n.opts.HTTP, Owned: n.Owned(), Since: n.start, Draining: n.draining.Load()}
	b, _ := json.Marshal(me)
	cctx, cancel := context.WithTimeout(ctx, n.requestTimeout())
	defer cancel()
	sent := time.Since(n.start)
	if _, err := n.members.Put(cctx, n.opts.Member, b); err != nil {
		if ctx.Err() == nil {
			n.log.Warn("cluster heartbeat failed", "err", err)
		}
	} else {
		n.beat.Store(int64(sent))
	}
	lister, err := n.members.ListKeys(cctx)
	if err != nil {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.live // keep the last view rather than drop everyone
	}
	var live []Member
	for k := range lister.Keys() {
		e, err := n.members.Get(cctx, k)
		if err != nil {
			continue // expired between the two calls
		}
		var m Member
		if json.Unmarshal(e.Value(), &m) == nil && m.ID != "" {
			live = append(live, m)
		}
	}
	slices.SortFunc(live, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	n.mu.Lock()
	n.live = live
	n.mu.Unlock()
	return live
}

// acquire takes partition p if nobody holds it, and starts own on it.
func (n *Node) acquire(ctx context.Context, p int, own OwnFunc) {
	val, _ := json.Marshal(leaseValue{Member: n.opts.Member, Nonce: n.nonce})
	cctx, cancel := context.WithTimeout(ctx, n.requestTimeout())
	defer cancel()
	sent := time.Since(n.start)
	rev, err := n.leases.Create(cctx, key(p), val)
	if isConflict(err) {
		// Held by another, or by us: a create that timed out may have
		// been stored.
		e, gerr := n.leases.Get(cctx, key(p))
		var v leaseValue
		if gerr != nil || json.Unmarshal(e.Value(), &v) != nil || v.Nonce != n.nonce {
			return
		}
		rev, err = e.Revision(), nil
	}
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("cluster lease not taken", "partition", p, "err", err)
		}
		return
	}
	wctx, stop := context.WithCancel(context.Background())
	l := &Lease{Partition: p, Epoch: rev, n: n, rev: rev, cancel: stop, done: make(chan struct{})}
	l.extend(sent)
	n.mu.Lock()
	n.held[p] = l
	n.moves++
	n.mu.Unlock()
	n.log.Info("partition taken", "partition", p, "epoch", rev)
	go func() {
		defer close(l.done)
		own(wctx, l)
	}()
}

// renew extends l; a revision it does not know means another took it.
func (n *Node) renew(ctx context.Context, l *Lease) {
	val, _ := json.Marshal(leaseValue{Member: n.opts.Member, Nonce: n.nonce})
	cctx, cancel := context.WithTimeout(ctx, n.requestTimeout())
	defer cancel()
	sent := time.Since(n.start)
	rev, err := n.leases.Update(cctx, key(l.Partition), val, l.rev)
	switch {
	case err == nil:
		l.rev = rev
		l.extend(sent)
	case isConflict(err):
		// Ours still if an earlier renewal that timed out was stored.
		e, gerr := n.leases.Get(cctx, key(l.Partition))
		var v leaseValue
		if gerr == nil && json.Unmarshal(e.Value(), &v) == nil && v.Nonce == n.nonce {
			l.rev = e.Revision()
			return
		}
		n.lost(l, "taken by another member")
	default:
		if ctx.Err() == nil {
			n.log.Warn("cluster lease renewal failed; retrying until it expires", "partition", l.Partition, "err", err)
		}
	}
}

// lost stops processing l at once; the lease is no longer ours to delete.
func (n *Node) lost(l *Lease, why string) {
	l.stop()
	n.mu.Lock()
	delete(n.held, l.Partition)
	n.moves++
	n.mu.Unlock()
	n.log.Warn("partition lost", "partition", l.Partition, "epoch", l.Epoch, "why", why)
}

// release stops processing l, waits until it has stopped, then deletes
// the lease so its next owner can take it at once.
func (n *Node) release(l *Lease) {
	l.stop()
	<-l.done
	n.mu.Lock()
	delete(n.held, l.Partition)
	n.moves++
	n.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), n.opts.TTL)
	defer cancel()
	if err := n.leases.Delete(ctx, key(l.Partition), jetstream.LastRevision(l.rev)); err != nil {
		n.log.Warn("partition released; its lease expires on its own", "partition", l.Partition, "err", err)
		return
	}
	n.log.Info("partition released", "partition", l.Partition, "epoch", l.Epoch)
}

// leave releases everything and the membership (on shutdown).
func (n *Node) leave() {
	n.mu.Lock()
	held := make([]*Lease, 0, len(n.held))
	for _, l := range n.held {
		held = append(held, l)
	}
	n.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range held {
		wg.Go(func() { n.release(l) })
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), n.opts.TTL)
	defer cancel()
	if err := n.members.Delete(ctx, n.opts.Member); err != nil {
		n.log.Warn("leaving the cluster; the membership expires on its own", "err", err)
	}
}

// Owned lists the partitions held, valid leases only, in order.
func (n *Node) Owned() []int {
	n.mu.Lock()
	ls := make([]*Lease, 0, len(n.held))
	for _, l := range n.held {
		ls = append(ls, l)
	}
	n.mu.Unlock()
	out := make([]int, 0, len(ls))
	for _, l := range ls {
		if l.Valid() {
			out = append(out, l.Partition)
		}
	}
	slices.Sort(out)
	return out
}

// Epochs are the epochs of the leases held, by partition.
func (n *Node) Epochs() map[int]uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make(map[int]uint64, len(n.held))
	for p, l := range n.held {
		out[p] = l.Epoch
	}
	return out
}

// Moves counts the leases taken, given up and lost since start.
func (n *Node) Moves() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.moves
}

// Members are the live members as of the last heartbeat (this one included
// once its heartbeat is visible).
func (n *Node) Members() []Member {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.live)
}

// SinceHeartbeat is how long ago the last heartbeat that was stored was
// sent (since Join, before the first). Past the TTL the other members no
// longer count this one, and its leases have lapsed: a member cut off.
func (n *Node) SinceHeartbeat() time.Duration {
	return time.Since(n.start) - time.Duration(n.beat.Load())
}

// Drain makes this member give its partitions up (each once its work on it
// stopped, so its next owner takes it at once) and take none, while it
// stays up: before maintenance. The others share them as if it had left.
func (n *Node) Drain() { n.draining.Store(true) }

// Draining reports whether Drain was called.
func (n *Node) Draining() bool { return n.draining.Load() }

// Partitions is how many partitions the stream has.
func (n *Node) Partitions() int { return n.opts.Partitions }

// TTL is how long a lease or a membership outlives its last renewal.
func (n *Node) TTL() time.Duration { return n.opts.TTL }

// ID is this member's name.
func (n *Node) ID() string { return n.opts.Member }

// Assign says which member should own each partition: rendezvous (highest
// random weight) hashing with bounded loads — each partition goes to the
// member that scores highest for it among those not yet holding their share
// (parts/members, rounded up). Every member computes the same answer from
// the same member list; a member joining or leaving moves about its share,
// not everything; and no member is left idle while another holds twice its
// share, as plain rendezvous hashing allows.
func Assign(parts int, members []string) []string {
	out := make([]string, parts)
	if len(members) == 0 {
		return out
	}
	members = slices.Clone(members)
	slices.Sort(members)
	share := (parts + len(members) - 1) / len(members)
	load := make(map[string]int, len(members))
	order := make([]string, len(members))
	for p := range parts {
		copy(order, members)
		slices.SortStableFunc(order, func(a, b string) int {
			sa, sb := score(a, p), score(b, p)
			switch {
			case sa > sb:
				return -1
			case sa < sb:
				return 1
			}
			return 0
		})
		for _, m := range order {
			if load[m] < share {
				out[p] = m
				load[m]++
				break
			}
		}
	}
	return out
}

func score(member string, p int) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s\x00%d", member, p)
	return mix(h.Sum64())
}

// mix is splitmix64's finalizer: FNV alone leaves names that differ in one
// character with close scores, and one member would win most partitions.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
