package server

import (
	"context"
	"errors"

	"github.com/faultline/faultline/transport"
)

// consume hands every batch the consumer reads to handle until ctx ends.
// The consumer fetches by bytes and keeps each batch alive (in progress)
// until the acker settles it after an index flush, so a backlog slower to
// index than the ack wait is not redelivered (TestBacklogIsNotRedelivered).
func (s *server) consume(ctx context.Context, cons *transport.Consumer) error {
	for {
		b, ack, err := cons.Read(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				return nil // stopping: the rest is redelivered to the next run
			}
			return err
		}
		s.handle(s.single, b, ack)
	}
}
