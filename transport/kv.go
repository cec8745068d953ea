package transport

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// EnsureKeyValue returns the KV bucket cfg.Bucket, creating it, or updating
// it when its config differs from cfg. Unlike jetstream's
// CreateOrUpdateKeyValue, which starts with an update, it suits analyzers
// starting together on a cluster: concurrent CreateOrUpdate calls of one
// new bucket were left unanswered by JetStream until their deadline (all
// of them, at times; nats-server 2.15). Here a create of an identical
// bucket succeeds, each request is bounded (RequestTimeout), and one left
// unanswered is asked again until ctx ends.
func EnsureKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	return UntilAnswered(ctx, func() (jetstream.KeyValue, error) { return ensureKeyValue(ctx, js, cfg) })
}

func ensureKeyValue(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	kv, err := js.CreateKeyValue(rctx, cfg)
	cancel()
	if errors.Is(err, jetstream.ErrBucketExists) {
		// There with another config (an upgrade, other flags).
		rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
		kv, err = js.UpdateKeyValue(rctx, cfg)
		cancel()
	}
	if err != nil {
		return nil, fmt.Errorf("kv bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}
