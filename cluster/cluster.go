// Package cluster is how several analyzers share one log stream on a NATS
// cluster without consensus of their own: everything that must be agreed on
// is a compare-and-set on a JetStream KV bucket.
//
//   - Leases and heartbeats live in Shards buckets whose entries expire,
//     each led (spread.go) by another NATS server: a frozen or lost leader
//     stalls the writes of one shard until JetStream elects another (4-9 s),
//     and the others go on.
//   - Members heartbeat into every shard; the live members are those
//     present in any shard that answers.
//   - Each partition of the stream is owned through a quorum lease: a KV
//     key created by its owner in a majority of the shards, renewed there by
//     update-with-revision, and expiring when renewals stop. Two members
//     cannot both hold a majority. The highest revision of the creates is
//     the lease's epoch. Who should own what is rendezvous hashing over the
//     live members, so partitions move when a member joins, leaves or stops
//     heartbeating.
//   - An owner stops processing a partition before its lease can expire on
//     the server: per shard, its local deadline is the time it sent the last
//     successful renewal plus the TTL, less a margin; the lease is valid
//     while a majority of the shards' deadlines have not passed.
//   - A finding is announced only by whoever wins a compare-and-set of its
//     next revision in the findings bucket (claims.go): across all members
//     and replays, no (id, revision) is announced twice and revisions never
//     skip.
//   - Per partition, where its live launches began (the rule engine's
//     checkpoint) is kept in a bucket, so a new owner replays from there
//     rather than from the start of the stream (State).
package cluster

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/transport"
)

// Bucket names: LeasesBucket is the first lease shard, the others add _1,
// _2 (ShardBucket).
const (
	LeasesBucket   = "faultline_leases"
	FindingsBucket = "faultline_findings"
	StateBucket    = "faultline_state"
)

// DefaultTTL is how long a lease or a membership outlives its last renewal.
const DefaultTTL = 5 * time.Second

// Shards is how many buckets hold the leases and heartbeats; a lease needs
// a majority of them. Three: one per server of the usual three-server
// cluster, so that one server frozen stalls one shard.
const Shards = 3

const quorum = Shards/2 + 1

// ShardBucket names lease shard k.
func ShardBucket(k int) string {
	if k == 0 {
		return LeasesBucket
	}
	return LeasesBucket + "_" + strconv.Itoa(k)
}

// buckets creates (or finds) the lease shards, the findings and the state
// buckets, with replicas copies each when created (or set).
func buckets(ctx context.Context, js jetstream.JetStream, replicas int, set bool, ttl time.Duration) (shards []jetstream.KeyValue, findings, state jetstream.KeyValue, err error) {
	mk := func(cfg jetstream.KeyValueConfig) jetstream.KeyValue {
		if err != nil {
			return nil
		}
		cfg.Replicas = max(replicas, 1)
		if !set {
			cfg.Replicas = existingReplicas(ctx, js, cfg.Bucket, cfg.Replicas)
		}
		cfg.Storage = jetstream.FileStorage
		var kv jetstream.KeyValue
		// Members start together: transport's create, not
		// CreateOrUpdate, which JetStream can leave unanswered then.
		kv, err = transport.EnsureKeyValue(ctx, js, cfg)
		return kv
	}
	for k := range Shards {
		shards = append(shards, mk(jetstream.KeyValueConfig{Bucket: ShardBucket(k), TTL: ttl,
			Description: "Faultline partition leases and analyzer heartbeats, shard " + strconv.Itoa(k)}))
	}
	findings = mk(jetstream.KeyValueConfig{Bucket: FindingsBucket, History: 1, Description: "Faultline findings, by id, as last announced"})
	state = mk(jetstream.KeyValueConfig{Bucket: StateBucket, History: 1, Description: "Faultline per-partition replay checkpoints"})
	return
}

// existingReplicas is how many copies bucket keeps if it exists, else def.
func existingReplicas(ctx context.Context, js jetstream.JetStream, bucket string, def int) int {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return def
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return def
	}
	if bs, ok := st.(*jetstream.KeyValueBucketStatus); ok && bs.StreamInfo() != nil {
		return max(bs.StreamInfo().Config.Replicas, 1)
	}
	return def
}

// isConflict reports a lost compare-and-set.
func isConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}
