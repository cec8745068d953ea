// Package faultline holds what the binaries embed from the repository root:
// the seed story that `analyzer serve --demo` replays, so that the demo runs
// from any directory and in the FROM scratch image.
package faultline

import (
	"embed"
	"io/fs"
)

//go:embed testdata/logs/seed/failed
var seed embed.FS

// SeedFailed is the failed launch of the seed story, one folder per node
// (spark-1, spark-2), as testdata/logs/seed/failed holds it.
func SeedFailed() fs.FS {
	sub, err := fs.Sub(seed, "testdata/logs/seed/failed")
	if err != nil {
		panic(err) // the pattern above is a constant: cannot happen
	}
	return sub
}
