package index

import (
	"testing"

	"github.com/faultline/faultline/parsers"
)

// TestHitFromEventOwnsFields: a hit keeps its own copy of the event's
// fields, since an offline replay reuses the event's map for the next event.
func TestHitFromEventOwnsFields(t *testing.T) {
	ev := &parsers.Event{Message: "m", Fields: map[string]string{"cause": "oom", "rank": "3"}}
	h := HitFromEvent(ev)
	clear(ev.Fields)
	ev.Fields["cause"] = "next event's"
	if h.Fields["cause"] != "oom" || h.Fields["rank"] != "3" || len(h.Fields) != 2 {
		t.Fatalf("hit's fields changed with the event's map: %v", h.Fields)
	}
}
