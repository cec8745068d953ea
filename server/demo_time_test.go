package server

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/faultline/faultline/index"
	"github.com/faultline/faultline/internal/testutil"
)

// TestDemoTimelineIsTheStorys: the demo replays logs dated 2026-04-08 as if
// written now; every record it indexes keeps a time of the story. Blank
// ray/monitor.out lines that arrived after a pause were stamped with the
// replay's clock, so the timeline spanned eight months and the newest hits
// were blank rows.
func TestDemoTimelineIsTheStorys(t *testing.T) {
	srv := startServer(t, Config{Demo: seedDir, DemoPace: 3 * time.Second})
	lo := time.Date(2026, 4, 8, 22, 0, 0, 0, time.UTC)
	hi := time.Date(2026, 4, 9, 0, 0, 0, 0, time.UTC)
	base := "http://" + srv.addrs.HTTP
	testutil.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		if len(getFindings(t, srv.addrs.HTTP)) == 0 {
			return fmt.Errorf("no finding yet")
		}
		if !strings.Contains(srv.stdout.String(), "replay done") {
			return fmt.Errorf("replay not done")
		}
		return nil
	})
	for _, sort := range []string{"time", "-time"} {
		var res index.Result
		getJSON(t, base+"/api/search?size=5&sort="+sort, "", &res)
		for _, h := range res.Hits {
			if h.Time.Before(lo) || !h.Time.Before(hi) {
				t.Errorf("a record at %v (%q) outside the story's 2026-04-08 22:00-24:00", h.Time, h.Message)
			}
		}
	}
}
