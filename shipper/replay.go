package shipper

import (
	"strconv"
	"time"

	"github.com/faultline/faultline/parsers"
	"github.com/faultline/faultline/transport"
)

// replay rebuilds, on a resumed file, the batches an earlier run sent beyond
// the saved offset (see sentLogFile): re-read records are put back into
// their batch by offset and size, and each batch is published again under
// its own ID once it has every record it can still get.
type replay struct {
	batches []*replayBatch // in the order they were sent
	byOff   map[int64]replaySlot
	open    int // batches not published yet
}

type replaySlot struct {
	b *replayBatch
	i int // index in b.sent.records
}

type replayBatch struct {
	sent  *sentBatch
	m     *mark
	recs  []parsers.Record // by index in sent.records, for those read again
	got   []bool
	extra []parsers.Record // records with an offset below its end that are not its own (changed, or unknown to the log)
	// due: once the cursor's safe point reaches it, no record of the
	// batch can come any more.
	due  int64
	done bool
}

// startReplay sets up the replay of the logged batches of this file that
// hold records at or beyond the resume offset. Their marks go first into
// the tracker, so no later batch's acknowledgement saves an offset past
// them.
func (c *cursor) startReplay() {
	if c.key == "" {
		return
	}
	sent := c.sh.sent.take(c.fileID(), c.base)
	if len(sent) == 0 {
		return
	}
	rp := &replay{byOff: map[int64]replaySlot{}}
	for _, sb := range sent {
		rb := &replayBatch{sent: sb, recs: make([]parsers.Record, len(sb.records)), got: make([]bool, len(sb.records)),
			m: &mark{offset: sb.end.offset, line: sb.end.line, advance: sb.end.advance}}
		if !sb.end.advance {
			rb.m.offset, rb.m.line = c.lastSafe.offset, c.lastSafe.line
		} else {
			rb.due = sb.end.offset
		}
		for i, r := range sb.records {
			if r.off < c.base {
				continue // below the saved offset: stored, and not read again
			}
			rb.due = max(rb.due, r.off+1)
			if _, dup := rp.byOff[r.off]; !dup {
				rp.byOff[r.off] = replaySlot{rb, i}
			}
		}
		c.tracker.add(rb.m)
		rp.batches = append(rp.batches, rb)
	}
	rp.open = len(rp.batches)
	c.replay = rp
	c.log.Info("resuming: the batches sent beyond the saved offset before the restart are sent again under their IDs", "offset", c.base, "batches", len(sent))
	window := c.sh.sent.duplicateWindow()
	old := 0
	for _, sb := range sent {
		if time.Since(sb.sentAt) > window {
			old++
		}
	}
	if old > 0 {
		c.log.Warn("batches sent before the restart are older than the stream's duplicate window: those the server stored are stored twice",
			"batches", old, "duplicate_window", window)
	}
}

// place takes r into the batch it was sent in, or into the companion of the
// first batch whose saved offset lies beyond it; false: r is new, for the
// current batch.
func (rp *replay) place(r *parsers.Record) bool {
	if s, ok := rp.byOff[r.Offset]; ok && !s.b.done && !s.b.got[s.i] && s.b.sent.records[s.i].size == r.Size {
		s.b.recs[s.i] = *r
		s.b.got[s.i] = true
		return true
	}
	for _, b := range rp.batches {
		if !b.done && b.sent.end.advance && r.Offset < b.sent.end.offset {
			b.extra = append(b.extra, *r)
			return true
		}
	}
	return false
}

// replayDue publishes the batches that can get no more records: every
// record below the cursor's safe point has been emitted. With all, every
// batch left (the file ends, or it was cut under us).
func (c *cursor) replayDue(all bool) {
	rp := c.replay
	if rp == nil {
		return
	}
	safe := c.safeOffset()
	for _, b := range rp.batches {
		if b.done || (!all && safe < b.due) {
			continue
		}
		b.done = true
		rp.open--
		c.publishReplayed(b)
	}
	if rp.open == 0 {
		c.replay = nil
		c.log.Debug("replay done")
	}
}

// safeOffset is the offset below which every line was turned into a record
// already emitted (safePoint's offset, without its bookkeeping).
func (c *cursor) safeOffset() int64 {
	safe := c.base
	if c.long {
		safe = c.longOff
	}
	if o, ok := c.dec.PendingOffset(); ok && o < safe {
		safe = o
	}
	if o, ok := c.join.PendingOffset(); ok && o < safe {
		safe = o
	}
	return safe
}

// publishReplayed sends b again: its records read again under its own ID
// (the server drops it if it stored it before), and its companion, if any,
// under new ones; b's offset is saved once all are acknowledged.
func (c *cursor) publishReplayed(b *replayBatch) {
	var own []*parsers.Record
	for i := range b.recs {
		if b.got[i] {
			own = append(own, &b.recs[i])
		}
	}
	b.recs, b.got = nil, nil
	if b.m.advance {
		b.m.sum = c.sumAt(b.m.offset)
	}
	var msgs []*batch
	if len(own) > 0 {
		if msg := c.replayMessage(own, b.sent.msgID); msg != nil {
			msgs = append(msgs, msg)
			c.sh.metrics.resentBatches.Inc()
			c.sh.metrics.resentRecords.Add(float64(len(own)))
		} else {
			// Larger than a message now (it was not when sent): its
			// records go with the companion, under new IDs.
			extra := make([]parsers.Record, 0, len(own)+len(b.extra))
			for _, r := range own {
				extra = append(extra, *r)
			}
			b.extra = append(extra, b.extra...)
		}
	}
	if len(b.extra) > 0 {
		c.sh.metrics.rejoined.Add(float64(len(b.extra)))
		// In messages of their own (cut at the batch size), with IDs
		// unlike any the batch they complete could have had.
		enc := transport.Encoder{Limit: c.sh.pub.bodyCap}
		var chunk []*parsers.Record
		body := c.sh.pub.body(c.sh.pub.bodyCap)
		flush := func() {
			last := chunk[len(chunk)-1]
			id := transport.MsgID(chunk[0].ID, len(chunk)) + "-r" + strconv.FormatInt(last.Offset+last.Size, 36)
			c.sh.sent.add(&sentBatch{fileID: c.fileID(), msgID: id, sentAt: time.Now(), end: b.sent.end, records: extents(chunk)})
			msgs = append(msgs, &batch{subject: c.subject, body: body, count: len(chunk), msgID: id, readAt: time.Now()})
			chunk, body, enc = nil, c.sh.pub.body(c.sh.pub.bodyCap), transport.Encoder{Limit: c.sh.pub.bodyCap}
		}
		for i := range b.extra {
			r := &b.extra[i]
			start := len(body)
			body = enc.Append(body, r)
			if len(chunk) > 0 && len(body) > c.sh.softLimit {
				body = body[:start]
				flush()
				body = enc.Append(body, r)
			}
			chunk = append(chunk, r)
		}
		flush()
		b.extra = nil
	}
	c.log.Debug("batch of the last run sent again", "id", b.sent.msgID, "records", len(own), "of", len(b.sent.records), "changed", len(msgs)-min(len(own), 1))
	t := c.tracker
	if len(msgs) == 0 {
		t.ack(b.m)
		return
	}
	b.m.extra = len(msgs) - 1
	for _, msg := range msgs {
		m := b.m
		msg.onAck = func() { t.ack(m) }
		if err := c.sh.pub.Publish(c.ctx, msg); err != nil {
			return // shutting down: sent again on the next start
		}
	}
}

// replayMessage encodes recs into a batch with ID id; nil if they do not
// fit one message.
func (c *cursor) replayMessage(recs []*parsers.Record, id string) *batch {
	enc := transport.Encoder{Limit: c.sh.pub.bodyCap}
	body := c.sh.pub.body(c.sh.pub.bodyCap)
	for _, r := range recs {
		body = enc.Append(body, r)
	}
	if len(body) > c.sh.hardLimit && len(recs) > 1 {
		return nil
	}
	return &batch{subject: c.subject, body: body, count: len(recs), msgID: id, readAt: time.Now()}
}

func extents(recs []*parsers.Record) []recExtent {
	out := make([]recExtent, len(recs))
	for i, r := range recs {
		out[i] = recExtent{r.Offset, r.Size}
	}
	return out
}
