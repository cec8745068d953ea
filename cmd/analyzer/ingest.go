package main

import (
	"context"
	"errors"
	"io"
)

func runIngest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("ingest: not implemented yet")
}
