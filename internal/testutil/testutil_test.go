package testutil

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestRunJetStreamServer(t *testing.T) {
	s := RunJetStreamServer(t)
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(context.Background()); err != nil {
		t.Fatalf("JetStream not enabled: %v", err)
	}
}

func TestCheckFor(t *testing.T) {
	n := 0
	CheckFor(t, time.Second, time.Millisecond, func() error {
		if n++; n < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	if n != 3 {
		t.Fatalf("f called %d times, want 3", n)
	}
}
