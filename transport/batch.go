package transport

import (
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// BatchOf decodes message m of the stream: its records, stream sequence
// and timings. Both the durable Consumer and serve's per-partition ordered
// consumers read through it.
func BatchOf(m jetstream.Msg) Batch {
	b := Batch{Subject: m.Subject()}
	if md, err := m.Metadata(); err == nil {
		b.Seq, b.Stored, b.Pending = md.Sequence.Stream, md.Timestamp, md.NumPending
	}
	if v := m.Headers().Get(HeaderReadAt); v != "" {
		if ns, err := strconv.ParseInt(v, 10, 64); err == nil {
			b.ReadAt = time.Unix(0, ns)
		}
	}
	b.Shipper = m.Headers().Get(HeaderShipper)
	start := time.Now()
	b.Records, b.Err = Decode(m.Data())
	b.Decode = time.Since(start)
	return b
}
