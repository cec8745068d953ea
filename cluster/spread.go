package cluster

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// maybeSpread, at most once a TTL, looks at which NATS server leads each
// lease shard, and when one leads two while another server of theirs leads
// none, asks one of the two to step down in favour of that server: a
// server frozen or lost then stalls one shard, and the leases keep the
// majority of the others. JetStream places leaders as their elections
// fall, two or three shards on one server as often as not. It runs on its
// own, one member at a time (the first of the live members).
func (n *Node) maybeSpread(ctx context.Context) {
	if len(n.shards) < 2 || time.Since(n.start)-n.spreadAt < n.opts.TTL {
		return
	}
	n.spreadAt = time.Since(n.start)
	go n.spread(ctx)
}

func (n *Node) spread(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, n.tick)
	defer cancel()
	leaders := make([]string, len(n.shards))
	streams := make([]string, len(n.shards))
	var peers []string
	for k, kv := range n.shards {
		st, err := kv.Status(ctx)
		if err != nil {
			return // a shard without a leader: elections first
		}
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok || bs.StreamInfo() == nil || bs.StreamInfo().Cluster == nil || bs.StreamInfo().Cluster.Leader == "" {
			return // not clustered, or electing
		}
		ci := bs.StreamInfo().Cluster
		leaders[k], streams[k] = ci.Leader, bs.StreamInfo().Config.Name
		for _, r := range ci.Replicas {
			// Only in a healthy cluster: a server frozen a moment ago
			// may still read current, leads nothing since its shard
			// elected another leader, and must not be given one.
			if !r.Current || r.Offline || r.Active > n.tick {
				return
			}
			if k == 0 {
				peers = append(peers, r.Name)
			}
		}
		if k == 0 {
			peers = append(peers, ci.Leader)
		}
	}
	var idle string
	for _, p := range peers {
		if !slices.Contains(leaders, p) {
			idle = p
			break
		}
	}
	if idle == "" {
		return
	}
	for k, l := range leaders {
		if slices.Index(leaders, l) == k {
			continue // the first shard this server leads keeps it
		}
		body, _ := json.Marshal(map[string]any{"placement": map[string]string{"preferred": idle}})
		prefix := n.js.Options().APIPrefix
		if prefix == "" {
			prefix = jetstream.DefaultAPIPrefix
		} else if !strings.HasSuffix(prefix, ".") {
			prefix += "."
		}
		subj := prefix + "STREAM.LEADER.STEPDOWN." + streams[k]
		if _, err := n.js.Conn().RequestWithContext(ctx, subj, body); err != nil {
			n.log.Debug("lease shard leader not moved", "bucket", ShardBucket(k), "err", err)
			return
		}
		n.log.Info("lease shard leader moved", "bucket", ShardBucket(k), "from", l, "to", idle)
		return // one at a time: the next look sees the new leaders
	}
}
