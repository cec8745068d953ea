package transport

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Partitioned layout (cluster mode): the stream takes what shippers publish
// on faultline.logs.<cluster>.<node> and stores it, through a subject
// transform, on faultline.part.<P>.<cluster>.<node>, P being NATS's own
// partition function of the cluster token. Every record of one cluster
// lands in one partition, so one analyzer sees all of a launch's facts.
const (
	PartsPrefix = "faultline.part."
	// PartitionedSubjects is what a partitioned stream takes: exactly the
	// two tokens of LogsSubject (the transform needs them both).
	PartitionedSubjects = "faultline.logs.*.*"
)

// PartitionTransform is the destination of the partitioned stream's
// subject transform for n partitions.
func PartitionTransform(n int) string {
	return PartsPrefix + "{{partition(" + strconv.Itoa(n) + ",1)}}.{{wildcard(1)}}.{{wildcard(2)}}"
}

// Partitions is the partition count of an existing partitioned stream
// (read back from its transform); false if cfg is not partitioned.
func Partitions(cfg jetstream.StreamConfig) (int, bool) {
	if cfg.SubjectTransform == nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(cfg.SubjectTransform.Destination, PartsPrefix+"{{partition(")
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ",")
	n, err := strconv.Atoi(num)
	if !ok || err != nil || n < 1 {
		return 0, false
	}
	return n, true
}

// PartitionFilter is the consumer filter of partition p.
func PartitionFilter(p int) string { return PartsPrefix + strconv.Itoa(p) + ".>" }

// PartitionOfSubject reads P from a stored subject faultline.part.<P>.<cluster>.<node>.
func PartitionOfSubject(subj string) (int, bool) {
	rest, ok := strings.CutPrefix(subj, PartsPrefix)
	if !ok {
		return 0, false
	}
	num, _, ok := strings.Cut(rest, ".")
	if !ok {
		return 0, false
	}
	p, err := strconv.Atoi(num)
	if err != nil || p < 0 || num != strconv.Itoa(p) {
		return 0, false
	}
	return p, true
}

// PartitionOf is the partition the stream's transform puts cluster's records
// in: nats-server's {{partition(n,1)}} hashes the subject token (FNV-1a, 32
// bits) modulo n (server/subject_transform.go, getHashPartition). Computing
// it here lets an analyzer know which partition holds a cluster without
// reading the stream.
func PartitionOf(cluster string, n int) int {
	if n <= 0 {
		return 0 // as the server does, rather than divide by zero
	}
	h := fnv.New32a()
	h.Write([]byte(Token(cluster)))
	return int(h.Sum32() % uint32(n))
}

// PartitionedStreamConfig is FAULTLINE_LOGS partitioned in n partitions with
// that many replicas (at least 1; so.Replicas wins) and so's limits (zero
// fields take StreamConfig's defaults).
func PartitionedStreamConfig(so StreamOptions, partitions, replicas int, maxPayload int64) jetstream.StreamConfig {
	cfg := so.StreamConfig(maxPayload)
	cfg.Subjects = []string{PartitionedSubjects}
	cfg.SubjectTransform = &jetstream.SubjectTransformConfig{Source: PartitionedSubjects, Destination: PartitionTransform(partitions)}
	cfg.Replicas = max(replicas, 1)
	if so.Replicas > 0 {
		cfg.Replicas = so.Replicas
	}
	return cfg
}

// EnsurePartitionedStream creates FAULTLINE_LOGS partitioned (with
// replicas copies, or so.Replicas), or updates an existing FAULTLINE_LOGS
// whose subjects or transform differ, or whose replicas or limits differ
// from those so sets explicitly (so's zero fields keep the existing
// stream's values: the operator may have tuned them). Each
// change is logged. Only the analyzer calls it; shippers on a cluster wait
// for the stream (Connect).
//
// Records stored before the stream was partitioned (a single-machine stream
// turned partitioned, or a change of the partition count) keep their old
// subjects: faultline.logs.<cluster>.<node>, or faultline.part.<P>.… under
// the old count. Partition consumers filter on the new
// faultline.part.<P>.> and do not read them; they age out with the
// stream's limits.
func EnsurePartitionedStream(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, so StreamOptions, partitions, replicas int, log *slog.Logger) (jetstream.Stream, error) {
	if partitions < 1 {
		return nil, fmt.Errorf("stream %s: %d partitions, want at least 1", StreamName, partitions)
	}
	want := PartitionedStreamConfig(so, partitions, replicas, nc.MaxPayload())
	return UntilAnswered(ctx, func() (jetstream.Stream, error) {
		return ensurePartitioned(ctx, js, want, so, logOrDiscard(log))
	})
}

// UntilAnswered calls f, each of whose JetStream requests is bounded by
// RequestTimeout, until it succeeds, fails otherwise than unanswered, or
// ctx ends, with a backoff between tries.
func UntilAnswered[T any](ctx context.Context, f func() (T, error)) (T, error) {
	b := Backoff{Min: 50 * time.Millisecond, Max: time.Second}
	for {
		v, err := f()
		if err == nil || !unanswered(err) || ctx.Err() != nil || !b.Wait(ctx) {
			return v, err
		}
	}
}

// RequestTimeout bounds one JetStream API request of UntilAnswered's callers.
// Analyzers starting together create and update the stream together, and a
// JetStream cluster may leave a request about a stream unanswered while
// another request changes it (seen with nats-server 2.15: of three
// concurrent updates, one timed out; info requests during its creation
// too). Such a request is asked again, and finds the stream as the other
// analyzer left it.
const RequestTimeout = 2 * time.Second

// unanswered: a JetStream API request got no answer in time, or the
// cluster has no leader yet to answer it.
func unanswered(err error) bool {
	var apiErr *jetstream.APIError
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrNoResponders) ||
		errors.As(err, &apiErr) && apiErr.ErrorCode == jsClusterNotAvailable
}

// jsClusterNotAvailable is JetStream's "system temporarily unavailable".
const jsClusterNotAvailable jetstream.ErrorCode = 10008

// ensurePartitioned is one attempt of EnsurePartitionedStream.
func ensurePartitioned(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig, so StreamOptions, log *slog.Logger) (jetstream.Stream, error) {
	rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	st, err := js.Stream(rctx, StreamName)
	cancel()
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		rctx, cancel := context.WithTimeout(ctx, RequestTimeout)
		st, err = js.CreateStream(rctx, want)
		cancel()
		if err == nil {
			log.Info("stream created", "stream", StreamName, "subjects", want.Subjects[0], "transform", want.SubjectTransform.Destination,
				"replicas", want.Replicas, "max_age", want.MaxAge, "max_bytes", want.MaxBytes)
			return st, nil
		}
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			// Another analyzer created it meanwhile: check it as any other.
			return ensurePartitioned(ctx, js, want, so, log)
		}
		return nil, fmt.Errorf("create stream %s: %w", StreamName, err)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", StreamName, err)
	}
	next, changes := partitionedUpdate(st.CachedInfo().Config, want, so)
	if len(changes) == 0 {
		return st, nil
	}
	rctx, cancel = context.WithTimeout(ctx, RequestTimeout)
	st, err = js.UpdateStream(rctx, next)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("update stream %s (%s): %w", StreamName, strings.Join(changes, ", "), err)
	}
	log.Info("stream updated", "stream", StreamName, "changes", strings.Join(changes, ", "))
	return st, nil
}

// partitionedUpdate is cur changed where it differs from want (subjects,
// transform, replicas, and the limits so sets), with what changed.
func partitionedUpdate(cur, want jetstream.StreamConfig, so StreamOptions) (jetstream.StreamConfig, []string) {
	next := cur
	var changes []string
	if !slices.Equal(cur.Subjects, want.Subjects) {
		changes = append(changes, fmt.Sprintf("subjects %v -> %v", cur.Subjects, want.Subjects))
		next.Subjects = want.Subjects
	}
	if cur.SubjectTransform == nil || *cur.SubjectTransform != *want.SubjectTransform {
		from := "none"
		if cur.SubjectTransform != nil {
			from = cur.SubjectTransform.Source + " > " + cur.SubjectTransform.Destination
		}
		changes = append(changes, fmt.Sprintf("transform %s -> %s > %s", from, want.SubjectTransform.Source, want.SubjectTransform.Destination))
		next.SubjectTransform = want.SubjectTransform
	}
	if so.Replicas > 0 && max(cur.Replicas, 1) != want.Replicas {
		changes = append(changes, fmt.Sprintf("replicas %d -> %d", max(cur.Replicas, 1), want.Replicas))
		next.Replicas = want.Replicas
	}
	next, limits := withLimits(next, so)
	return next, append(changes, limits...)
}

// withLimits is cfg with the limits so sets explicitly (non-zero fields),
// and what changed.
func withLimits(cfg jetstream.StreamConfig, so StreamOptions) (jetstream.StreamConfig, []string) {
	var changes []string
	if so.MaxAge != 0 && cfg.MaxAge != so.MaxAge {
		changes = append(changes, fmt.Sprintf("max_age %v -> %v", cfg.MaxAge, so.MaxAge))
		cfg.MaxAge = so.MaxAge
	}
	if so.MaxBytes != 0 && cfg.MaxBytes != so.MaxBytes {
		changes = append(changes, fmt.Sprintf("max_bytes %d -> %d", cfg.MaxBytes, so.MaxBytes))
		cfg.MaxBytes = so.MaxBytes
	}
	if so.Duplicates != 0 && cfg.Duplicates != so.Duplicates {
		changes = append(changes, fmt.Sprintf("duplicates %v -> %v", cfg.Duplicates, so.Duplicates))
		cfg.Duplicates = so.Duplicates
	}
	if d := fitDuplicates(cfg.Duplicates, cfg.MaxAge); d != cfg.Duplicates {
		changes = append(changes, fmt.Sprintf("duplicates %v -> %v (the retention)", cfg.Duplicates, d))
		cfg.Duplicates = d
	}
	return cfg, changes
}

// ApplyLimits sets on the existing FAULTLINE_LOGS the limits so sets
// explicitly (--retention-age, --retention-bytes given to the analyzer);
// so's zero fields leave the stream as it is, so without such flags
// nothing changes. Changes are logged.
func ApplyLimits(ctx context.Context, js jetstream.JetStream, so StreamOptions, log *slog.Logger) error {
	if so == (StreamOptions{}) {
		return nil
	}
	st, err := js.Stream(ctx, StreamName)
	if err != nil {
		return fmt.Errorf("stream %s: %w", StreamName, err)
	}
	next, changes := withLimits(st.CachedInfo().Config, so)
	if len(changes) == 0 {
		return nil
	}
	if _, err := js.UpdateStream(ctx, next); err != nil {
		return fmt.Errorf("update stream %s (%s): %w", StreamName, strings.Join(changes, ", "), err)
	}
	logOrDiscard(log).Info("stream limits updated", "stream", StreamName, "changes", strings.Join(changes, ", "))
	return nil
}

func logOrDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}
