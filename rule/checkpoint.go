package rule

import (
	"maps"
	"slices"
	"time"

	"github.com/faultline/faultline/finding"
)

// Checkpoint says, per cluster, where the earliest launch the engine still
// keeps began: the stream position and ID of the record that opened it and
// its number. A replay that starts there rebuilds the kept launches exactly
// (same numbers, facts and finding IDs) without reading what came before.
type Checkpoint map[string]LaunchMark

// LaunchMark is one cluster's entry of a Checkpoint.
type LaunchMark struct {
	// Pos is the position (given to ObserveAt) of the first record of the
	// kept launches to arrive: their opener's, unless a launch marker came
	// after records of its launch.
	Pos uint64 `json:"pos"`
	Num int    `json:"num"` // the launch's number
	// Opener is the ID of the opening record (firstLaunch for a cluster's
	// first launch), which the launch's finding IDs derive from: the
	// reopened launch keeps it even when the stream lost that record
	// (empty in checkpoints written before it existed: the replay's first
	// record of the cluster is taken).
	Opener string `json:"opener,omitempty"`
	// Start is the time the launch began (its opener's; zero for a
	// cluster's first launch, which begins with its first record): a
	// replayed record before it belongs to a launch forgotten.
	Start time.Time `json:"start,omitzero"`
}

// From is the position a replay starts at: the smallest of the clusters'
// (0, a full replay, for an empty checkpoint).
func (cp Checkpoint) From() uint64 {
	first, found := uint64(0), false
	for _, m := range cp {
		if !found || m.Pos < first {
			first, found = m.Pos, true
		}
	}
	return first
}

// Skip reports whether a replay from From must leave out the record of
// cluster at pos: it precedes the opening of its cluster's checkpoint launch
// (it belongs to a launch the engine had forgotten). Records of clusters the
// checkpoint does not know are all replayed.
func (cp Checkpoint) Skip(cluster string, pos uint64) bool {
	if cluster == "" {
		cluster = DefaultCluster
	}
	m, ok := cp[cluster]
	return ok && pos < m.Pos
}

// Equal reports whether two checkpoints are the same (to write one only
// when it changed).
func (cp Checkpoint) Equal(o Checkpoint) bool { return maps.Equal(cp, o) }

// Checkpoint returns, per cluster, the position and number of its earliest
// kept launch. Positions are those given to ObserveAt (0 if none was).
func (e *Engine) Checkpoint() Checkpoint {
	e.mu.Lock()
	defer e.mu.Unlock()
	cp := make(Checkpoint, len(e.clusters))
	for name, cs := range e.clusters {
		if len(cs.launches) == 0 {
			// Restored and no record of it replayed yet (or the stream
			// lost them): the next launch still gets that number.
			cp[name] = cs.restored
			continue
		}
		ls := cs.launches[0]
		m := LaunchMark{Pos: ls.minPos, Num: ls.num, Opener: ls.opener}
		for _, l := range cs.launches[1:] {
			if l.minPos != 0 && l.minPos < m.Pos {
				m.Pos = l.minPos
			}
		}
		if ls.opener != firstLaunch {
			m.Start = ls.start
		}
		cp[name] = m
	}
	return cp
}

// Restore prepares a new engine for a replay from cp (see Skip): each
// cluster's launch counter is set so that the first launch the replay opens
// gets the checkpoint's number and opener, as it did the first time.
//
// earlier are the findings known from before (the stored ones): those of a
// checkpoint cluster's launches older than its checkpoint launch are not
// re-derived by the replay, so they are taken as they are; a later launch
// that comes up healthy still resolves them. The others are left to the
// replay.
func (e *Engine) Restore(cp Checkpoint, earlier []finding.Finding) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for name, m := range cp {
		e.clusters[name] = &clusterState{seq: m.Num - 1, restored: m, name: name}
	}
	for _, f := range earlier {
		m, ok := cp[f.Cluster]
		if !ok || f.Launch >= m.Num {
			continue
		}
		c := f
		c.Nodes = append([]string(nil), f.Nodes...)
		c.Evidence = append([]finding.Evidence(nil), f.Evidence...)
		c.RuledOut = append([]finding.RuledOut(nil), f.RuledOut...)
		c.Alternatives = append([]finding.Alternative(nil), f.Alternatives...)
		cs := e.clusters[f.Cluster]
		if c.Status == finding.Active {
			cs.unresolved = append(cs.unresolved, &c)
		}
		if !e.forget {
			cs.retired = append(cs.retired, &c)
		}
	}
	for _, cs := range e.clusters {
		if n := len(cs.unresolved); n > maxUnresolved {
			cs.unresolved = slices.Delete(cs.unresolved, 0, n-maxUnresolved)
		}
	}
}
