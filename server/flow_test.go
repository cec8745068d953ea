package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/testutil"
	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/transport"
)

// Under a backlog larger than serve indexes within the ack wait, messages
// are not redelivered wholesale: serve takes from the stream by bytes, not
// by a thousand messages (780 MB of shipper batches that outlasted the ack
// wait, 81% of all records processed twice or more), and marks the
// messages it holds as in progress.
func TestBacklogIsNotRedelivered(t *testing.T) {
	if testing.Short() {
		t.Skip("indexes 60k records")
	}
	// The ack wait is short for the backlog: 60k records take serve 6-10 s
	// to index here. (At 1 s, a machine at load 17 starved the in-progress
	// marks themselves: 8-18% came back.)
	srv := startServer(t, Config{AckWait: 2 * time.Second})
	nc, err := nats.Connect(srv.addrs.NATS)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	const msgs, per = 60, 1000
	for m := 0; m < msgs; m++ {
		var body []byte
		first := ""
		for i := 0; i < per; i++ {
			r := parsers.Record{Cluster: "dgx", Node: "spark-1", File: "/logs/big.log", FileID: "big", Offset: int64(m*per+i) * 100,
				Line: m*per + i + 1, Text: fmt.Sprintf("2025-01-01 00:00:00 INFO worker step %d of the backlog with some words", m*per+i)}
			r.ID = parsers.RecordID(r.Node, r.FileID, r.Offset)
			if i == 0 {
				first = r.ID
			}
			body = transport.AppendRecord(body, &r)
		}
		msg := &nats.Msg{Subject: transport.LogsSubject("dgx", "spark-1"), Data: body, Header: nats.Header{}}
		msg.Header.Set(transport.HeaderMsgID, transport.MsgID(first, per))
		msg.Header.Set(transport.HeaderCount, strconv.Itoa(per))
		if _, err := js.PublishMsg(context.Background(), msg); err != nil {
			t.Fatal(err)
		}
	}
	testutil.CheckFor(t, 120*time.Second, 100*time.Millisecond, func() error {
		c, err := js.Consumer(context.Background(), transport.StreamName, "analyzer")
		if err != nil {
			return err
		}
		ci := c.CachedInfo()
		if ci.NumPending != 0 || ci.NumAckPending != 0 {
			return fmt.Errorf("consumer: %d pending, %d awaiting ack", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
	_, metrics := get(t, "http://"+srv.addrs.HTTP+"/metrics", "")
	consumed, natsErrors := 0.0, -1.0
	for _, l := range strings.Split(metrics, "\n") {
		if v, ok := strings.CutPrefix(l, "faultline_records_consumed_total "); ok {
			consumed, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(l, "faultline_nats_errors_total "); ok {
			natsErrors, _ = strconv.ParseFloat(v, 64)
		}
	}
	// A slow consumer drops messages on the client side (they come back
	// only after the ack wait): none may happen.
	if natsErrors != 0 {
		t.Errorf("faultline_nats_errors_total = %v, want 0 (no slow-consumer drop)", natsErrors)
	}
	t.Logf("%d records published, %.0f consumed (%.1f%% again)", msgs*per, consumed, 100*(consumed-msgs*per)/(msgs*per))
	if consumed > 1.05*msgs*per {
		t.Errorf("%.0f records consumed for %d published: more than 5%% redelivered", consumed, msgs*per)
	}
}
