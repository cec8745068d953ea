package cluster

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/natstest"
	"github.com/faultline/faultline/internal/testutil"
)

// TestLeasesSurviveAFrozenServer (issue 22 items 2 and 3): three members
// on three nats-server processes, each connected first to its own server;
// a server that leads neither bucket, with a member on it, is frozen
// (SIGSTOP). That member notices within two pings (ConnOptions) and renews
// through another server: partitions are never all dropped. How soon all
// run again is logged, not asserted: most runs keep every partition or get
// it back within a second, but some leave one unowned for 10-12 s or for
// the whole watch (a lease of the member on the frozen server lapses
// before it renews elsewhere, and its take-over churns between members):
// issue 22 item 2 is open there (docs/scaling.md). Before, with the
// client's default pings (two of 2 minutes), its partitions moved: 7.9 s.
// (A frozen leader of the leases bucket itself stalls every renewal for
// its election, 4-9 s: docs/scaling.md.)
func TestLeasesSurviveAFrozenServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three nats-server processes")
	}
	procs := natstest.StartProcs(t, natstest.BuildServer(t), 3)
	const parts, ttl = 6, DefaultTTL
	nc, err := nats.Connect(procs.URLs(0))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := Join(ctx, js, Options{Member: "setup", Partitions: parts, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	h := &holdings{t: t, holder: map[int]string{}}
	for i := range 3 {
		startMemberWith(t, procs.URLs(i), "m"+strconv.Itoa(i), parts, ttl, h, ConnOptions(ttl)...)
	}
	testutil.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error { _, err := h.owners(parts); return err })

	leader := func(bucket string) int {
		kv, err := js.KeyValue(ctx, bucket)
		if err != nil {
			t.Fatal(err)
		}
		st, err := kv.Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return procs.Index(st.(*jetstream.KeyValueBucketStatus).StreamInfo().Cluster.Leader)
	}
	// watch samples the partitions run until all are again for a while.
	watch := func(what string) {
		t.Helper()
		start := time.Now()
		least, n := parts, parts
		var back time.Duration // when all ran again after the last dip
		dipped := false
		for time.Since(start) < 2*ttl+5*time.Second {
			n = h.count()
			least = min(least, n)
			if n < parts {
				dipped = true
				back = -1
			} else if back < 0 {
				back = time.Since(start)
			}
			time.Sleep(20 * time.Millisecond)
		}
		switch {
		case !dipped:
			t.Logf("%s: all %d partitions ran throughout (lease TTL %v)", what, parts, ttl)
		case n < parts:
			t.Logf("%s: at least %d of %d partitions ran throughout; %d at the end of the watch (lease TTL %v)", what, least, parts, n, ttl)
		default:
			t.Logf("%s: at least %d of %d partitions ran throughout; all again %v after (lease TTL %v)", what, least, parts, back.Round(time.Millisecond), ttl)
		}
		if least == 0 {
			t.Errorf("%s: every partition dropped", what)
		}
	}

	// A server neither bucket is led by, with a member connected to it.
	other := -1
	for i := range 3 {
		if i != leader(LeasesBucket) && i != leader(MembersBucket) {
			other = i
		}
	}
	if other < 0 {
		t.Fatal("one server leads both buckets and another the leases: no server leads neither")
	}
	procs.Freeze(other)
	watch(fmt.Sprintf("SIGSTOP of %s, m%d's server", procs.Name(other), other))
	procs.Thaw(other)
}
