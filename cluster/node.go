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
	// Reindexing, when set, lists the partitions this member owns but
	// does not hold every record of yet (it says so in its heartbeats: a
	// member that held one before drops its copy once its new owner has
	// it in full).
	Reindexing func() []int
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
	// Reindexing are the partitions of Owned it is still indexing.
	Reindexing []int `json:"reindexing,omitempty"`
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

	shards []jetstream.KeyValue // Shards lease and heartbeat buckets
	js     jetstream.JetStream
	*Claims
	*State

	beat     atomic.Int64 // since start (monotonic), of the last heartbeat a majority of shards stored
	draining atomic.Bool
	failures [nOps]atomic.Int64
	spreadAt time.Duration // since start, of the last look at the shards' leaders

	mu    sync.Mutex
	held  map[int]*Lease
	live  []Member // as of the last heartbeat
	moves int      // leases acquired and given up, for /metrics

	// seen is when each other member was last seen live and not
	// draining (since start): step's only caller, Run, owns it.
	seen map[string]time.Duration
}

// The KV requests counted when they fail (Failures).
const (
	OpHeartbeat = iota // a heartbeat not stored in a shard
	OpList             // a shard's members not read
	OpAcquire          // a lease not created in a shard (not one held by another)
	OpRenew            // a lease not renewed in a shard (not one taken by another)
	OpRelease          // a lease not deleted in a shard
	nOps
)

// OpNames name the operations of Failures, for metrics.
var OpNames = [nOps]string{"heartbeat", "list", "acquire", "renew", "release"}

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
	shards, findings, state, err := buckets(ctx, js, o.Replicas, o.SetReplicas, o.TTL)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	n := &Node{opts: o, log: o.Log, start: now, tick: o.TTL / 5, js: js,
		nonce:  o.Member + "@" + strconv.FormatInt(now.UnixNano(), 36),
		shards: shards, held: map[int]*Lease{}, seen: map[string]time.Duration{},
		Claims: newClaims(findings, o.Member), State: &State{kv: state}}
	return n, nil
}

// Lease is this member's hold on one partition: its key in a majority of
// the shards.
type Lease struct {
	Partition int
	Epoch     uint64 // the highest KV revision of the creates that took it

	n      *Node
	mu     sync.Mutex
	rev    [Shards]uint64        // per shard, the last revision written; 0: not held there
	until  [Shards]time.Duration // per shard, since n.start (monotonic): held there before
	timer  *time.Timer           // cancels the work when the lease's deadline passes
	over   bool                  // it did: a late renewal must not revive a lease nobody works on
	cancel context.CancelFunc
	done   chan struct{}
}

// deadline is when the quorum-th latest of the shards' deadlines passes.
func (l *Lease) deadline() time.Duration {
	u := l.until
	slices.Sort(u[:])
	return u[Shards-quorum]
}

// Valid reports whether the lease is certainly still held: the server
// cannot have expired it in a majority of the shards yet.
func (l *Lease) Valid() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return !l.over && time.Since(l.n.start) < l.deadline()
}

// extend records a write of revision rev in shard k that succeeded: held
// there until sent (when it was sent) plus the TTL, less a margin for the
// server's and our timers.
func (l *Lease) extend(k int, rev uint64, sent time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.over {
		return // the next round sees it invalid and lets it go
	}
	l.rev[k] = rev
	l.until[k] = max(l.until[k], sent+l.n.opts.TTL-l.n.tick)
	left := l.deadline() - time.Since(l.n.start)
	if l.timer == nil {
		l.timer = time.AfterFunc(left, l.expire)
	} else {
		l.timer.Reset(left)
	}
}

// drop records that shard k holds another member's key.
func (l *Lease) drop(k int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.rev[k], l.until[k] = 0, 0
}

// revs are the revisions written, per shard.
func (l *Lease) revs() [Shards]uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.rev
}

// expire stops the work on the lease the moment it is no longer certainly
// held, not at the next round.
func (l *Lease) expire() {
	l.mu.Lock()
	left := l.deadline() - time.Since(l.n.start)
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
	if l.timer != nil {
		l.timer.Stop()
	}
	l.mu.Unlock()
	l.cancel()
}

type leaseValue struct {
	Member string `json:"member"`
	Nonce  string `json:"nonce"`
}

func key(p int) string { return "p" + strconv.Itoa(p) }

// memberKey is a member's heartbeat key in a shard (lease keys are p<N>).
func memberKey(id string) string { return "member." + id }

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

// step is one round: renew what is held while the heartbeat is written and
// the members read (a stalled heartbeat must not hold the renewals past
// their deadline), then who should own what, then per partition give up or
// take, all partitions at once (a slow answer for one must not hold the
// others).
func (n *Node) step(ctx context.Context, own OwnFunc) {
	var live []Member
	var wg sync.WaitGroup
	wg.Go(func() { live = n.heartbeat(ctx) })
	n.mu.Lock()
	held := make([]*Lease, 0, len(n.held))
	for _, l := range n.held {
		held = append(held, l)
	}
	n.mu.Unlock()
	for _, l := range held {
		if l.Valid() {
			wg.Go(func() { n.renew(ctx, l) })
		}
	}
	wg.Wait()
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
	if seen && len(live) > 0 && live[0].ID == n.opts.Member {
		n.maybeSpread(ctx) // one member looks after the shards' leaders
	}
	// Members started together see each other within a round or two:
	// taking partitions before then would index some twice as they move.
	settling := !seen || time.Since(n.start) < 2*n.tick
	owners := Assign(n.opts.Partitions, ids)
	kept := n.keptOwners(ids, owners)
	for p := range n.opts.Partitions {
		mine := owners[p] == n.opts.Member
		n.mu.Lock()
		l := n.held[p]
		n.mu.Unlock()
		switch {
		case l != nil && !l.Valid():
			n.lost(l, "not renewed in time")
		case l != nil && !mine && kept[p] != n.opts.Member:
			wg.Go(func() { n.release(l) })
		case l == nil && mine && !settling && ctx.Err() == nil:
			wg.Go(func() { n.acquire(ctx, p, own) })
		}
	}
	wg.Wait()
}

// keptOwners is whom each partition would go to if the members seen
// within the last TTL that are missing now were still there. A partition
// is given up only when neither this nor the present members make it
// ours: a member whose heartbeat lapsed a moment (its connection moving
// off a frozen server, its leases still renewed) must not make the others
// hand partitions between themselves and back when it reappears (each
// move stops a partition for a moment; TestMissingMemberMovesNothing).
// Nothing waits on this: what a member gone for good held is taken by
// its present owner as soon as its lease lapses, only the survivors'
// rebalancing among themselves comes a TTL later.
func (n *Node) keptOwners(ids, owners []string) []string {
	now := time.Since(n.start)
	all := slices.Clone(ids)
	for id, at := range n.seen {
		switch {
		case now-at > n.opts.TTL:
			delete(n.seen, id)
		case !slices.Contains(ids, id):
			all = append(all, id)
		}
	}
	for _, id := range ids {
		if id != n.opts.Member {
			n.seen[id] = now
		}
	}
	if len(all) == len(ids) {
		return owners // nobody missing: the present members' answer
	}
	return Assign(n.opts.Partitions, all)
}

// attempt bounds one KV request: half a round, retried (try) while the
// round lasts, so that a request lost on a connection that went dead, or
// queued behind a server that froze, is sent again on the connection that
// replaced it rather than waited for.
func (n *Node) attempt() time.Duration { return max(n.tick/2, 100*time.Millisecond) }

// try runs f with a fresh timeout until it succeeds, says to stop
// (done), or a round has passed.
func (n *Node) try(ctx context.Context, f func(ctx context.Context) (done bool, err error)) error {
	end := time.Now().Add(n.tick)
	for {
		cctx, cancel := context.WithTimeout(ctx, n.attempt())
		done, err := f(cctx)
		cancel()
		if err == nil || done || ctx.Err() != nil || time.Now().After(end) {
			return err
		}
	}
}

func (n *Node) fail(op int) { n.failures[op].Add(1) }

// Failures counts the KV requests that failed since start, by operation
// (OpNames), each shard's request once however often it was tried.
func (n *Node) Failures() [nOps]int64 {
	var out [nOps]int64
	for i := range out {
		out[i] = n.failures[i].Load()
	}
	return out
}

// heartbeat writes this member's entry in every shard and reads the live
// members: those present in any shard that answered.
func (n *Node) heartbeat(ctx context.Context) []Member {
	me := Member{ID: n.opts.Member, HTTP: n.opts.HTTP, Owned: n.Owned(), Since: n.start, Draining: n.draining.Load()}
	if n.opts.Reindexing != nil {
		me.Reindexing = n.opts.Reindexing()
	}
	b, _ := json.Marshal(me)
	sent := time.Since(n.start)
	var (
		mu       sync.Mutex
		stored   int
		answered int
		byID     = map[string]Member{}
		wg       sync.WaitGroup
	)
	for k, kv := range n.shards {
		wg.Go(func() {
			err := n.try(ctx, func(ctx context.Context) (bool, error) {
				_, err := kv.Put(ctx, memberKey(n.opts.Member), b)
				return false, err
			})
			if err != nil {
				if ctx.Err() == nil {
					n.fail(OpHeartbeat)
					n.log.Debug("cluster heartbeat not stored", "shard", k, "err", err)
				}
			} else {
				mu.Lock()
				stored++
				mu.Unlock()
			}
			var got []Member
			err = n.try(ctx, func(ctx context.Context) (bool, error) {
				got = got[:0]
				lister, err := kv.ListKeysFiltered(ctx, memberKey(">"))
				if err != nil {
					return false, err
				}
				for key := range lister.Keys() {
					e, err := kv.Get(ctx, key)
					if err != nil {
						continue // expired between the two calls
					}
					var m Member
					if json.Unmarshal(e.Value(), &m) == nil && m.ID != "" {
						got = append(got, m)
					}
				}
				return false, ctx.Err()
			})
			if err != nil {
				if ctx.Err() == nil {
					n.fail(OpList)
				}
				return
			}
			mu.Lock()
			defer mu.Unlock()
			answered++
			for _, m := range got {
				byID[m.ID] = m
			}
		})
	}
	wg.Wait()
	if stored >= quorum {
		n.beat.Store(int64(sent))
	} else if ctx.Err() == nil {
		n.log.Warn("cluster heartbeat failed", "stored_in", stored, "shards", Shards)
	}
	if answered == 0 {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.live // keep the last view rather than drop everyone
	}
	live := make([]Member, 0, len(byID))
	for _, m := range byID {
		live = append(live, m)
	}
	slices.SortFunc(live, func(a, b Member) int { return strings.Compare(a.ID, b.ID) })
	n.mu.Lock()
	n.live = live
	n.mu.Unlock()
	return live
}

// takeShard creates partition p's key in shard k, or finds it ours (a
// create that timed out may have been stored): its revision; 0 and no
// error when another member's key is there.
func (n *Node) takeShard(ctx context.Context, k, p int, val []byte) (uint64, error) {
	var rev uint64
	err := n.try(ctx, func(ctx context.Context) (bool, error) {
		var err error
		rev, err = n.shards[k].Create(ctx, key(p), val)
		if !isConflict(err) {
			return false, err
		}
		e, gerr := n.shards[k].Get(ctx, key(p))
		if gerr != nil {
			return false, gerr // expired meanwhile: create it again
		}
		var v leaseValue
		if json.Unmarshal(e.Value(), &v) == nil && v.Nonce == n.nonce {
			rev = e.Revision()
		} else {
			rev = 0
		}
		return true, nil
	})
	return rev, err
}

// acquire takes partition p if a majority of the shards have no key of
// another member for it, and starts own on it; short of a majority it
// deletes what it created, so that another member gets one.
func (n *Node) acquire(ctx context.Context, p int, own OwnFunc) {
	val, _ := json.Marshal(leaseValue{Member: n.opts.Member, Nonce: n.nonce})
	sent := time.Since(n.start)
	var revs [Shards]uint64
	var wg sync.WaitGroup
	for k := range n.shards {
		wg.Go(func() {
			rev, err := n.takeShard(ctx, k, p, val)
			if err != nil && ctx.Err() == nil {
				n.fail(OpAcquire)
				n.log.Debug("cluster lease not created in a shard", "partition", p, "shard", k, "err", err)
			}
			revs[k] = rev
		})
	}
	wg.Wait()
	got := 0
	var epoch uint64
	for _, r := range revs {
		if r != 0 {
			got++
			epoch = max(epoch, r)
		}
	}
	if got < quorum {
		if got > 0 {
			n.deleteShards(p, revs)
		}
		return
	}
	wctx, stop := context.WithCancel(context.Background())
	l := &Lease{Partition: p, Epoch: epoch, n: n, cancel: stop, done: make(chan struct{})}
	for k, r := range revs {
		if r != 0 {
			l.extend(k, r, sent)
		}
	}
	n.mu.Lock()
	n.held[p] = l
	n.moves++
	n.mu.Unlock()
	n.log.Info("partition taken", "partition", p, "epoch", epoch, "shards", got)
	go func() {
		defer close(l.done)
		own(wctx, l)
	}()
}

// renew extends l in every shard it holds it in, and takes it again in
// the shards where its key expired (a shard whose leader was frozen);
// another member's key in enough shards means it took the partition.
func (n *Node) renew(ctx context.Context, l *Lease) {
	val, _ := json.Marshal(leaseValue{Member: n.opts.Member, Nonce: n.nonce})
	revs := l.revs()
	var mu sync.Mutex
	others := 0
	var wg sync.WaitGroup
	for k, kv := range n.shards {
		wg.Go(func() {
			sent := time.Since(n.start)
			if revs[k] == 0 {
				rev, err := n.takeShard(ctx, k, l.Partition, val)
				switch {
				case err == nil && rev != 0:
					l.extend(k, rev, sent)
				case err == nil:
					mu.Lock()
					others++
					mu.Unlock()
				}
				return
			}
			var rev uint64
			var taken bool
			err := n.try(ctx, func(ctx context.Context) (bool, error) {
				var err error
				rev, err = kv.Update(ctx, key(l.Partition), val, revs[k])
				if !isConflict(err) {
					return false, err
				}
				// Ours still if an earlier renewal that timed out was stored.
				e, gerr := kv.Get(ctx, key(l.Partition))
				var v leaseValue
				switch {
				case errors.Is(gerr, jetstream.ErrKeyNotFound):
					rev, taken = 0, false // expired: created again next round
				case gerr != nil:
					return false, gerr
				case json.Unmarshal(e.Value(), &v) == nil && v.Nonce == n.nonce:
					rev = e.Revision()
				default:
					rev, taken = 0, true
				}
				return true, nil
			})
			switch {
			case err == nil && rev != 0:
				l.extend(k, rev, sent)
			case err == nil:
				l.drop(k)
				if taken {
					mu.Lock()
					others++
					mu.Unlock()
				}
			case ctx.Err() == nil:
				n.fail(OpRenew)
				n.log.Debug("cluster lease not renewed in a shard", "partition", l.Partition, "shard", k, "err", err)
			}
		})
	}
	wg.Wait()
	if others > Shards-quorum {
		n.lost(l, "taken by another member")
	}
}

// lost stops processing l at once; the lease is no longer ours to delete.
func (n *Node) lost(l *Lease, why string) {
	l.stop()
	n.mu.Lock()
	if n.held[l.Partition] == l {
		delete(n.held, l.Partition)
		n.moves++
	}
	n.mu.Unlock()
	n.log.Warn("partition lost", "partition", l.Partition, "epoch", l.Epoch, "why", why)
}

// release stops processing l, waits until it has stopped, then deletes
// the lease so its next owner can take it at once.
func (n *Node) release(l *Lease) {
	l.stop()
	<-l.done
	n.mu.Lock()
	if n.held[l.Partition] == l {
		delete(n.held, l.Partition)
		n.moves++
	}
	n.mu.Unlock()
	if n.deleteShards(l.Partition, l.revs()) {
		n.log.Info("partition released", "partition", l.Partition, "epoch", l.Epoch)
	}
}

// deleteShards deletes partition p's key where revs says it is ours;
// false if one delete failed (that key expires on its own).
func (n *Node) deleteShards(p int, revs [Shards]uint64) bool {
	ctx, cancel := context.WithTimeout(context.Background(), n.opts.TTL)
	defer cancel()
	var failed atomic.Bool
	var wg sync.WaitGroup
	for k, r := range revs {
		if r == 0 {
			continue
		}
		wg.Go(func() {
			err := n.try(ctx, func(ctx context.Context) (bool, error) {
				err := n.shards[k].Delete(ctx, key(p), jetstream.LastRevision(r))
				return isConflict(err), err // renewed by nobody since: gone, or another's
			})
			if err != nil && !isConflict(err) {
				failed.Store(true)
				n.fail(OpRelease)
				n.log.Warn("partition released; its lease expires on its own", "partition", p, "shard", k, "err", err)
			}
		})
	}
	wg.Wait()
	return !failed.Load()
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
	for _, kv := range n.shards {
		wg.Go(func() {
			if err := kv.Delete(ctx, memberKey(n.opts.Member)); err != nil {
				n.log.Warn("leaving the cluster; the membership expires on its own", "err", err)
			}
		})
	}
	wg.Wait()
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
