package transport

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/testutil"
)

// A publisher's batches reach a consumer whole; a corrupt compressed batch
// between them is read as an error that says so, costs nothing else (the
// batches around it are intact), and is acknowledged like any other; a
// batch handed back with an error is delivered again.
func TestPublishConsumeCorruptBatch(t *testing.T) {
	s := testutil.RunJetStreamServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := Connect(ctx, NATSOptions{URL: s.ClientURL()}, StreamOptions{}, PublisherOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	subject := LogsSubject("dgx", "spark-1")
	body, recs := payload(300)
	publish := func(id string) {
		t.Helper()
		if err := p.Publish(ctx, &Message{Subject: subject, Body: body, Count: len(recs), MsgID: id}, nil); err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	}
	publish("a")
	// The same batch with bytes of its compressed payload damaged.
	f, _ := NewFramer(CompressS2)
	bad := f.Append(nil, body)
	for i := 40; i < 80; i++ {
		bad[i] ^= 0xa5
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	if _, err := js.Publish(ctx, subject, bad); err != nil {
		t.Fatal(err)
	}
	publish("b")

	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConsumer(ctx, st, ConsumerOptions{Durable: "test", AckWait: 5 * time.Second, MaxPayload: int(nc.MaxPayload())})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	read := func() (Batch, AckFunc) {
		t.Helper()
		b, ack, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return b, ack
	}
	a, ackA := read()
	if a.Err != nil || len(a.Records) != len(recs) || a.Records[299] != recs[299] || a.Seq != 1 {
		t.Fatalf("first batch: seq %d, %d records, %v", a.Seq, len(a.Records), a.Err)
	}
	x, ackX := read()
	if x.Err == nil || !strings.Contains(x.Err.Error(), "corrupt batch (s2)") || len(x.Records) != 0 || x.Seq != 2 {
		t.Fatalf("corrupt batch: seq %d, %d records, err %v", x.Seq, len(x.Records), x.Err)
	}
	b, ackB := read()
	if b.Err != nil || len(b.Records) != len(recs) || b.Records[0] != recs[0] || b.Seq != 3 {
		t.Fatalf("last batch: seq %d, %d records, %v", b.Seq, len(b.Records), b.Err)
	}
	for _, ack := range []AckFunc{ackA, ackX} {
		if err := ack(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := ackB(ctx, errors.New("index down")); err != nil {
		t.Fatal(err)
	}
	again, ackAgain := read()
	if again.Seq != 3 || len(again.Records) != len(recs) {
		t.Fatalf("after a nak: seq %d, %d records", again.Seq, len(again.Records))
	}
	if err := ackAgain(ctx, nil); err != nil {
		t.Fatal(err)
	}
	testutil.CheckFor(t, 10*time.Second, 50*time.Millisecond, func() error {
		info, err := c.JetStream().Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("%d pending, %d awaiting ack", info.NumPending, info.NumAckPending)
		}
		return nil
	})
}
