package transport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// NATSOptions say how to reach and authenticate to the server: shippers and
// the analyzer (for an external NATS) take the same flags.
type NATSOptions struct {
	URL      string
	User     string
	Password string
	Token    string
	Creds    string // .creds file (JWT + nkey seed)
	NKey     string // nkey seed file
	TLSCA    string
	TLSCert  string
	TLSKey   string
}

// Options turns o into nats.go options. Authentication errors (a missing
// creds file) are reported here, before any connection attempt.
func (o NATSOptions) Options() ([]nats.Option, error) {
	var opts []nats.Option
	if o.User != "" || o.Password != "" {
		opts = append(opts, nats.UserInfo(o.User, o.Password))
	}
	if o.Token != "" {
		opts = append(opts, nats.Token(o.Token))
	}
	if o.Creds != "" {
		// nats.go reads the file at each connection attempt and, the
		// server being unreachable or the file broken, retries forever.
		if err := checkCreds(o.Creds); err != nil {
			return nil, fmt.Errorf("creds %s: %w", o.Creds, err)
		}
		opts = append(opts, nats.UserCredentials(o.Creds))
	}
	if o.NKey != "" {
		opt, err := nats.NkeyOptionFromSeed(o.NKey)
		if err != nil {
			return nil, fmt.Errorf("nkey %s: %w", o.NKey, err)
		}
		opts = append(opts, opt)
	}
	if o.TLSCA != "" {
		opts = append(opts, nats.RootCAs(o.TLSCA))
	}
	if o.TLSCert != "" || o.TLSKey != "" {
		if o.TLSCert == "" || o.TLSKey == "" {
			return nil, errors.New("--tls-cert and --tls-key go together")
		}
		opts = append(opts, nats.ClientCert(o.TLSCert, o.TLSKey))
	}
	return opts, nil
}

// checkCreds makes sure file holds a user JWT and a user nkey seed.
func checkCreds(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	tok, err := jwt.ParseDecoratedJWT(b)
	if err != nil {
		return err
	}
	if _, err := jwt.DecodeUserClaims(tok); err != nil {
		return fmt.Errorf("no user JWT: %w", err)
	}
	if _, err := jwt.ParseDecoratedUserNKey(b); err != nil {
		return fmt.Errorf("no user nkey seed: %w", err)
	}
	return nil
}

// StreamOptions are the limits of the FAULTLINE_LOGS stream when a shipper or
// the analyzer has to create it. An existing stream is left as it is: the
// operator may have tuned it.
type StreamOptions struct {
	MaxAge     time.Duration
	MaxBytes   int64
	Duplicates time.Duration
	// Replicas, when set, is how many copies the partitioned stream keeps,
	// applied to an existing one too (--stream-replicas). Unset, the
	// analyzers' own count applies at creation only: members whose counts
	// differ for a moment must not scale the stream back and forth.
	Replicas int
}

// StreamConfig is the FAULTLINE_LOGS stream with these limits (zero fields
// take the defaults: 7 days, no byte limit, a 10-minute duplicate window).
// Shippers and the analyzer create the stream alike, whichever comes first.
func (so StreamOptions) StreamConfig(maxPayload int64) jetstream.StreamConfig {
	cfg := jetstream.StreamConfig{
		Name:        StreamName,
		Description: "Faultline log records (batches: see package transport)",
		Subjects:    []string{StreamSubjects},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      so.MaxAge,
		MaxBytes:    so.MaxBytes,
		Duplicates:  so.Duplicates,
		MaxMsgSize:  int32(maxPayload),
	}
	if cfg.MaxAge == 0 {
		cfg.MaxAge = 7 * 24 * time.Hour
	}
	if cfg.MaxBytes == 0 {
		cfg.MaxBytes = -1
	}
	if cfg.Duplicates == 0 {
		cfg.Duplicates = DefaultDuplicates
	}
	cfg.Duplicates = fitDuplicates(cfg.Duplicates, cfg.MaxAge)
	return cfg
}

// DefaultDuplicates is the stream's duplicate window unless its retention
// is shorter.
const DefaultDuplicates = 10 * time.Minute

// MinRetention is the shortest retention the stream takes: JetStream
// refuses a max age under 100 ms, and a stream that forgets records within
// a second cannot be searched or replayed.
const MinRetention = time.Second

// fitDuplicates is window, at most the retention maxAge: JetStream refuses
// a duplicate window longer than the stream keeps messages (a retention
// under 10 minutes never created the stream). A shipper's resend of a
// batch older than the retention is a record the stream forgot anyway.
func fitDuplicates(window, maxAge time.Duration) time.Duration {
	if maxAge > 0 && window > maxAge {
		return maxAge
	}
	return window
}

// Validate says what is wrong with limits no stream can have.
func (so StreamOptions) Validate() error {
	if so.MaxAge < 0 || (so.MaxAge > 0 && so.MaxAge < MinRetention) {
		return fmt.Errorf("retention age %v: want at least %v", so.MaxAge, MinRetention)
	}
	if so.Duplicates < 0 {
		return fmt.Errorf("duplicate window %v: want a positive duration", so.Duplicates)
	}
	if so.MaxBytes < 0 {
		return fmt.Errorf("retention bytes %d: want a positive size", so.MaxBytes)
	}
	return nil
}

// EnsureStream returns FAULTLINE_LOGS, creating it with so's limits when it
// does not exist (another process winning the race to create it is fine).
func EnsureStream(ctx context.Context, nc *nats.Conn, js jetstream.JetStream, so StreamOptions) (jetstream.Stream, bool, error) {
	st, err := js.Stream(ctx, StreamName)
	if err == nil {
		return st, false, nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, false, fmt.Errorf("stream %s: %w", StreamName, err)
	}
	st, err = js.CreateStream(ctx, so.StreamConfig(nc.MaxPayload()))
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		st, err = js.Stream(ctx, StreamName)
		if err != nil {
			return nil, false, fmt.Errorf("stream %s: %w", StreamName, err)
		}
		return st, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("create stream %s: %w", StreamName, err)
	}
	return st, true, nil
}
