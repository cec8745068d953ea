package main

import (
	"context"
	"errors"
	"io"
)

func runRules(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("rules: not implemented yet")
}
