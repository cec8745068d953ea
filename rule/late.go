package rule

import (
	"cmp"
	"maps"
	"slices"
	"time"

	"github.com/faultline/faultline/finding"
	"github.com/faultline/faultline/parsers"
)

// Launch boundaries by time, not arrival. Live, a node's records may arrive
// after another node's later ones (one shipper ships first, or starts late
// on a backlog). A record is placed in the launch its time belongs to; a
// launch marker that comes late (its time before records already seen)
// moves a boundary: the launches from the one it falls in are built again
// from their records, in time order, as diagnose (which merges the files
// by time) would have seen them. The records that taught the rules
// something (a fact, a launch marker, a ready line, a launch's first failure)
// are kept for that (at most maxKeptRecords per cluster, those of the launches
// kept): a marker later than the window they reach back to is placed
// without moving records already placed.
//
// The window is bounded: a record more than LateWindow older than the
// newest of its cluster is placed as it arrives, in the last launch (logs
// of an old run sent again are not merged into the launches running now).
const (
	maxKeptRecords = 4096
	LateWindow     = 2 * time.Hour
)

// keptRecord is a record kept for placing again, and its stream position.
type keptRecord struct {
	ev  parsers.Event
	pos uint64
}

// launchAt is the launch a record of time t belongs to: the last kept one
// begun by then; a time before them all belongs to the cluster's first
// launch (it begins with its records), else to a launch forgotten (nil). A
// record without a time, or older than the late window, belongs to the last
// launch.
func (cs *clusterState) launchAt(t time.Time) *launchState {
	if t.IsZero() || t.Before(cs.newest().Add(-LateWindow)) {
		return cs.launches[len(cs.launches)-1]
	}
	for i := len(cs.launches) - 1; i >= 0; i-- {
		if !t.Before(cs.launches[i].start) {
			return cs.launches[i]
		}
	}
	if first := cs.launches[0]; first.opener == firstLaunch {
		return first
	}
	return nil
}

// newest is the time of the latest record of the kept launches (what a
// replay from their checkpoint sees again, so it decides the same).
func (cs *clusterState) newest() time.Time {
	var t time.Time
	for _, ls := range cs.launches {
		if ls.log.last.After(t) {
			t = ls.log.last
		}
	}
	return t
}

// keep remembers a record that matched something.
func (cs *clusterState) keep(ev *parsers.Event, pos uint64) {
	c := *ev
	c.Fields = maps.Clone(ev.Fields) // the reader reuses the event's map
	if len(cs.kept) >= maxKeptRecords {
		// The oldest quarter makes room (one copy per 1,024 records).
		n := maxKeptRecords / 4
		for _, k := range cs.kept[:n] {
			if k.ev.Time.After(cs.trimmed) {
				cs.trimmed = k.ev.Time
			}
		}
		cs.kept = slices.Delete(cs.kept, 0, n)
	}
	cs.kept = append(cs.kept, keptRecord{ev: c, pos: pos})
}

// forgetKept drops the kept records before start (the first launch kept).
func (cs *clusterState) forgetKept(start time.Time) {
	cs.kept = slices.DeleteFunc(cs.kept, func(k keptRecord) bool { return !k.ev.Time.IsZero() && k.ev.Time.Before(start) })
}

// lateBoundary reports whether ev is a launch marker that opens or marks a
// launch and came after records later than it.
func (e *Engine) lateBoundary(cs *clusterState, ev *parsers.Event, text string, marks uint8) bool {
	newest := cs.newest()
	if ev.Time.IsZero() || !ev.Time.Before(newest) || ev.Time.Before(newest.Add(-LateWindow)) {
		return false
	}
	return marks&(1<<markRayHead) != 0 && e.idx.launch.confirmed(markRayHead, text) ||
		marks&(1<<markVLLM) != 0 && e.idx.launch.confirmed(markVLLM, text)
}

// rebuild places a late launch marker: the launches from the one its time
// falls in are built again from their kept records and it, in time order.
// It returns what changed against the findings before: versions that
// differ (numbered on from the old ones), findings new, and findings no
// longer raised, retracted.
func (e *Engine) rebuild(cs *clusterState, cluster string, ev *parsers.Event, pos uint64) []finding.Finding {
	from := cs.launchAt(ev.Time)
	if from == nil {
		return nil // of a launch forgotten
	}
	i := slices.Index(cs.launches, from)
	if !cs.trimmed.IsZero() && (i > 0 || from.opener != firstLaunch) && !cs.trimmed.Before(from.start) ||
		!cs.trimmed.IsZero() && i == 0 && from.opener == firstLaunch {
		// Records it would move are no longer kept: placed as it comes.
		text, hits, marks := e.scan(ev)
		return e.observe(cs, cluster, ev, pos, text, hits, marks, true)
	}
	old := map[string]*finding.Finding{}
	minPos := pos
	for _, ls := range cs.launches[i:] {
		maps.Copy(old, ls.findings)
		if ls.minPos != 0 && (minPos == 0 || ls.minPos < minPos) {
			minPos = ls.minPos
		}
	}
	var again []keptRecord
	rest := cs.kept[:0]
	for _, k := range cs.kept {
		if i == 0 || k.ev.Time.IsZero() || !k.ev.Time.Before(from.start) {
			again = append(again, k)
		} else {
			rest = append(rest, k)
		}
	}
	cs.kept = rest
	c := *ev
	c.Fields = maps.Clone(ev.Fields)
	again = append(again, keptRecord{ev: c, pos: pos})
	slices.SortStableFunc(again, func(a, b keptRecord) int {
		if c := a.ev.Time.Compare(b.ev.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.pos, b.pos)
	})
	cs.launches = cs.launches[:i]
	cs.seq = from.num - 1
	if i == 0 {
		// The first launch again, with its opener, number and start.
		cs.launches = append(cs.launches, &launchState{num: from.num, opener: from.opener, pos: from.pos, start: from.start,
			facts: map[string]*factState{}, findings: map[string]*finding.Finding{}, ruleOf: map[string]*Rule{}})
		cs.seq = from.num
	}
	for k := range again {
		r := &again[k]
		text, hits, marks := e.scan(&r.ev)
		e.observe(cs, cluster, &r.ev, r.pos, text, hits, marks, true)
	}
	if n := len(cs.launches); n > 0 {
		first := cs.launches[min(i, n-1)]
		if minPos != 0 && (first.minPos == 0 || minPos < first.minPos) {
			first.minPos = minPos // records not kept were placed from there on
		}
	}
	var changed []finding.Finding
	now := map[string]bool{}
	for _, ls := range cs.launches[min(i, len(cs.launches)):] {
		for _, id := range sortedIDs(ls.findings) {
			f := ls.findings[id]
			now[id] = true
			o := old[id]
			if o == nil {
				changed = append(changed, e.snapshot(f))
				continue
			}
			f.FirstSeen = o.FirstSeen
			same := fingerprint(f) == fingerprint(o)
			f.Updates = max(f.Updates, o.Updates)
			if !same {
				f.Updates++
				changed = append(changed, e.snapshot(f))
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(old)) {
		if o := old[id]; !now[id] && o.Status == finding.Active {
			o.Status = finding.Retracted
			o.Updates++
			changed = append(changed, e.snapshot(o))
		}
	}
	return changed
}
