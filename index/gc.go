package index

import (
	"os"
	"runtime/debug"
)

// TuneGCForBulkLoad sets the garbage collector for filling an index in
// bulk (analyzer ingest), unless the user set GOGC, and says which
// setting is in effect. Segment building allocates heavily and briefly; a
// larger heap between collections buys ~10% indexing rate.
func TuneGCForBulkLoad() string {
	if v := os.Getenv("GOGC"); v != "" {
		return "GOGC=" + v + " (user)"
	}
	debug.SetGCPercent(400)
	return "GOGC 400 (index.TuneGCForBulkLoad)"
}
