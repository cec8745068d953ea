package shipper

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// stageBuckets resolve the latency of one stage of a live alert (a line
// appended to its finding, goal 100 ms) from a millisecond to seconds.
var stageBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .075, .1, .15, .25, .5, 1, 2.5, 5}

// stageMetrics time where a line's way to JetStream goes, observed per
// read or per batch, never per line:
//
//   - read: the file's modification time to the read that found the new
//     bytes (after being at its end: the poll or notify delay). The kernel
//     stamps files with its coarse clock (a tick, 4 ms at 250 Hz), so this
//     reads up to a tick high: with inotify the wake itself takes ~0.1 ms.
//   - join_wait: the read of a batch's first record's last line to the
//     record leaving the joiner (a record is held until the next line
//     starts another, or its writer was quiet FlushTimeout)
//   - batch_wait: a batch's first record to the batch being sent
//   - publish_ack: a batch handed to the publisher (in-flight window wait
//     included) to JetStream's acknowledgement
type stageMetrics struct {
	read, joinWait, batchWait, publishAck prometheus.Observer
}

func newStageMetrics(r *prometheus.Registry) stageMetrics {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "faultline_shipper", Name: "stage_seconds",
		Help:    "Time a line spends in each stage of the shipper, per read or batch (read, join_wait, batch_wait, publish_ack; read counts from the file's modification time, which the kernel's coarse clock puts up to a tick early).",
		Buckets: stageBuckets}, []string{"stage"})
	r.MustRegister(h)
	return stageMetrics{read: h.WithLabelValues("read"), joinWait: h.WithLabelValues("join_wait"),
		batchWait: h.WithLabelValues("batch_wait"), publishAck: h.WithLabelValues("publish_ack")}
}

// stageClock is a cursor's bookkeeping for stageMetrics.
type stageClock struct {
	grew, prevGrew time.Time // times of the last two reads that returned bytes
	readFrom       int64     // file offset of the first byte of the last read
	atEOF          bool      // the previous read returned nothing
	batchRead      time.Time // when the current batch's first record was read
	wake           <-chan struct{}
}

// afterRead notes a read of n bytes (before its lines are consumed).
func (c *cursor) afterRead(n int) {
	if n == 0 {
		c.atEOF = true
		return
	}
	if c.atEOF && c.fd != nil {
		if fi, err := c.fd.Stat(); err == nil {
			c.sh.metrics.stages.read.Observe(max(c.now.Sub(fi.ModTime()), 0).Seconds())
		}
	}
	c.atEOF = false
	c.prevGrew, c.grew = c.grew, c.now
	c.readFrom = c.base + int64(c.w-c.r-n)
}

// batchStarted observes the join wait of a batch's first record; now is
// when it left the joiner. A record that ends in the last read's bytes was
// read then, one before them (closed by a line of this read) at the read
// before.
func (c *cursor) batchStarted(end int64, now time.Time) {
	read := c.grew
	if end <= c.readFrom && !c.prevGrew.IsZero() {
		read = c.prevGrew
	}
	if read.IsZero() { // not read by follow (stdin's first read, a drain)
		read = now
	}
	c.batchRead = read
	c.sh.metrics.stages.joinWait.Observe(max(now.Sub(read), 0).Seconds())
}

// sleep waits d, or less when the file is written (inotify) or ctx ends.
func (c *cursor) sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	case <-c.wake:
	}
}

// untilIdleFlush is how long to sleep at the end of the file before the
// joiner's pending record is due (its last line was read at c.grew and
// FlushIdle takes it once it was quiet FlushTimeout), at most wait. Once
// due and still held (a traceback held open), it checks every half
// FlushTimeout as before.
func (c *cursor) untilIdleFlush(wait time.Duration) time.Duration {
	ft := c.sh.cfg.FlushTimeout
	if d := ft - time.Since(c.grew); d > 0 && !c.grew.IsZero() {
		return min(wait, d)
	}
	return min(wait, ft/2)
}
