package main

import (
	"context"
	"errors"
	"io"
)

func runDiagnose(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("diagnose: not implemented yet")
}
