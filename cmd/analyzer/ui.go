package main

import (
	"context"
	"errors"
	"io"
)

func runUI(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("ui: not implemented yet")
}
