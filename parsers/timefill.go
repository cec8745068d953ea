package parsers

import (
	"strings"
	"time"
)

// TimeFill gives every record of one file a time, live and offline alike.
// A record whose text has no timestamp (most NCCL INFO lines, print output,
// a traceback without a logger header) and whose framing has none (plain
// files) takes the time of the previous record of the same process, that
// is the same stream and the same process prefixes; before any such record,
// the time it was read. Without it, such records would be counted by facets
// but missing from time ranges and the timeline.
//
// Records must be given in the order of each process's output (the order a
// Joiner emits them in, or file order). A TimeFill is not safe for
// concurrent use; use one per file.
type TimeFill struct {
	last map[string]time.Time // stream "\x00" prefixes -> time of its last record with one
}

// Record fills r.Time when neither its framing nor its text gives it a time
// (the shipper calls it on each record before sending it; Parse then takes
// r.Time as the record's time). read is when the record was read. Records
// with a container time are left alone and cost nothing.
func (f *TimeFill) Record(r *Record, read time.Time) {
	if !r.Time.IsZero() {
		return
	}
	ev := Parse(*r)
	f.Event(&ev, read)
	r.Time = ev.Record.Time
}

// Event is Record for an event parsed already (offline reading): it sets
// ev.Time and ev.Record.Time when the record had no time of its own.
func (f *TimeFill) Event(ev *Event, read time.Time) {
	if !ev.Record.Time.IsZero() {
		return // a container time: every record of the file has one
	}
	k := processKey(&ev.Record)
	if !ev.Time.IsZero() {
		if f.last == nil {
			f.last = make(map[string]time.Time)
		}
		f.last[k] = ev.Time
		return
	}
	t, ok := f.last[k]
	if !ok {
		t = read
	}
	ev.Time, ev.Record.Time = t, t
}

// processKey names the writer of a record: its stream and the process
// prefixes of its first non-blank line ("(RayWorkerWrapper pid=7, ip=…)").
func processKey(r *Record) string {
	text := r.Text
	for text != "" {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		var buf [4]Prefix
		_, rest := splitPrefixesFast(buf[:0], line)
		if !isBlank(rest) || text == "" {
			return r.Stream + "\x00" + line[:len(line)-len(rest)]
		}
	}
	return r.Stream + "\x00"
}
