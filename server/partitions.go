package server

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/faultline/faultline/cluster"
	"github.com/faultline/faultline/internal/atomicfile"
	"github.com/faultline/faultline/lane"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/transport"
)

// Scale-out. On a cluster the stream is partitioned by cluster name (a
// subject transform on the server: one cluster's facts meet in one
// partition), and each analyzer owns some partitions through leases
// (package cluster). Per owned partition it runs a lane: an ordered
// consumer of the partition, its own rule engine, and this analyzer's
// index. Nothing is acknowledged: where a lane starts is this analyzer's
// own record of what its index holds (partitions.json), and where its
// engine's live launches began, kept in KV by whoever owned it last.
//
// A partition taken over is replayed from the earlier of the two: records
// before the index's mark are only observed, records before the engine's
// checkpoint only indexed. Findings go through the findings bucket's
// compare-and-set, so the replay announces nothing already announced.

// startCluster makes the partitioned stream and joins the cluster; the
// function it returns owns partitions until ctx is done, and stop stops
// the announcer and the committer.
func (s *server) startCluster(ctx context.Context, js jetstream.JetStream, natsURL, httpAddr string) (consume func(context.Context) error, stop func(), err error) {
	c := s.cfg.Cluster
	var parts, replicas int
	var info *jetstream.StreamInfo
	st, err := s.waitStream(ctx, natsURL, func(ctx context.Context) (jetstream.Stream, error) {
		var err error
		if parts, err = s.partitionCount(ctx, js); err != nil {
			return nil, err
		}
		// Asked again at every try: an embedded cluster knows its size
		// once it has elected its leader, which the stream needs too.
		replicas = s.replicas()
		so := s.cfg.Stream
		so.Replicas = s.cfg.Cluster.Replicas // explicit only: applied to an existing stream too
		st, err := transport.EnsurePartitionedStream(ctx, s.nc, js, so, parts, replicas, s.log)
		if err == nil {
			// Created by another member a moment ago, it may not be
			// placed yet.
			info, err = st.Info(ctx)
		}
		return st, err
	})
	if err != nil {
		return nil, nil, err
	}
	s.streamCreated = info.Created
	if err := s.openOutboxes(ctx, js); err != nil {
		return nil, nil, err
	}
	advertise := c.Advertise
	if advertise == "" && httpAddr != "" {
		advertise = "http://" + httpAddr
	}
	opts := cluster.Options{Member: s.memberName(), HTTP: advertise, Partitions: parts, Replicas: replicas,
		SetReplicas: c.Replicas > 0, TTL: c.LeaseTTL, Log: s.log, Reindexing: s.reindexingParts}
	var node *cluster.Node
	for {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		node, err = cluster.Join(cctx, js, opts)
		if err == nil {
			err = node.Watch(ctx)
		}
		cancel()
		if err == nil {
			break
		}
		s.log.Warn("joining the cluster, retrying", "err", err)
		if sleepCtx(ctx, time.Second); ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
	}
	s.progress = loadProgress(filepath.Join(s.cfg.DataDir, progressName), info.Created, s.log)
	// The findings bucket is the ledger: its compare-and-set makes one
	// member announce each version.
	stop = s.startAnnouncer(ctx, node.Claims, true)
	s.node.Store(node) // the HTTP handlers read it from now on
	s.useClusterSearch(node, st, parts)
	s.log.Info("cluster member", "member", opts.Member, "partitions", parts, "replicas", replicas, "http", advertise)
	return func(ctx context.Context) error {
		node.Run(ctx, func(ctx context.Context, l *cluster.Lease) { s.own(ctx, st, l) })
		return nil
	}, stop, nil
}

// partitionCount is how many partitions the stream has: an existing
// stream's own count, which every member must share (a member given
// another would repartition the stream under the others' leases), else
// --partitions, else DefaultPartitions.
func (s *server) partitionCount(ctx context.Context, js jetstream.JetStream) (int, error) {
	want := s.cfg.Cluster.Partitions
	if want <= 0 {
		want = DefaultPartitions
	}
	st, err := js.Stream(ctx, transport.StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return want, nil
	}
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", transport.StreamName, err)
	}
	n, ok := transport.Partitions(st.CachedInfo().Config)
	if !ok {
		return want, nil // a single-machine stream, partitioned now
	}
	if s.cfg.Cluster.Partitions > 0 && n != want {
		s.log.Warn("the log stream has another partition count than --partitions; using the stream's, as the other analyzers do (to change it, edit the stream's subject transform, then restart every analyzer)",
			"stream_partitions", n, "flag", want)
	}
	return n, nil
}

// replicas is how many copies of the stream and buckets to keep: as set,
// else as many as the NATS cluster has servers (the embedded one's
// JetStream cluster, or the servers the client knows of), up to 3.
func (s *server) replicas() int {
	if r := s.cfg.Cluster.Replicas; r > 0 {
		return r
	}
	n := 1
	switch {
	case s.ns != nil:
		// --nats-routes lists every server, this one's included; the
		// JetStream cluster's own count can be one short for a moment.
		n = max(embeddedClusterSize(s.ns), len(s.cfg.Cluster.Routes))
	case s.cfg.NATS.URL != "":
		n = max(len(strings.Split(s.cfg.NATS.URL, ",")), 1+len(s.nc.DiscoveredServers()))
	}
	return min(n, 3)
}

// memberName is this analyzer's name among its peers: --member, else the
// embedded NATS server's (unique in its cluster), else the host's and a
// digest of the data dir.
func (s *server) memberName() string {
	if m := s.cfg.Cluster.Member; m != "" {
		return transport.Token(m)
	}
	if s.ns != nil {
		return transport.Token(s.ns.Name())
	}
	host, _ := os.Hostname()
	abs, _ := filepath.Abs(s.cfg.DataDir)
	sum := sha256.Sum256([]byte(abs))
	return transport.Token(host) + "-" + hex.EncodeToString(sum[:3])
}

// own runs partition l.Partition for as long as the lease holds: a reader
// that stops for any other reason (a NATS server lost under the consumer,
// an iterator closed by the client) is started again, so that a partition
// is never leased with nobody reading it.
func (s *server) own(ctx context.Context, st jetstream.Stream, l *cluster.Lease) {
	for {
		err := s.runPartition(ctx, st, l)
		if ctx.Err() != nil || !l.Valid() {
			return
		}
		s.log.Warn("partition reader stopped; starting it again", "partition", l.Partition, "err", err)
		sleepCtx(ctx, time.Second)
	}
}

// runPartition replays and then follows one partition until ctx is done or
// the lease is no longer certainly held.
func (s *server) runPartition(ctx context.Context, st jetstream.Stream, l *cluster.Lease) error {
	pl, occ, err := s.openLane(ctx, st, l)
	if err != nil {
		return err
	}
	s.lanes.add(pl)
	defer s.lanes.remove(pl)
	// Given up (another member's turn, or shutdown): its next owner
	// starts where its launches began, as of now.
	defer s.saveLane(context.WithoutCancel(ctx), pl)
	part := l.Partition
	src, err := openOrdered(ctx, st, occ, l.Valid, func(seq uint64) {
		s.progress.set(part, seq) // called after the index flushed it
	})
	if err != nil {
		return fmt.Errorf("partition %d: %w", part, err)
	}
	defer src.Close()
	if err := pl.Follow(ctx, src); err != nil && !errors.Is(err, lane.ErrStopped) {
		return fmt.Errorf("partition %d: %w", part, err)
	}
	return nil
}

// partLane is a partition's lane with its lease and the checkpoint last
// saved to KV.
type partLane struct {
	*lane.Lane
	lease  *cluster.Lease
	saveMu sync.Mutex
	saved  rule.Checkpoint // under saveMu
	// target is the partition's last message when the lane opened: until
	// the index holds it, the partition is being re-indexed (a search
	// says so).
	target uint64
}

// openLane prepares partition p's lane: a new engine restored from the
// partition's checkpoint, and where the replay starts.
func (s *server) openLane(ctx context.Context, st jetstream.Stream, l *cluster.Lease) (*partLane, jetstream.OrderedConsumerConfig, error) {
	p := l.Partition
	filter := jetstream.OrderedConsumerConfig{FilterSubjects: []string{transport.PartitionFilter(p)}}
	occ := filter
	info, err := st.Info(ctx)
	if err != nil {
		return nil, occ, fmt.Errorf("partition %d: stream info: %w", p, err)
	}
	engine := s.newEngine(s.running.Rules())
	first, last := max(info.State.FirstSeq, 1), info.State.LastSeq
	node := s.node.Load()
	b, err := node.State.Load(ctx, p)
	if err != nil {
		return nil, occ, err
	}
	var cp rule.Checkpoint
	if b != nil {
		cp = s.parseCheckpoint(b, info.Created, "partition "+strconv.Itoa(p))
	}
	from := posSeq(cp.From())
	if len(cp) > 0 && from > last {
		s.log.Warn("partition checkpoint beyond the stream's end; replaying the whole partition", "partition", p, "from_seq", from, "last_seq", last)
		cp = nil
	}
	if len(cp) > 0 {
		engine.Restore(cp, node.Findings())
	} else {
		from = first
	}
	s.dropMu.Lock() // not while a copy of p is dropped (dropMoved)
	s.progress.open(p)
	r := lane.Resume{Checkpoint: cp, IndexFrom: s.progress.get(p) + 1, ReplayTo: last}
	s.dropMu.Unlock()
	cfg := s.laneConfig(p, engine, lane.NewSeen(1<<16))
	cfg.Reopen = func(ctx context.Context, from uint64) (lane.Source, error) {
		return openOrdered(ctx, st, fromSeq(filter, from), nil, nil)
	}
	var target uint64
	if m, err := st.GetLastMsgForSubject(ctx, transport.PartitionFilter(p)); err == nil {
		target = m.Sequence
	} else if !errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, occ, fmt.Errorf("partition %d: last message: %w", p, err)
	}
	pl := &partLane{Lane: lane.New(cfg, r), lease: l, saved: cp, target: target}
	start := max(min(from, r.IndexFrom), first)
	occ = fromSeq(occ, start)
	s.log.Info("partition replay", "partition", p, "epoch", l.Epoch, "from_seq", start, "engine_from", from,
		"index_from", r.IndexFrom, "last_seq", last, "checkpoint_clusters", len(cp))
	return pl, occ, nil
}

// saveLanes records, after an index flush, how far the index got in each
// partition (this analyzer's partitions.json) and each lane engine's
// checkpoint (in KV, while the lease holds).
func (s *server) saveLanes(ctx context.Context) {
	for _, pl := range s.lanes.all() {
		s.saveLane(ctx, pl)
	}
	if err := s.progress.save(); err != nil {
		s.log.Warn("partition progress not saved; the next start indexes some records again", "err", err)
	}
}

// saveLane writes pl's engine checkpoint to KV if it changed, while its
// lease holds. Any position is safe to write: the records are in the
// stream whether indexed yet or not.
func (s *server) saveLane(ctx context.Context, pl *partLane) {
	pl.saveMu.Lock()
	defer pl.saveMu.Unlock()
	cp := pl.Checkpoint()
	if len(cp) == 0 || (pl.saved != nil && cp.Equal(pl.saved)) || !pl.lease.Valid() {
		return
	}
	b, _ := json.Marshal(checkpointFile{Stream: s.streamCreated, RecordBits: recordBits, Clusters: cp})
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := s.node.Load().State.Save(cctx, pl.Part(), b); err != nil {
		s.log.Warn("partition checkpoint not saved; its next owner replays more", "partition", pl.Part(), "err", err)
		return
	}
	pl.saved = cp
}

// laneSet are the partition lanes running now.
type laneSet struct {
	mu    sync.Mutex
	lanes map[int]*partLane
}

func (ls *laneSet) add(l *partLane) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.lanes == nil {
		ls.lanes = map[int]*partLane{}
	}
	ls.lanes[l.Part()] = l
}

func (ls *laneSet) get(p int) *partLane {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	return ls.lanes[p]
}

func (ls *laneSet) remove(l *partLane) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.lanes[l.Part()] == l {
		delete(ls.lanes, l.Part())
	}
}

func (ls *laneSet) all() []*partLane {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	out := make([]*partLane, 0, len(ls.lanes))
	for _, l := range ls.lanes {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *partLane) int { return a.Part() - b.Part() })
	return out
}

// allLanes are the lanes running: the whole stream's, or each partition's.
func (s *server) allLanes() []*lane.Lane {
	if s.node.Load() == nil {
		if s.single == nil {
			return nil
		}
		return []*lane.Lane{s.single}
	}
	var out []*lane.Lane
	for _, pl := range s.lanes.all() {
		out = append(out, pl.Lane)
	}
	return out
}

// engines are the rule engines: the running rules first (every loaded rule
// has a metric), then each lane's (for /metrics).
func (s *server) engines() []*rule.Engine {
	out := []*rule.Engine{s.running}
	for _, l := range s.allLanes() {
		out = append(out, l.Engine())
	}
	return out
}

const progressName = "partitions.json"

// progress is, per partition, the last stream sequence this analyzer's
// index holds every record of the partition up to.
type progress struct {
	path string

	mu      sync.Mutex
	file    progressFile
	written progressFile
	dropped map[int]bool // reset, no lane opened since
}

type progressFile struct {
	Stream  time.Time         `json:"stream_created"`
	Indexed map[string]uint64 `json:"indexed"`
}

func loadProgress(path string, created time.Time, log *slog.Logger) *progress {
	p := &progress{path: path, file: progressFile{Stream: created, Indexed: map[string]uint64{}}}
	b, err := os.ReadFile(path)
	if err != nil {
		return p
	}
	var f progressFile
	if err := json.Unmarshal(b, &f); err != nil {
		log.Warn("partition progress unreadable; partitions taken are indexed from their start", "path", path, "err", err)
		return p
	}
	if !f.Stream.Equal(created) || f.Indexed == nil {
		return p // of another stream
	}
	p.file.Indexed = f.Indexed
	return p
}

func (p *progress) get(part int) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.file.Indexed[strconv.Itoa(part)]
}

// reset forgets what the index held of part (its copy dropped), and
// ignores what a lane of it that stopped still reports, until open.
func (p *progress) reset(part int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.file.Indexed, strconv.Itoa(part))
	if p.dropped == nil {
		p.dropped = map[int]bool{}
	}
	p.dropped[part] = true
}

// open is a lane of part starting: what it indexes counts again.
func (p *progress) open(part int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.dropped, part)
}

func (p *progress) set(part int, seq uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped[part] {
		return // a late flush of a lane that stopped: its copy is gone
	}
	k := strconv.Itoa(part)
	p.file.Indexed[k] = max(p.file.Indexed[k], seq)
}

// save writes the file if it changed since the last write.
func (p *progress) save() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.written.Indexed != nil && maps.Equal(p.written.Indexed, p.file.Indexed) {
		return nil
	}
	b, _ := json.Marshal(p.file)
	if err := atomicfile.WriteFile(p.path, b, 0o644); err != nil {
		return err
	}
	p.written = progressFile{Stream: p.file.Stream, Indexed: maps.Clone(p.file.Indexed)}
	return nil
}

// partitionCollector is the cluster's side of /metrics: the partitions
// owned here, each one's lease epoch and lag, and how often leases moved.
// Nothing is exposed on one machine.
type partitionCollector struct {
	s                        *server
	owned, epoch, lag, moves *prometheus.Desc
	// The cluster as this member sees it (its last heartbeat's view).
	members, unowned, beat, connected *prometheus.Desc
	// Re-index progress of the partitions taken, and KV requests failed.
	reindexing, indexed, target, kvFailures *prometheus.Desc
}

func newPartitionCollector(s *server) *partitionCollector {
	return &partitionCollector{s: s,
		owned: prometheus.NewDesc("faultline_partitions_owned",
			"Partitions of the log stream this analyzer owns (holds a valid lease on).", nil, nil),
		epoch: prometheus.NewDesc("faultline_partition_lease_epoch",
			"Epoch of this analyzer's lease on a partition (the highest KV revision of the creates that took it in the lease shards; it grows with new owners).", []string{"partition"}, nil),
		lag: prometheus.NewDesc("faultline_partition_lag_messages",
			"Messages of a partition owned here not yet read (as of the last one read).", []string{"partition"}, nil),
		moves: prometheus.NewDesc("faultline_partition_moves_total",
			"Leases this analyzer took, gave up or lost.", nil, nil),
		members: prometheus.NewDesc("faultline_cluster_members",
			"Live members of the cluster, as of this analyzer's last heartbeat.", nil, nil),
		unowned: prometheus.NewDesc("faultline_cluster_partitions_unowned",
			"Partitions no live member says it owns, as of this analyzer's last heartbeat (a take-over under way: searches say what they lack).", nil, nil),
		beat: prometheus.NewDesc("faultline_cluster_heartbeat_age_seconds",
			"Seconds since this analyzer's last heartbeat that was stored (past the lease TTL it is cut off and owns nothing).", nil, nil),
		connected: prometheus.NewDesc("faultline_nats_connected",
			"1 while this analyzer's NATS connection is up, else 0.", nil, nil),
		reindexing: prometheus.NewDesc("faultline_partition_reindexing",
			"1 while a partition owned here is re-indexed (taken over, its index not up to the message it had last then: searches say it is missing), else 0.", []string{"partition"}, nil),
		indexed: prometheus.NewDesc("faultline_partition_indexed_seq",
			"Stream sequence up to which this analyzer's index holds every record of a partition owned here.", []string{"partition"}, nil),
		target: prometheus.NewDesc("faultline_partition_reindex_target_seq",
			"Stream sequence of a partition's last message when this analyzer took it: re-indexing is done once faultline_partition_indexed_seq reaches it.", []string{"partition"}, nil),
		kvFailures: prometheus.NewDesc("faultline_cluster_kv_failures_total",
			"Requests to the lease shards (NATS KV) that failed, by operation, one per shard's request however often it was tried: heartbeat, list (of the members), acquire, renew, release.", []string{"op"}, nil),
	}
}

func (c *partitionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.owned
	ch <- c.epoch
	ch <- c.lag
	ch <- c.moves
	ch <- c.members
	ch <- c.unowned
	ch <- c.beat
	ch <- c.connected
	ch <- c.reindexing
	ch <- c.indexed
	ch <- c.target
	ch <- c.kvFailures
}

func (c *partitionCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.s.node.Load()
	if n == nil {
		return
	}
	ch <- prometheus.MustNewConstMetric(c.owned, prometheus.GaugeValue, float64(len(n.Owned())))
	ch <- prometheus.MustNewConstMetric(c.moves, prometheus.CounterValue, float64(n.Moves()))
	members := n.Members()
	owned := map[int]bool{}
	for _, m := range members {
		for _, p := range m.Owned {
			owned[p] = true
		}
	}
	for _, p := range n.Owned() { // ours as of now, not of the last heartbeat
		owned[p] = true
	}
	unowned := 0
	for p := range n.Partitions() {
		if !owned[p] {
			unowned++
		}
	}
	connected := 0.0
	if c.s.nc.IsConnected() {
		connected = 1
	}
	ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, float64(len(members)))
	ch <- prometheus.MustNewConstMetric(c.unowned, prometheus.GaugeValue, float64(unowned))
	ch <- prometheus.MustNewConstMetric(c.beat, prometheus.GaugeValue, n.SinceHeartbeat().Seconds())
	ch <- prometheus.MustNewConstMetric(c.connected, prometheus.GaugeValue, connected)
	for p, e := range n.Epochs() {
		ch <- prometheus.MustNewConstMetric(c.epoch, prometheus.GaugeValue, float64(e), strconv.Itoa(p))
	}
	for op, v := range n.Failures() {
		ch <- prometheus.MustNewConstMetric(c.kvFailures, prometheus.CounterValue, float64(v), cluster.OpNames[op])
	}
	for _, l := range c.s.lanes.all() {
		p := strconv.Itoa(l.Part())
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(l.Pending()), p)
		indexed, re := c.s.progress.get(l.Part()), 0.0
		if indexed < l.target {
			re = 1
		}
		ch <- prometheus.MustNewConstMetric(c.reindexing, prometheus.GaugeValue, re, p)
		ch <- prometheus.MustNewConstMetric(c.indexed, prometheus.GaugeValue, float64(indexed), p)
		ch <- prometheus.MustNewConstMetric(c.target, prometheus.GaugeValue, float64(l.target), p)
	}
}
