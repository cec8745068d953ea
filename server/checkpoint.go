package server

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/faultline/faultline/internal/atomicfile"
	"github.com/faultline/faultline/lane"
	"github.com/faultline/faultline/rule"
	"github.com/faultline/faultline/transport"
)

// Warm restart. The engine keeps a few launches per cluster in memory; after
// a restart they are rebuilt by replaying the stream into it. Replaying the
// whole stream takes minutes at millions of records, so serve writes the
// engine's checkpoint (per cluster: where its earliest kept launch began,
// and its number) at each ack flush, and the warm-up starts there: the
// replay rebuilds the same launches, numbers and finding IDs (see
// rule.Checkpoint), so nothing already announced is announced again.

// Engine positions of records read from the stream (lane.StreamPos).
const recordBits = lane.RecordBits

func streamPos(seq uint64, record int) uint64 { return lane.StreamPos(seq, record) }

func posSeq(pos uint64) uint64 { return lane.PosSeq(pos) }

const checkpointName = "checkpoint.json"

// checkpointFile is checkpoint.json in the data dir.
type checkpointFile struct {
	// Stream is when the stream was created: a checkpoint of another
	// stream (deleted and created again) is worthless.
	Stream time.Time `json:"stream_created"`
	// RecordBits is recordBits when written (how positions are made).
	RecordBits int             `json:"record_bits"`
	Clusters   rule.Checkpoint `json:"clusters"`
}

// checkpointer writes the engine's checkpoint when it changed (from the
// acker only, after the index flush) and holds where the warm-up started.
type checkpointer struct {
	path   string
	stream time.Time
	last   rule.Checkpoint
	from   atomic.Uint64 // stream sequence the warm-up replay started at
}

// saveCheckpoints is the committer's: after an index flush, the engines'
// checkpoints (and on a cluster the index's progress per partition).
func (s *server) saveCheckpoints(ctx context.Context) {
	if s.node.Load() != nil {
		s.saveLanes(ctx)
		return
	}
	s.saveCheckpoint()
}

// warmSeq is how far the warm-up replay got.
func (s *server) warmSeq() uint64 {
	if s.single == nil {
		return 0
	}
	return s.single.Last()
}

// save writes cp unless it is the one written last. A failure is logged
// and retried at the next flush: a stale checkpoint only makes the next
// warm-up replay more.
func (s *server) saveCheckpoint() {
	c := &s.ckpt
	if s.single == nil {
		return
	}
	cp := s.single.Checkpoint()
	if c.path == "" || (c.last != nil && cp.Equal(c.last)) {
		return
	}
	b, err := json.Marshal(checkpointFile{Stream: c.stream, RecordBits: recordBits, Clusters: cp})
	if err == nil {
		err = atomicfile.WriteFile(c.path, b, 0o644)
	}
	if err != nil {
		s.log.Warn("write checkpoint; the next start replays more of the stream", "err", err)
		return
	}
	c.last = cp
}

// loadCheckpoint reads the checkpoint of the stream created at created;
// nil (a full replay) if there is none or it does not fit.
func (s *server) loadCheckpoint(created time.Time) rule.Checkpoint {
	b, err := os.ReadFile(s.ckpt.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		s.log.Warn("checkpoint unreadable; replaying the whole stream", "path", s.ckpt.path, "err", err)
		return nil
	}
	return s.parseCheckpoint(b, created, s.ckpt.path)
}

// parseCheckpoint reads a checkpoint (of the file, or of a partition in
// KV) of the stream created at created; nil, and a warning naming where it
// came from, if it cannot be used.
func (s *server) parseCheckpoint(b []byte, created time.Time, where string) rule.Checkpoint {
	var f checkpointFile
	err := json.Unmarshal(b, &f)
	switch {
	case err != nil:
		s.log.Warn("checkpoint unreadable; replaying the whole stream", "path", where, "err", err)
		return nil
	case f.RecordBits != recordBits || !f.Stream.Equal(created):
		s.log.Warn("checkpoint of another stream; replaying the whole stream", "path", where,
			"checkpoint_stream", f.Stream, "stream", created)
		return nil
	}
	for name, m := range f.Clusters {
		if posSeq(m.Pos) == 0 {
			// A launch opened by a record of unknown position: where to
			// start is not known, and a full replay must number from 1.
			s.log.Warn("checkpoint without a position for a cluster; replaying the whole stream", "path", where, "cluster", name)
			return nil
		}
	}
	return f.Clusters
}

// startWarmUp prepares the warm-up replay of a stream: engine restored
// from the checkpoint (and the stored findings of older launches), the
// checkpoint to skip records by, and the ordered consumer's config, which
// starts at the checkpoint's earliest position (the whole stream without
// one).
func (s *server) startWarmUp(info *jetstream.StreamInfo, engine *rule.Engine) (rule.Checkpoint, jetstream.OrderedConsumerConfig) {
	subjects := []string{transport.StreamSubjects}
	s.ckpt.path = filepath.Join(s.cfg.DataDir, checkpointName)
	s.ckpt.stream = info.Created
	occ := jetstream.OrderedConsumerConfig{FilterSubjects: subjects}
	first := info.State.FirstSeq
	cp := s.loadCheckpoint(info.Created)
	from := posSeq(cp.From())
	if len(cp) > 0 && from > info.State.LastSeq {
		s.log.Warn("checkpoint beyond the stream's end; replaying the whole stream", "from_seq", from, "last_seq", info.State.LastSeq)
		cp, from = nil, 0
	}
	if len(cp) > 0 && from < first {
		// Records of kept launches are gone (the stream's limits): the
		// launches are rebuilt from what is left, as a full replay would.
		s.log.Warn("the stream no longer holds the checkpoint's first records", "from_seq", from, "first_seq", first)
	}
	if len(cp) > 0 {
		engine.Restore(cp, s.idx.Findings())
		s.ckpt.last = cp
	}
	from = max(from, first)
	if from > first {
		occ.DeliverPolicy, occ.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	s.ckpt.from.Store(from)
	s.log.Info("warm-up", "from_seq", from, "first_seq", first, "last_seq", info.State.LastSeq, "checkpoint_clusters", len(cp))
	return cp, occ
}
