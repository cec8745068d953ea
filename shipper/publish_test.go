package shipper

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/transport"
)

// A batch handed to Publish is delivered even when the caller's context ends
// right after: that is what happens to the last batch of stdin (its reader
// is done) and to in-flight batches on shutdown, which Wait still lets be
// acknowledged. It was lost when deliveries lived on the caller's context.
func TestPublishOutlivesCaller(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	p, err := Connect(ctx, NATSOptions{URL: s.ClientURL()}, StreamOptions{}, PublisherOptions{}, slog.New(slog.DiscardHandler), NewMetrics(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 50
	var acked atomic.Int32
	for i := range n {
		cctx, stop := context.WithCancel(ctx)
		err := p.Publish(cctx, &batch{subject: transport.LogsSubject("c", "spark-1"), body: []byte("{}\n"), count: 1,
			msgID: fmt.Sprintf("outlive-%d", i), onAck: func() { acked.Add(1) }})
		stop() // the reader is gone
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("wait: %v", err)
	}
	if got := acked.Load(); got != n {
		t.Fatalf("%d of %d batches acknowledged", got, n)
	}
}
